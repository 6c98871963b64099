"""Reads stay inside the allowed roots on a real S3 protocol server (moto, IAM enforced).

A table in one bucket whose log names a data file in another bucket: with only the table's
bucket allowed, the other bucket is not read, although credentials for it are configured;
with both allowed (a shallow clone), the file is read with its own bucket's credentials, never
with the table's (which the server refuses for that bucket).
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


def _finding(buckets, allowed: list[str], keys: tuple[str, str]) -> tuple[dict, str]:
    env = {
        **buckets["env"],
        "AUDIT_STORAGE_CONFIG": buckets["config"](*keys),
        "AUDIT_ALLOWED_ROOTS": ",".join(allowed),
    }
    done = audit_cli(f"s3://{buckets['lake']}/t", env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [finding] = [f for f in report["findings"] if f["kind"] == "never_existed_snapshot"]
    return finding, done.stdout


def test_it_does_not_read_another_bucket_outside_the_roots(buckets):
    finding, stdout = _finding(buckets, [f"s3://{buckets['lake']}"], ("LAKE", "OTHER"))

    assert finding["confirmed"] is False
    assert SECRET not in stdout
    assert [r["reason"] for r in finding["witness"]["not_read"]] == [REFUSED]


def test_it_reads_a_shallow_clone_in_an_allowed_bucket_with_that_buckets_credentials(buckets):
    allowed = [f"s3://{buckets['lake']}", f"s3://{buckets['other']}"]

    finding, stdout = _finding(buckets, allowed, ("LAKE", "OTHER"))

    assert finding["confirmed"] is True and finding["witness"]["row_count"] == 3
    assert SECRET in stdout


def test_it_never_reads_a_file_with_the_tables_credentials(buckets):
    # The table's keys could read both buckets; the other bucket's root is configured with
    # keys the server refuses there. Read with its own root's keys, the file is unreadable.
    allowed = [f"s3://{buckets['lake']}", f"s3://{buckets['other']}"]

    finding, stdout = _finding(buckets, allowed, ("BOTH", "LAKE"))

    assert finding["confirmed"] is False and SECRET not in stdout
    assert "access denied" in finding["explanation"]


def test_it_reads_a_file_under_the_table_with_its_own_folders_root(buckets):
    # t2's file lies under the table, in a folder whose storage root has keys of its own
    # (refused in this bucket): it must be read with those, not with the table's store.
    env = {
        **buckets["env"],
        "AUDIT_STORAGE_CONFIG": buckets["sub"](),
        "AUDIT_ALLOWED_ROOTS": f"s3://{buckets['lake']}",
    }
    done = audit_cli(f"s3://{buckets['lake']}/t2", env)
    assert done.returncode == 0, done.stderr
    [finding] = [
        f for f in json.loads(done.stdout)["findings"] if f["kind"] == "never_existed_snapshot"
    ]

    assert finding["confirmed"] is False and SECRET not in done.stdout
    assert "access denied" in finding["explanation"]
