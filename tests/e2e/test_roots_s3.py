"""Reads stay inside the table's read scope on a real S3 protocol server (moto, IAM enforced).

A table in one bucket whose log names a data file in another bucket: without a read root for
it, the other bucket is not read, although credentials for it are configured; with one (a
shallow clone: `--read-root` here, a project's read roots on the server), the file is read
with the table's own credentials, never with those configured for the other bucket. A file
under the table is read with the table's credentials too, whatever root its folder matches.
"""

from __future__ import annotations

import json
import shutil

import pytest

from audit.core.storage.roots import REFUSED
from tests.e2e.objstore import MotoS3, audit_cli, upload_table, write_storage_config
from tests.support.outside_table import SECRET, build_outside, point_add_at, write_secret_rows

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.fixture(scope="module")
def buckets(s3_server: MotoS3, tmp_path_factory):
    s3_server.enforce_auth()
    lake, other = s3_server.create_bucket(), s3_server.create_bucket()
    local = tmp_path_factory.mktemp("roots")
    surviving = build_outside(local / "t", local / "unused", "same")
    (local / "src").mkdir()
    write_secret_rows(surviving, local / "src" / "secret.parquet")
    point_add_at(local / "t", f"s3://{other}/src/secret.parquet")
    upload_table(local / "t", f"s3://{lake}/t", s3_server.options())
    upload_table(local / "src", f"s3://{other}/src", s3_server.options())
    # A second table whose surviving file lies in a sub-folder with a storage root of its own.
    shutil.copytree(local / "t", local / "t2")
    (local / "t2" / "sub").mkdir()
    shutil.copy(local / "src" / "secret.parquet", local / "t2" / "sub" / "secret.parquet")
    point_add_at(local / "t2", "sub/secret.parquet")
    upload_table(local / "t2", f"s3://{lake}/t2", s3_server.options())
    keys = {
        "LAKE": s3_server.read_only_user(lake),
        "OTHER": s3_server.read_only_user(other),
        "BOTH": s3_server.make_user(),
    }
    env = {f"{n}_KEY": k.access_key_id for n, k in keys.items()}
    env |= {f"{n}_SECRET": k.secret_access_key for n, k in keys.items()}

    def config(lake_keys: str, other_keys: str) -> str:
        """A storage config: each bucket read with the keys named."""
        roots = {
            f"s3://{bucket}/": {
                **s3_server.options(),
                "aws_access_key_id": f"env:{name}_KEY",
                "aws_secret_access_key": f"env:{name}_SECRET",
            }
            for name, bucket in ((lake_keys, lake), (other_keys, other))
        }
        return write_storage_config(local / f"storage-{lake_keys}-{other_keys}.toml", roots)

    def sub_config() -> str:
        """The lake read with its reader's keys, t2/sub/ with keys refused in that bucket."""
        roots = {
            prefix: {
                **s3_server.options(),
                "aws_access_key_id": f"env:{name}_KEY",
                "aws_secret_access_key": f"env:{name}_SECRET",
            }
            for prefix, name in ((f"s3://{lake}/", "LAKE"), (f"s3://{lake}/t2/sub/", "OTHER"))
        }
        return write_storage_config(local / "storage-sub.toml", roots)

    return {"lake": lake, "other": other, "env": env, "config": config, "sub": sub_config}


def _finding(buckets, read_roots: list[str], keys: tuple[str, str]) -> tuple[dict, str]:
    env = {**buckets["env"], "AUDIT_STORAGE_CONFIG": buckets["config"](*keys)}
    extra = [arg for root in read_roots for arg in ("--read-root", root)]
    done = audit_cli(f"s3://{buckets['lake']}/t", env, *extra)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [finding] = [f for f in report["findings"] if f["kind"] == "never_existed_snapshot"]
    return finding, done.stdout


def test_it_does_not_read_another_bucket_without_a_read_root(buckets):
    finding, stdout = _finding(buckets, [], ("LAKE", "OTHER"))

    assert finding["confirmed"] is False
    assert SECRET not in stdout
    assert [r["reason"] for r in finding["witness"]["not_read"]] == [REFUSED]


def test_it_reads_a_shallow_clone_in_a_read_root_with_the_tables_credentials(buckets):
    # The table's keys read both buckets; the other bucket's root is configured with keys
    # the server refuses there: read with the table's, the clone confirms.
    finding, stdout = _finding(buckets, [f"s3://{buckets['other']}"], ("BOTH", "LAKE"))

    assert finding["confirmed"] is True and finding["witness"]["row_count"] == 3
    assert SECRET in stdout


def test_it_never_reads_a_file_with_the_credentials_of_another_prefix(buckets):
    # The table's keys are refused in the other bucket, whose own root has keys that read it:
    # a log cannot borrow them, so the file is unreadable.
    finding, stdout = _finding(buckets, [f"s3://{buckets['other']}"], ("LAKE", "OTHER"))

    assert finding["confirmed"] is False and SECRET not in stdout
    assert "access denied" in finding["explanation"]


def test_it_reads_a_file_under_the_table_with_the_tables_credentials(buckets):
    # t2's file lies under the table, in a folder whose storage root has keys of its own
    # (refused in this bucket): it is read with the table's keys, as the log itself is.
    env = {**buckets["env"], "AUDIT_STORAGE_CONFIG": buckets["sub"]()}
    done = audit_cli(f"s3://{buckets['lake']}/t2", env)
    assert done.returncode == 0, done.stderr
    [finding] = [
        f for f in json.loads(done.stdout)["findings"] if f["kind"] == "never_existed_snapshot"
    ]

    assert finding["confirmed"] is True and SECRET in done.stdout
