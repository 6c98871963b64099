"""Two projects' tables under two credentialed prefixes of one bucket (moto, IAM enforced).

Alpha's tables live under `alpha/` (read with alpha's keys), beta's under `beta/` (beta's
keys); both prefixes are allowed roots. Alpha's logs name beta's data files. Tailed into
their projects in-process (the worker's code path), alpha's findings show none of beta's rows
or keys: the files are outside alpha's read scope, and beta's credentials are never lent to
a read alpha's log steers, even under a root granted to alpha.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from audit.core.storage.roots import REFUSED
from audit.models import Finding
from tests.e2e.objstore import MotoS3, upload_table, write_storage_config
from tests.support.outside_table import SECRET, build_outside, point_add_at
from tests.support.project_tables import (
    build_alpha_keys,
    build_alpha_witness,
    build_beta,
    dumped,
    leaked,
    tail_into,
)

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(scope="module")
def bucket(s3_server: MotoS3, tmp_path_factory):
    """The bucket, its two prefixes' keys, beta's table and the local copies to upload."""
    s3_server.enforce_auth()
    name = s3_server.create_bucket()
    local = tmp_path_factory.mktemp("projects")
    beta_files = build_beta(local / "b")
    upload_table(local / "b", f"s3://{name}/beta/b", s3_server.options())
    keys = {
        "ALPHA": s3_server.read_only_user(name, "alpha/"),
        "BETA": s3_server.read_only_user(name, "beta/"),
    }
    env = {f"{n}_KEY": k.access_key_id for n, k in keys.items()}
    env |= {f"{n}_SECRET": k.secret_access_key for n, k in keys.items()}
    roots = {
        f"s3://{name}/{prefix}/": {
            **s3_server.options(),
            "aws_access_key_id": f"env:{who}_KEY",
            "aws_secret_access_key": f"env:{who}_SECRET",
        }
        for prefix, who in (("alpha", "ALPHA"), ("beta", "BETA"))
    }
    env["AUDIT_STORAGE_CONFIG"] = write_storage_config(local / "storage.toml", roots)
    beta_uris = [f"s3://{name}/beta/b/{f.name}" for f in beta_files]
    return {"name": name, "local": local, "env": env, "beta_uris": beta_uris}


@pytest.fixture
def lake(bucket, s3_server, settings, monkeypatch):
    for key, value in bucket["env"].items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket['name']}/alpha", f"s3://{bucket['name']}/beta"]
    settings.AUDIT_CHECK_DATA = True
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    tail_into(f"s3://{bucket['name']}/beta/b", "beta")

    def alpha(local_name: str, build, *args, **fields):
        path = bucket["local"] / local_name
        build(path, *args)
        uri = f"s3://{bucket['name']}/alpha/{local_name}"
        upload_table(path, uri, s3_server.options())
        return tail_into(uri, "alpha", **fields)

    return alpha


def test_it_keeps_another_projects_rows_out_of_a_witness_on_s3(bucket, lake):
    table = lake("w1", build_alpha_witness, bucket["beta_uris"][0])

    finding = Finding.objects.get(table=table, kind="never_existed_snapshot")

    assert finding.confirmed is False and not leaked(dumped(finding.witness))
    assert [r["reason"] for r in finding.witness["not_read"]] == [REFUSED]


def test_it_keeps_another_projects_table_out_of_a_root_granted_around_it_on_s3(bucket, lake):
    call_command("project_roots", "alpha", "--add", f"s3://{bucket['name']}/beta")
    table = lake("w2", build_alpha_witness, bucket["beta_uris"][0])

    finding = Finding.objects.get(table=table, kind="never_existed_snapshot")

    assert finding.confirmed is False and not leaked(dumped(finding.witness))
    assert [r["reason"] for r in finding.witness["not_read"]] == [REFUSED]


def test_it_reads_no_key_column_of_another_projects_table_on_s3(bucket, lake):
    table = lake("k1", build_alpha_keys, bucket["beta_uris"], key_columns=["ssn"])

    [finding] = Finding.objects.filter(table=table, kind="duplicate_key")

    assert [s["key"] for s in finding.witness["sample_keys"]] == [{"ssn": "A-1"}]
    assert not leaked(dumped(finding.witness)) and REFUSED in finding.witness["note"]


def test_it_reads_a_granted_root_with_the_tables_credentials_only(bucket, lake, s3_server):
    # A clone source under beta's prefix (no table there), granted to alpha: read with
    # alpha's keys, which the server refuses under beta/; beta's keys are never lent.
    clone = bucket["local"] / "clone-src"
    path = bucket["local"] / "w3"
    build_outside(path, clone, "absolute")
    upload_table(clone, f"s3://{bucket['name']}/beta/clones", s3_server.options())
    point_add_at(path, f"s3://{bucket['name']}/beta/clones/secret.parquet")
    call_command("project_roots", "alpha", "--add", f"s3://{bucket['name']}/beta/clones")
    table = lake("w3", lambda *_: None)

    finding = Finding.objects.get(table=table, kind="never_existed_snapshot")

    assert finding.confirmed is False and SECRET not in dumped(finding.witness)
    assert "not_read" not in (finding.witness or {})  # in scope: tried, and refused by S3
    assert "access denied" in finding.explanation
