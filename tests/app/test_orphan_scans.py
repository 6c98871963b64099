"""The periodic orphan scan: stored scans, the orphan_files finding, API and page (real files)."""

from __future__ import annotations

import importlib
import os
import shutil
import time
from datetime import timedelta

import pytest
from deltalake import write_deltalake
from django.utils import timezone
from rest_framework.test import APIClient

from audit.core.log import open_log
from audit.ingest.tables import register_table
from audit.models import Finding, OrphanScan, Table
from audit.tail import orphan_scans
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
    assert entry["schedule"] == settings.AUDIT_ORPHAN_PASS_SECONDS == 60
    assert "workers.orphan_tasks" in settings.CELERY_IMPORTS


def _lake(n: int) -> list[int]:
    made = Table.objects.bulk_create(
        Table(uri=f"file:///lake/t{i}", name=f"t{i}", status=Table.Status.OK) for i in range(n)
    )
    return [t.id for t in made]


def test_it_spreads_a_lakes_scans_over_the_interval(settings):
    settings.AUDIT_ORPHAN_SCAN_SECONDS, settings.AUDIT_ORPHAN_PASS_SECONDS = 3600, 60
    ids = _lake(90)  # 90 tables, a scan each an hour, a pass a minute: 1.5 a pass, 3 to catch up
    start, scanned_at, sizes = timezone.now(), {}, []
    for n in range(60):  # an hour of passes, each queued scan done before the next pass
        now = start + timedelta(seconds=60 * n)
        queued = orphan_scans.queue_due(now)
        sizes.append(len(queued))
        Table.objects.filter(id__in=queued).update(orphans_scanned_at=now)
        scanned_at.update(dict.fromkeys(queued, n))
    assert max(sizes) == 3 and sorted(scanned_at) == ids  # never a burst; every table scanned
    assert [scanned_at[i] for i in ids] == sorted(scanned_at[i] for i in ids)  # in id order
    assert max(scanned_at.values()) == 29  # the backlog drained in half the interval
    assert sum(sizes[30:]) == 0  # then nothing until each is an hour old
    assert orphan_scans.queue_due(start + timedelta(seconds=3660)) == ids[:3]  # oldest first


def test_it_queues_a_scan_that_never_ran_again_once_its_task_expired(settings):
    settings.AUDIT_ORPHAN_SCAN_SECONDS, settings.AUDIT_ORPHAN_PASS_SECONDS = 3600, 60
    (table_id,) = _lake(1)
    Table.objects.filter(id=table_id).update(status=Table.Status.INGESTING)
    now = timezone.now()
    assert orphan_scans.queue_due(now) == []  # its history is not stored yet
    Table.objects.filter(id=table_id).update(status=Table.Status.OK)
    assert orphan_scans.queue_due(now) == [table_id]
    expires = orphan_scans.QUEUED_SCAN_EXPIRES
    assert orphan_scans.queue_due(now + timedelta(seconds=expires - 1)) == []  # still queued
    assert orphan_scans.queue_due(now + timedelta(seconds=expires + 1)) == [table_id]


def test_a_stored_scan_error_or_not_marks_the_table_scanned(killed, tmp_path):
    before = timezone.now()
    orphan_scans.scan_table(killed)
    killed.refresh_from_db()
    assert killed.orphans_scanned_at >= before
    assert orphan_scans.tables_due() == []
    shutil.rmtree(tmp_path / "t" / "_delta_log")
    later = timezone.now() + timedelta(seconds=3601)
    assert orphan_scans.tables_due(later) == [killed.id]
    assert orphan_scans.scan_table(killed).error
    killed.refresh_from_db()
    assert killed.orphans_scanned_at > before and orphan_scans.tables_due() == []


def test_the_upgrade_takes_each_tables_latest_stored_scan(killed):
    from django.apps import apps

    migration = importlib.import_module("audit.migrations.0016_table_orphans_scanned_at")
    newest = timezone.now() - timedelta(minutes=5)
    OrphanScan.objects.create(table=killed, scanned_at=newest - timedelta(hours=2))
    OrphanScan.objects.create(table=killed, scanned_at=newest)
    (other_id,) = _lake(1)
    Table.objects.update(orphans_scanned_at=None)
    migration.scanned_from_rows(apps, None)
    assert Table.objects.get(id=killed.id).orphans_scanned_at == newest
    assert Table.objects.get(id=other_id).orphans_scanned_at is None


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
