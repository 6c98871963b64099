"""Discovery with real services: a smaller set of tables on the S3 protocol server among decoys,
read by a user allowed only the prefix, and a configured root discovered by the beat of a
real worker (the walk itself: tests/core/test_discovery.py)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from audit.models import Table
from tests.e2e.objstore import upload_table, write_storage_config
from tests.support.cli import manage
from tests.support.discovery_lake import table_templates
from tests.support.waiting import wait_for


@pytest.mark.services
@pytest.mark.slow
def test_discover_on_s3_finds_the_uploaded_tables_only(s3_server, tmp_path):
    s3_server.enforce_auth()
    bucket = s3_server.create_bucket()
    templates = table_templates(tmp_path / "templates")
    expected = {}
    for i in range(20):
        prefix = "/".join([f"dom{i % 3}", *(["sub"] * (i % 4)), f"t{i:02d}"])
        uri = f"s3://{bucket}/lake/{prefix}"
        upload_table(templates[i % 3], uri, s3_server.options())
        expected[uri] = i % 3
    upload_table(templates[0], f"s3://{bucket}/lake/_tmp/t", s3_server.options())
    decoy = tmp_path / "decoy"
    (decoy / "_delta_log").mkdir(parents=True)
    (decoy / "_delta_log" / "README.txt").write_text("not a table")
    (decoy / "x.parquet").write_bytes(b"PAR1")
    upload_table(decoy, f"s3://{bucket}/lake/decoy", s3_server.options())
    reader = s3_server.read_only_user(bucket, "lake/")
    options = {
        **s3_server.options(),
        "aws_access_key_id": "env:LAKE_KEY",
        "aws_secret_access_key": "env:LAKE_SECRET",
    }
    config = write_storage_config(tmp_path / "s.toml", {f"s3://{bucket}/lake/": options})
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base["DATABASE_URL"] = "postgres://nobody@127.0.0.1:1/none"
    env = {
        **base,
        "AUDIT_STORAGE_CONFIG": config,
        "LAKE_KEY": reader.access_key_id,
        "LAKE_SECRET": reader.secret_access_key,
    }
    run = manage("discover", f"s3://{bucket}/lake", "--json", env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert {t["uri"]: t["latest_version"] for t in data["tables"]} == expected
    assert data["errors"] == []
    # No database in this process's reach: listing still works, "registered" is unknown.
    assert data["registry_error"] and {t["registered"] for t in data["tables"]} == {None}


@pytest.mark.services
@pytest.mark.slow
def test_a_configured_root_is_discovered_by_the_beat(celery_workers, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    root = tmp_path / "lake"
    write_deltalake(str(root / "a" / "t1"), pa.table({"id": [1]}))
    celery_workers.start(
        "w1",
        AUDIT_DISCOVERY_ROOTS=str(root),
        AUDIT_DISCOVERY_INTERVAL_SECONDS="1",
        AUDIT_ALLOWED_ROOTS=str(tmp_path),
    )
    wait_for(
        lambda: Table.objects.filter(uri=str(root / "a" / "t1"), status="ok").exists(),
        60,
        message=f"t1 discovered and tailed; {celery_workers.logs()}",
    )
    write_deltalake(str(root / "b" / "c" / "t2"), pa.table({"id": [2]}))
    wait_for(
        lambda: Table.objects.filter(uri=str(root / "b" / "c" / "t2"), status="ok").exists(),
        60,
        message=f"t2 appears on its own; {celery_workers.logs()}",
    )
