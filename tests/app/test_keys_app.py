"""Declared keys through the app: `add_table --key`, the API's table settings, the tail's
table-level refresh (duplicate_key stored as the CLI's `audit --key` reports it)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable, write_deltalake
from django.core.management import call_command

from audit.ingest.tables import register_table
from audit.models import Finding, Table
from audit.tail.step import tail_once
from tests.support.clients import session_client
from tests.support.tables import rows
from tests.support.tail_views import cli_json

pytestmark = pytest.mark.django_db


def _duplicated(path):
    write_deltalake(str(path), rows(3))
    first, second = DeltaTable(str(path)), DeltaTable(str(path))
    write_deltalake(first, rows(1, start=42), mode="append")
    write_deltalake(second, rows(1, start=42), mode="append")


def _tail(table):
    while tail_once(table.id).more:
        pass
    tail_once(table.id)  # idle: refreshes the table-level findings
    return {
        (f.kind, f.version, tuple(f.related_versions), f.severity)
        for f in Finding.objects.filter(table=table, kind="duplicate_key", status="open")
    }


def test_it_stores_the_duplicate_keys_add_table_declared(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = tmp_path / "dups"
    _duplicated(path)
    call_command("add_table", str(path), "--key", "id")
    table = Table.objects.get(uri=str(path))
    assert table.key_columns == ["id"]
    stored = _tail(table)
    report = cli_json(path, "--key", "id")
    want = {
        (f["kind"], f["version"], tuple(f["related_versions"]), f["severity"])
        for f in report["findings"]
        if f["kind"] == "duplicate_key"
    }
    assert stored == want == {("duplicate_key", 2, (1,), "critical")}
    # Without a declared key neither reports it.
    assert not [f for f in cli_json(path)["findings"] if f["kind"] == "duplicate_key"]


def test_it_takes_key_columns_in_the_api_table_settings(tmp_path, settings, owner, monkeypatch):
    from workers.tasks import tail_table

    monkeypatch.setattr(tail_table, "apply_async", lambda *a, **kw: None)
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "keyed"
    _duplicated(path)
    client = session_client(owner)
    bad = client.post("/api/tables/", {"uri": str(path), "key_columns": ["id", " "]}, format="json")
    assert bad.status_code == 400
    response = client.post("/api/tables/", {"uri": str(path), "key_columns": ["id"]}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["key_columns"] == ["id"]
    assert client.get(f"/api/tables/{response.json()['id']}/").json()["key_columns"] == ["id"]


def test_it_checks_key_columns_in_the_admin(client, owner, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    client.force_login(owner)
    form = {"uri": str(tmp_path / "t"), "name": "t", "status": "ingesting"}
    refused = client.post("/admin/audit/table/add/", {**form, "key_columns": '["id", " "]'})
    assert refused.status_code == 200 and not Table.objects.exists()
    saved = client.post("/admin/audit/table/add/", {**form, "key_columns": '["id", "k2"]'})
    assert saved.status_code == 302
    assert Table.objects.get().key_columns == ["id", "k2"]


def test_it_changes_key_columns_by_patch_for_admins_only(tmp_path, settings, owner, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "patched"
    _duplicated(path)
    table, _ = register_table(str(path))
    Table.objects.filter(pk=table.pk).update(table_findings_dirty=False)  # as after a refresh
    url = f"/api/tables/{table.id}/"
    refused = session_client(member).patch(url, {"key_columns": ["id"]}, format="json")
    assert refused.status_code == 403
    client = session_client(owner)
    response = client.patch(url, {"key_columns": ["id"]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["key_columns"] == ["id"]
    table.refresh_from_db()
    assert table.key_columns == ["id"] and table.table_findings_dirty
    assert client.patch(url, {"key_columns": "id"}, format="json").status_code == 400
