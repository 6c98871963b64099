"""Tables on a real S3 protocol server (moto, IAM enforced), read with per-root credentials.

- `audit --json --files` of a table in the bucket equals the audit of the local copy it was
  uploaded from (commits, findings with their data-file witnesses, live files);
- a wrong secret, a dead endpoint and a deleted table are each a one-line error naming the
  cause, exit status 2, and never the secret.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.objstore import MotoS3, S3Keys, audit_cli, upload_table, write_storage_config
from tests.support import scenarios
from tests.support.cli import located_nowhere
from tests.support.paths import DELTA_TABLES

pytestmark = [pytest.mark.services, pytest.mark.slow]

DATA = DELTA_TABLES
SECRET_ENV = {"FIN_KEY": "", "FIN_SECRET": ""}  # filled per test


@pytest.fixture(scope="module")
def lake(s3_server: MotoS3, tmp_path_factory):
    """A bucket with tables under finance/ (read-only key) and a bucket-wide admin root."""
    s3_server.enforce_auth()
    bucket = s3_server.create_bucket()
    local = tmp_path_factory.mktemp("local")
    tables = {}
    scenarios.build_ws_reorder_matching(str(local / "reorder"))
    scenarios.build_stale_full_overwrite(str(local / "overwrite"))
    shutil.copytree(DATA / "golden" / "checkpoint", local / "checkpoint")
    for name in ("reorder", "overwrite", "checkpoint"):
        uri = f"s3://{bucket}/finance/{name}"
        upload_table(local / name, uri, s3_server.options())
        tables[name] = (local / name, uri)
    reader = s3_server.read_only_user(bucket, "finance/")
    options = {
        **s3_server.options(),
        "aws_access_key_id": "env:FIN_KEY",
        "aws_secret_access_key": "env:FIN_SECRET",
    }
    config = write_storage_config(local / "storage.toml", {f"s3://{bucket}/finance/": options})
    env = {
        "AUDIT_STORAGE_CONFIG": config,
        "FIN_KEY": reader.access_key_id,
        "FIN_SECRET": reader.secret_access_key,
    }
    return {"bucket": bucket, "tables": tables, "env": env, "reader": reader, "local": local}


@pytest.mark.parametrize("name", ["reorder", "overwrite", "checkpoint"])
def test_audit_of_a_table_in_the_bucket_equals_the_audit_of_its_local_copy(lake, name):
    local, uri = lake["tables"][name]
    remote = audit_cli(uri, lake["env"])
    assert remote.returncode == 0, remote.stderr
    here = audit_cli(str(local), {})
    assert here.returncode == 0, here.stderr
    remote_report, local_report = json.loads(remote.stdout), json.loads(here.stdout)
    assert remote_report["table"]["uri"] == uri
    assert located_nowhere(remote_report) == located_nowhere(local_report)
    assert remote_report["commits"] and remote_report["live_files"]
    if name != "checkpoint":
        assert remote_report["findings"], "the scenario's anomaly is found on S3 too"
    if name == "overwrite":
        # The witness read the data files from the bucket, with the root's credentials.
        [witnessed] = [
            f for f in remote_report["findings"] if f["kind"] == "never_existed_snapshot"
        ]
        assert witnessed["confirmed"] and witnessed["witness"]["row_count"] == 2


def test_a_wrong_secret_is_access_denied_naming_root_and_credential_not_the_secret(lake):
    _, uri = lake["tables"]["reorder"]
    wrong = "wrong-secret-0123456789"
    result = audit_cli(uri, {**lake["env"], "FIN_SECRET": wrong})
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "access denied" in line, line
    assert f"root s3://{lake['bucket']}/finance/, credential env:FIN_KEY" in line
    assert wrong not in result.stderr + result.stdout
    assert lake["reader"].secret_access_key not in result.stderr
    assert len(line.splitlines()) == 1


def test_a_key_without_permission_on_the_prefix_is_access_denied(s3_server, lake, tmp_path):
    _, uri = lake["tables"]["reorder"]
    other = s3_server.read_only_user(lake["bucket"], "marketing/")
    env = {**lake["env"], "FIN_KEY": other.access_key_id, "FIN_SECRET": other.secret_access_key}
    result = audit_cli(uri, env)
    assert result.returncode == 2
    assert "access denied" in result.stderr, result.stderr


def test_an_unreachable_endpoint_says_so(lake, tmp_path, s3_server):
    _, uri = lake["tables"]["reorder"]
    options = {
        **s3_server.options(),
        "aws_endpoint_url": "http://127.0.0.1:9",  # discard port: nothing listens
        "aws_access_key_id": "env:FIN_KEY",
        "aws_secret_access_key": "env:FIN_SECRET",
    }
    config = write_storage_config(
        tmp_path / "dead.toml", {f"s3://{lake['bucket']}/finance/": options}
    )
    result = audit_cli(uri, {**lake["env"], "AUDIT_STORAGE_CONFIG": config})
    assert result.returncode == 2
    assert "storage endpoint unreachable" in result.stderr, result.stderr


def test_a_plain_http_endpoint_without_allow_http_says_what_to_set(lake, s3_server):
    _, uri = lake["tables"]["reorder"]
    env = {k: v for k, v in s3_server.env().items() if k != "AWS_ALLOW_HTTP"}
    result = audit_cli(uri, env)
    assert result.returncode == 2
    assert "plain http" in result.stderr and "AWS_ALLOW_HTTP=true" in result.stderr, result.stderr
    assert "unreachable" not in result.stderr


def test_a_table_deleted_from_the_bucket_is_not_found(s3_server, lake):
    uri = f"s3://{lake['bucket']}/finance/doomed"
    upload_table(lake["tables"]["reorder"][0], uri, s3_server.options())
    assert audit_cli(uri, lake["env"]).returncode == 0
    s3_server.delete_prefix(lake["bucket"], "finance/doomed/")
    result = audit_cli(uri, lake["env"])
    assert result.returncode == 2
    assert "does not exist" in result.stderr, result.stderr


def test_the_standard_aws_environment_still_works(s3_server, lake):
    _, uri = lake["tables"]["checkpoint"]
    result = audit_cli(uri, s3_server.env(lake["reader"]))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["table"]["version"] >= 1


def test_a_key_that_does_not_exist_is_access_denied(lake):
    _, uri = lake["tables"]["checkpoint"]
    fake = S3Keys("AKIANOSUCHKEY0000000", "x" * 40)
    env = {**lake["env"], "FIN_KEY": fake.access_key_id, "FIN_SECRET": fake.secret_access_key}
    result = audit_cli(uri, env)
    assert result.returncode == 2 and "access denied" in result.stderr, result.stderr
