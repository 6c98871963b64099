"""The periodic orphan scan: stored scans, the orphan_files finding, API and page (real files)."""

from __future__ import annotations

import os
import time

import pytest
from deltalake import write_deltalake
from rest_framework.test import APIClient

from audit.core.log import open_log
from audit.health import orphan_scans
from audit.ingest.tables import register_table
from audit.models import Finding, OrphanScan, Table
from audit.tail.step import reaudit, refresh_table_findings
from tests.support.clients import authorize
from tests.support.ingested import ingest_table
from tests.support.killed_writer import kill_a_writer
from tests.support.tables import rows
from workers import orphan_tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def killed(tmp_path, settings) -> Table:
    """A table whose writer was SIGKILLed after writing 3 data files, 2 hours ago."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_ORPHAN_FINDING_BYTES = 1
    path = tmp_path / "t"
    write_deltalake(str(path), rows(5), partition_by=["day"])
    write_deltalake(str(path), rows(5, start=10), mode="append")
    kill_a_writer(path)
    two_hours_ago = time.time() - 7200
    for f in path.glob("day=*/*-killed-*.parquet"):
        os.utime(f, (two_hours_ago, two_hours_ago))
    table = ingest_table(str(path), name="t")
    return table


def test_the_scan_stores_counts_and_opens_then_resolves_the_finding(killed, tmp_path):
    for waiting in (Table.Status.INGESTING, Table.Status.BACKFILLING):
        Table.objects.filter(id=killed.id).update(status=waiting)
        assert orphan_scans.tables_due() == []  # scanned once its history is stored
    Table.objects.filter(id=killed.id).update(status=Table.Status.OK)
    assert orphan_scans.tables_due() == [killed.id]
    result = orphan_tasks.scan_table_orphans(killed.id)  # the task body, in process
    assert "3 orphan files" in result
    scan = OrphanScan.objects.get(table=killed)
    killed_files = sorted((tmp_path / "t").glob("day=*/*-killed-*.parquet"))
    assert scan.files == 3 and scan.bytes == sum(f.stat().st_size for f in killed_files)
    assert scan.hours and sum(h["files"] for h in scan.hours) == 3
    (finding,) = Finding.objects.filter(table=killed, kind="orphan_files")
    assert finding.status == "open" and finding.severity == "warning" and finding.version == 1
    assert orphan_scans.tables_due() == []  # scanned within the interval

    # A full audit of the table neither creates nor resolves scan findings.
    killed.refresh_from_db()
    refresh_table_findings(killed, open_log(killed.uri), killed.last_seen_version)
    reaudit(killed.id)
    assert Finding.objects.get(id=finding.id).status == "open"

    for f in killed_files:  # VACUUM (by someone else) removed them
        f.unlink()
    orphan_scans.scan_table(killed)
    assert Finding.objects.get(id=finding.id).status == "resolved"
    assert all(f.exists() is False for f in killed_files)


def test_below_the_size_no_finding_and_nothing_deleted(killed, settings, tmp_path):
    settings.AUDIT_ORPHAN_FINDING_BYTES = 10**12
    orphan_scans.scan_table(killed)
    assert not Finding.objects.filter(table=killed, kind="orphan_files").exists()
    assert len(list((tmp_path / "t").glob("day=*/*-killed-*.parquet"))) == 3


def test_an_unreadable_table_gets_an_error_scan_and_others_still_scan(killed, tmp_path, settings):
    broken = tmp_path / "broken"
    write_deltalake(str(broken), rows(1))
    other, _ = register_table(str(broken), name="broken")
    for f in (broken / "_delta_log").iterdir():
        f.unlink()
    assert "failed" in orphan_tasks.scan_table_orphans(other.id)
    assert "3 orphan files" in orphan_tasks.scan_table_orphans(killed.id)
    assert OrphanScan.objects.get(table=other).error


def test_api_and_page_show_the_orphans_next_to_the_same_hours(killed, client, member):
    orphan_scans.scan_table(killed)
    api = APIClient()
    assert api.get(f"/api/tables/{killed.id}/orphans/").status_code in (401, 403)
    authorize(api, member)
    body = api.get(f"/api/tables/{killed.id}/orphans/").json()
    assert body["latest"]["files"] == 3 and body["hours"][0]["files"] == 3
    assert {"commits", "concurrent_commits"} <= set(body["hours"][0])
    client.force_login(member)
    page = client.get(f"/tables/{killed.id}/analysis/").content.decode()
    assert 'id="orphan-hours"' in page and body["hours"][0]["hour"] in page


def test_beat_schedules_the_scan(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["scan-orphans"]
    assert entry["task"] == "workers.orphan_tasks.scan_all_orphans"
    assert "workers.orphan_tasks" in settings.CELERY_IMPORTS


def test_the_scan_opens_and_resolves_missing_data_file_from_the_same_listing(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "m"
    write_deltalake(str(path), rows(2), partition_by=["day"])
    write_deltalake(str(path), rows(2, start=10, day="2024-01-02"), mode="append")
    table = ingest_table(str(path), name="m")
    (victim,) = (path / "day=2024-01-02").glob("*.parquet")
    saved = victim.read_bytes()
    victim.unlink()  # deleted by hand: the latest version cannot be read
    orphan_scans.scan_table(table)
    (finding,) = Finding.objects.filter(table=table, kind="missing_data_file")
    assert (finding.status, finding.severity, finding.version) == ("open", "critical", 1)
    # A full audit of the table neither creates nor resolves scan findings.
    reaudit(table.id)
    assert Finding.objects.get(id=finding.id).status == "open"
    victim.write_bytes(saved)  # restored from a backup
    orphan_scans.scan_table(table)
    assert Finding.objects.get(id=finding.id).status == "resolved"
