"""The periodic orphan scan of registered tables (the shell around audit/core/data/orphans.py).

`scan_table` lists one table's data folders within the configured bounds, stores an
`OrphanScan` row (counts, bytes, time range, per-hour histogram, a sample of paths) and opens or
resolves the table's `orphan_files`, `missing_data_file` and `vacuum_broke_snapshot` findings
through `audit.ingest` (the last two from the same listing: audit/core/health/scan.py). The scan
row also keeps the readable range that listing gave (`time_travel`, as `audit --json` has it):
the API's and the dashboard's health show the latest one. A table whose log or
folders cannot be read gets a scan row with the error; other tables are not affected. Nothing
is ever deleted from a table.
"""

from __future__ import annotations

import logging
import math
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from audit.core.data.orphans import HOUR_MS
from audit.core.errors import DeltaAuditError
from audit.core.health.scan import scan_data
from audit.core.health.timetravel import time_travel_section
from audit.core.jsonsafe import json_safe
from audit.core.runs.table import open_table
from audit.core.scrub import scrub_error
from audit.core.storage.stores import local_path_of, open_store
from audit.core.vocab import SCAN_KINDS, FindingKind
from audit.ingest.findings import upsert_findings
from audit.models import Commit, Finding, OrphanScan, Table
from audit.trust.paths import check_registered

log = logging.getLogger(__name__)
MAX_HOURS_SHOWN = 48


def scan_table(table: Table) -> OrphanScan:
    now = timezone.now()
    try:
        uri = check_registered(table.uri)
        history = open_table(uri).history()  # the current log: newer commits reference their files
        found = scan_data(
            open_store(uri),
            history,
            local_path_of(uri) or uri,
            now_ms=int(time.time() * 1000),
            min_age_floor_ms=int(settings.AUDIT_ORPHAN_MIN_AGE_SECONDS * 1000),
            orphan_finding_bytes=settings.AUDIT_ORPHAN_FINDING_BYTES,
            max_files=settings.AUDIT_ORPHAN_MAX_FILES,
            max_dirs=settings.AUDIT_ORPHAN_MAX_DIRS,
            max_depth=settings.AUDIT_ORPHAN_MAX_DEPTH,
            min_interval_ms=settings.AUDIT_TIMESTAMP_MIN_INTERVAL_MS,
        )
    except DeltaAuditError as err:
        return _failed_scan(table, now, scrub_error(str(err))[:2000])
    except DatabaseError:
        raise  # the task retries the transient ones
    except Exception as err:  # a bug of ours on a hostile log must not be retried every pass
        log.exception("orphan scan of table %s failed", table.id)
        # The exception's text may quote the log ("year 3170843 is out of range"): its type only.
        return _failed_scan(table, now, f"internal error while scanning: {type(err).__name__}")
    data = found.orphans.as_dict()
    with transaction.atomic():
        _mark_scanned(table, now)
        row = OrphanScan.objects.create(
            table=table,
            scanned_at=now,
            version=history.latest_version,
            time_travel=json_safe(time_travel_section(found.reach, history)),
            **{k: data[k] for k in _STORED},
        )
        findings = found.findings
        for finding in findings:
            if finding.kind == FindingKind.ORPHAN_FILES:
                finding.version = _finding_version(table, history.latest_version)
        opened, resolved = upsert_findings(table, findings, scope=None, kinds=SCAN_KINDS, now=now)
        if opened or resolved:  # the tail's next refresh regroups the incidents, under its lease
            Table.objects.filter(pk=table.pk).update(table_findings_dirty=True)
    _prune(table)
    return row


def _failed_scan(table: Table, now: Any, error: str) -> OrphanScan:
    """A scan row with the error, the table marked scanned: it waits until it is due again."""
    with transaction.atomic():
        _mark_scanned(table, now)
        return OrphanScan.objects.create(table=table, scanned_at=now, error=error)


_STORED = (
    "files",
    "bytes",
    "oldest",
    "newest",
    "hours",
    "sample",
    "in_flight_files",
    "listed_files",
    "listed_dirs",
    "truncated",
    "min_age_ms",
)


def _finding_version(table: Table, latest: int) -> int:
    """Keep the open finding's version while orphans persist (one finding, not one per scan)."""
    open_row = (
        Finding.objects.filter(
            table=table, kind=FindingKind.ORPHAN_FILES, status=Finding.Status.OPEN
        )
        .order_by("-version")
        .first()
    )
    return open_row.version if open_row is not None else latest


def _prune(table: Table) -> None:
    keep = settings.AUDIT_ORPHAN_SCANS_KEPT
    old = (
        OrphanScan.objects.filter(table=table)
        .order_by("-scanned_at")
        .values_list("id", flat=True)[keep:]
    )
    ids = list(old[:10_000])
    if ids:
        OrphanScan.objects.filter(id__in=ids).delete()


def _mark_scanned(table: Table, now: Any) -> None:
    Table.objects.filter(id=table.id).update(orphans_scanned_at=now)


# A queued scan's task expires after this long (workers/orphan_tasks.py): until then the table
# is not queued again; a scan that expired unrun or died is queued by a later pass.
QUEUED_SCAN_EXPIRES = 600.0
# Each pass queues up to this many times its even share of the lake, so a backlog (a fresh
# lake, an upgrade, workers that were down) drains in half the interval, still spread out.
CATCH_UP = 2


def scans_per_pass(tables: int, pass_seconds: float, scan_seconds: float) -> int:
    """How many scans one pass queues: the share of `tables` that scanning each every
    `scan_seconds` in passes `pass_seconds` apart needs, times CATCH_UP (at least one)."""
    if tables <= 0:
        return 0
    share = tables * pass_seconds / max(scan_seconds, pass_seconds)
    return max(1, math.ceil(CATCH_UP * share))


def tables_due(now: Any = None) -> list[int]:
    """This pass's share of the tables not scanned for AUDIT_ORPHAN_SCAN_SECONDS, the longest
    unscanned (never first) first, none already queued and not yet expired. Only once a
    table's history is stored: a scan during the initial ingest or a backfill reads the whole
    log ahead of the tail, and with thousands of new tables those scans starved the ingest.
    Before the share, every due table was queued at once: 2,000 scans an hour in one burst,
    each reading its table's whole log."""
    now = now or timezone.now()
    scan_seconds = settings.AUDIT_ORPHAN_SCAN_SECONDS
    stored = Table.objects.exclude(status__in=(Table.Status.INGESTING, Table.Status.BACKFILLING))
    budget = scans_per_pass(stored.count(), settings.AUDIT_ORPHAN_PASS_SECONDS, scan_seconds)
    unscanned = Q(orphans_scanned_at__isnull=True) | Q(
        orphans_scanned_at__lt=now - timedelta(seconds=scan_seconds)
    )
    not_queued = Q(orphans_queued_at__isnull=True) | Q(
        orphans_queued_at__lt=now - timedelta(seconds=QUEUED_SCAN_EXPIRES)
    )
    due = stored.filter(unscanned, not_queued).order_by(
        F("orphans_scanned_at").asc(nulls_first=True), "id"
    )
    return list(due.values_list("id", flat=True)[:budget])


def queue_due(now: Any = None) -> list[int]:
    """This pass's tables (`tables_due`), marked queued: the caller sends their scans."""
    now = now or timezone.now()
    due = tables_due(now)
    Table.objects.filter(id__in=due).update(orphans_queued_at=now)
    return due


# --------------------------------------------------------------------------- the query layer


def orphan_report(table: Table) -> dict[str, Any]:
    """The latest scan, counts over time, and per orphan hour the commits that ran concurrently
    in that hour (the conflict hotspots of the same hours). Shared by the API and the page."""
    scans = list(OrphanScan.objects.filter(table=table).order_by("-scanned_at")[:200])
    latest = next((s for s in scans if not s.error), None)
    hours = list((latest.hours if latest else [])[-MAX_HOURS_SHOWN:])
    for hour in hours:
        start = int(hour["start"])
        counts = Commit.objects.filter(
            table=table, timestamp__gte=start, timestamp__lt=start + HOUR_MS
        ).aggregate(commits=Count("id"), concurrent=Count("id", filter=Q(concurrent_count__gt=0)))
        hour["commits"], hour["concurrent_commits"] = counts["commits"], counts["concurrent"]
    return {
        "table": table.id,
        "latest": None
        if latest is None
        else {
            "scanned_at": latest.scanned_at.isoformat(),
            "version": latest.version,
            "files": latest.files,
            "bytes": latest.bytes,
            "oldest": latest.oldest,
            "newest": latest.newest,
            "in_flight_files": latest.in_flight_files,
            "listed_files": latest.listed_files,
            "listed_dirs": latest.listed_dirs,
            "truncated": latest.truncated,
            "sample": latest.sample[:20],
        },
        "hours": hours,
        "over_time": [
            {"scanned_at": s.scanned_at.isoformat(), "files": s.files, "bytes": s.bytes}
            for s in reversed(scans)
            if not s.error
        ],
        "last_error": scans[0].error if scans and scans[0].error else None,
    }
