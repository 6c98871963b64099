"""The readable range (time travel) the worker's data scan finds: stored on the scan row,
served in the API's health and read by the dashboard's panel (real files, real database)."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from audit.core.health.scan import scan_data
from audit.core.health.timetravel import time_travel_section
from audit.core.history.summary import load_history
from audit.core.storage.stores import open_store
from audit.models import OrphanScan, Table
from audit.tail import orphan_scans
from tests.support.clients import authorize
from tests.support.health_tables import build_broken_time_travel_table
from tests.support.ingested import ingest_table
from tests.support.projects import into, join

pytestmark = pytest.mark.django_db


@pytest.fixture
def broken(tmp_path, settings) -> Table:
    """v0 and v1 broken by a file deleted outside Delta, v2 the earliest readable version."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_API_LIST_CACHE_SECONDS = 300  # the health body is cached: a scan must show
    cache.clear()
    return ingest_table(str(build_broken_time_travel_table(tmp_path / "t")), name="t")


def _health(client: APIClient, table: Table) -> dict:
    response = client.get(f"/api/tables/{table.id}/health/")
    assert response.status_code == 200, response.content
    return response.json()


def test_it_stores_the_readable_range_with_the_scan_and_serves_it_in_health(broken, member):
    api = authorize(APIClient(), member)
    assert _health(api, broken)["time_travel"] is None  # before the first scan

    scan = orphan_scans.scan_table(broken)
    stored = OrphanScan.objects.get(id=scan.id).time_travel
    assert stored["judged"] is True
    assert stored["earliest_readable_version"] == 2
    assert stored["broken_versions"] == [0, 1] and stored["broken_ranges"] == [[0, 1]]
    history = load_history(broken.uri)
    assert stored["earliest_readable_timestamp"] == history.summary(2).timestamp

    # The same object `audit --json` has in `health.time_travel`: same fields, same values.
    found = scan_data(open_store(broken.uri), history, broken.uri, now_ms=int(time.time() * 1000))
    assert stored == time_travel_section(found.reach, history)

    # The cached body of the health moves with the scan.
    health = _health(api, broken)
    assert health["time_travel"] == stored
    assert health["version"] == 2  # the rest of the document is the stored health


def test_it_serves_the_latest_successful_scan(broken, member, tmp_path):
    api = authorize(APIClient(), member)
    orphan_scans.scan_table(broken)
    for f in (tmp_path / "t").glob("*.parquet"):  # every file gone: nothing is readable
        f.unlink()
    orphan_scans.scan_table(broken)
    assert _health(api, broken)["time_travel"]["reason"] is not None  # no file: not judged
    OrphanScan.objects.create(
        table=broken, scanned_at=OrphanScan.objects.latest("id").scanned_at, error="x"
    )
    assert _health(api, broken)["time_travel"]["judged"] is False  # an error keeps the last


def test_it_shows_the_range_only_to_readers_of_the_tables_project(broken, member, outsider):
    orphan_scans.scan_table(broken)
    into(broken, "private")
    join(member, "private")
    assert _health(authorize(APIClient(), member), broken)["time_travel"]["judged"] is True
    response = authorize(APIClient(), outsider).get(f"/api/tables/{broken.id}/health/")
    assert response.status_code == 404
