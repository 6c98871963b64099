"""/api/tables/{id}/writers/ needs a token and agrees with the core's contention telemetry
(tests/core/test_writers.py)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from audit.reads import analysis
from tests.support.clients import authorize
from tests.support.ingested import ingest_table
from tests.support.writer_tables import build_two_writers, telemetry


@pytest.mark.django_db
def test_the_writers_endpoint_needs_a_token_and_agrees_with_the_core(tmp_path, settings, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    analysis._HISTORIES.clear()
    build_two_writers(tmp_path / "t")
    table = ingest_table(str(tmp_path / "t"), name="t")
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
