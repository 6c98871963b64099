"""Credentials written into a log's data-file paths (`?sig=`, `s3://key:secret@`, SAS queries)
show nowhere: not in the one-shot audit's JSON (cycle evidence, missing files, integrity
findings, the live files), not in any API body or page of the tailed table (findings, their
explanations and witnesses, commits, orphan scans, health), not in the stored rows. Every path
becomes text through audit/core/storage/roots.py `shown_path`."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from audit.core.storage.roots import shown_path
from audit.models import Finding
from audit.tail.orphan_scans import scan_table
from tests.support.cli import run_audit
from tests.support.clients import session_client, token_client
from tests.support.ingested import ingest_table
from tests.support.routes import routes, url_of
from tests.support.secret_paths import SECRETS, build_secret_paths


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("day=1/part-0.parquet", "day=1/part-0.parquet"),
        ("day=1/part-0.parquet?sig=abc&se=2030&sv=2020", "day=1/part-0.parquet?sig=***&se=***&sv=2020"),
        ("s3://AKIA:pw@bucket/k/x.parquet", "s3://bucket/k/x.parquet"),
        ("S3://bucket/x.parquet?X-Amz-Signature=abc", "s3://bucket/x.parquet"),
        ("https://u:p@acct.blob.core.windows.net/c/x?sv=1&sig=abc#f", "https://acct.blob.core.windows.net/c/x"),
        ("abfss://cont@acct.dfs.core.windows.net/x?sig=abc", "abfss://cont@acct.dfs.core.windows.net/x"),
        ("abfss://sas:token@acct.dfs.core.windows.net/x", "abfss://acct.dfs.core.windows.net/x"),
        ("s3://[bad/x?sig=abc", "s3://[bad/x"),  # urlsplit raises on it: cut by hand
        ("file:///lake/x?sig=abc", "file:/lake/x"),
        ("a\x00b", "a?b"),
        ("sig=abc/signature=x/part-0.parquet", "sig=abc/signature=x/part-0.parquet"),  # Hive
    ],
)  # fmt: skip
def test_shown_path_keeps_the_file_and_drops_the_credentials(path, shown):
    assert shown_path(path) == shown


def test_the_one_shot_audit_shows_no_credential_of_a_log_path(tmp_path):
    build_secret_paths(tmp_path / "t")
    out = run_audit(str(tmp_path / "t"), "--json", "--files", "--key", "id")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    kinds = {f["kind"] for f in report["findings"]}
    # The findings that name paths are there (else the test proves nothing) ...
    assert {"write_serializable_reorder", "missing_data_file", "duplicate_active_file"} <= kinds
    assert {"remove_of_unknown_file", "duplicate_key"} <= kinds
    # ... and name the files without their credentials.
    assert "day=2024-01-01/part-1.parquet?sig=***" in out.stdout
    never = next(f for f in report["findings"] if f["kind"] == "never_existed_snapshot")
    assert "day=2024-01-01/part-1.parquet?sig=***" in never["witness"]["files"]
    duplicates = next(f for f in report["findings"] if f["kind"] == "duplicate_key")
    assert "day=2024-01-01/part-3.parquet?sig=***" in duplicates["witness"]["files"]
    assert "s3://bucket/lake/x.parquet" in out.stdout
    for secret in SECRETS:
        assert secret not in out.stdout and secret not in out.stderr, secret


@pytest.mark.django_db
def test_no_page_endpoint_or_row_of_the_tailed_table_holds_a_path_credential(
    tmp_path, settings, fresh_cache, admin
):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_ORPHAN_FINDING_BYTES = 1  # the orphan finding's witness lists samples too
    settings.AUDIT_ORPHAN_MIN_AGE_SECONDS = 0
    build_secret_paths(tmp_path / "t")
    table = ingest_table(tmp_path / "t", name="signed")
    scan_table(table)
    findings = list(Finding.objects.filter(table=table).values_list("id", "kind"))
    assert {"write_serializable_reorder", "orphan_files"} <= {kind for _, kind in findings}
    assert len(findings) >= 5  # every version's commit page is walked too
    bodies = {}
    clients = (token_client(admin), session_client(admin))
    for n, (finding_id, _) in enumerate(findings):
        values = {
            "table_id": table.id, "tables/pk": table.id, "finding_id": finding_id,
            "findings/pk": finding_id, "version": n % 5, "format": "json",
        }  # fmt: skip
        for route in routes():
            try:
                url, _ = url_of(route, values)
            except AssertionError:
                continue  # a route of other objects (alerting, deliveries)
            if url in bodies or url == "/logout/":
                continue
            for client in clients:
                body = client.get(url, {"table": table.id}).content.decode(errors="replace")
                bodies[url] = bodies.get(url, "") + body
    assert any("part-1.parquet?sig=***" in body for body in bodies.values())
    orphans = bodies[f"/api/tables/{table.id}/orphans/"]
    assert "part-9.parquet?sig=***" in orphans, orphans[:500]
    for url, body in bodies.items():
        for secret in SECRETS:
            assert secret not in body, (secret, url)
    with connection.cursor() as cursor:
        for name in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {name}")  # noqa: S608 - our own table names
            stored = str(cursor.fetchall())
            for secret in SECRETS:
                assert secret not in stored, (secret, name)
