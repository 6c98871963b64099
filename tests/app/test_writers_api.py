"""Contention telemetry per writer, retry_storm, and /api/tables/{id}/writers/ (real delta-rs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake
from django.core.cache import cache
from rest_framework.test import APIClient

from audit import analysis, ingest
from audit.core.audit import audit_history
from audit.core.summary import load_history
from audit.core.writers import writer_telemetry
from tests.support.clients import authorize
from tests.support.tables import rows


def as_user(name: str, **extra) -> CommitProperties:
    # delta-rs puts custom metadata at the top level of commitInfo, where Spark writes userName.
    return CommitProperties(custom_metadata={"userName": name}, **extra)


def build_two_writers(path: Path) -> None:
    """alice appends; bob deletes from a snapshot alice's appends overtook (v3 read v1)."""
    write_deltalake(str(path), rows(3), partition_by=["day"], commit_properties=as_user("alice"))
    write_deltalake(str(path), rows(2, start=10), mode="append", commit_properties=as_user("alice"))
    stale = DeltaTable(str(path))  # bob reads v1
    write_deltalake(str(path), rows(2, start=20), mode="append", commit_properties=as_user("alice"))
    stale.delete("id = 1", commit_properties=as_user("bob"))  # v3, readVersion 1


def telemetry(path: Path) -> dict:
    history = load_history(str(path))
    return writer_telemetry(history, audit_history(history, check_data=False).commits)


@pytest.mark.django_db
def test_the_writers_endpoint_needs_a_token_and_agrees_with_the_core(tmp_path, settings, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    analysis._HISTORIES.clear()
    build_two_writers(tmp_path / "t")
    table, _ = ingest.register_table(str(tmp_path / "t"), name="t")
    while ingest.tail_once(table.id).more:
        pass
    client = APIClient()
    assert client.get(f"/api/tables/{table.id}/writers/").status_code in (401, 403)
    authorize(client, member)
    response = client.get(f"/api/tables/{table.id}/writers/")
    assert response.status_code == 200
    body = response.json()
    assert body["table"] == table.id and body["version"] == 3
    assert body["writers"] == telemetry(tmp_path / "t")
    cache.clear()
    analysis._HISTORIES.clear()
