"""One tail step for one table: read the new commits, audit them, store them, alert.

`tail_once` is the whole step, top to bottom: open the log (kept between ticks:
audit.tail.kept_logs), record a history gap if versions were cleaned up before we read them,
plan the next chunk, store chunk after chunk (each in its own transaction: audit.ingest.chunk,
under the table's lease: audit.ingest.lease) and raise each chunk's health alerts once it has
committed (audit.alerting.health_findings), then refresh the table-level findings when they
are due. Writing rows is audit.ingest's job; this module decides what to read and when. Tests replace `run_audit` and `upsert_findings` here.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.alerting.health_findings import alert_on_health
from audit.core.audit import AuditResult
from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.summary import History
from audit.core.integrity.gaps import HistoryGap, find_history_gap, history_gap_finding
from audit.core.log import DeltaLog
from audit.core.runs.table import AuditedTable, AuditOptions, open_table
from audit.core.vocab import TABLE_LEVEL_KINDS, StorageCause
from audit.ingest.chunk import store_history_chunk
from audit.ingest.findings import findings_in, upsert_findings
from audit.ingest.health_store import listing_health_due, store_listing_health
from audit.ingest.incidents import recheck_due
from audit.ingest.lease import TableLease
from audit.ingest.plan import ChunkPlan, TailResult, plan_next_chunk
from audit.ingest.tables import mark_error, mark_up_to_date
from audit.models import Table
from audit.tail import kept_logs
from audit.tail.incidents import CHUNK_LOAD_LIMIT, refresh_incidents
from audit.tail.notifications import clear_notice
from audit.trust.limits import dv_limits, incident_rules
from audit.trust.paths import check_registered, read_scope_of

logger = logging.getLogger(__name__)


def tail_options(uri: str) -> AuditOptions:
    """How the tail audits a table: data files, deletion vectors and key columns only inside
    the table's own location and its project's granted roots, never in another project's
    table (asked of the database when an audit first needs it: runs/table.py)."""
    return AuditOptions(
        check_data=settings.AUDIT_CHECK_DATA,
        read_roots=read_scope_of(uri),
        sample_rows=settings.AUDIT_WITNESS_SAMPLE_ROWS,
        dv_limits=dv_limits(),
        incident_rules=incident_rules(),
    )


def run_audit(
    tailed: AuditedTable, history: History, versions: tuple[int, int] | None
) -> AuditResult:
    return tailed.audit(history, versions=versions)


def tail_once(
    table_id: int, *, lease: TableLease | None = None, chunk: int | None = None
) -> TailResult:
    """Store the next chunk(s) of a table's new commits and audit them, one transaction each.

    With the default chunk size, a backfill step goes on to further chunks with the same log
    listing (listing a 100k-commit `_delta_log` costs as much as storing a chunk) until
    AUDIT_BACKFILL_STEP_SECONDS have passed; an explicit `chunk` stores exactly one chunk.
    Every write is guarded by the table's `lease` (none: the caller writes the table alone).
    """
    lease = lease or TableLease(table_id)
    table = Table.objects.get(id=table_id)
    if table.status == Table.Status.PAUSED:
        return TailResult(table_id, "paused", message="paused; not tailed")
    budget = 0.0 if chunk else settings.AUDIT_BACKFILL_STEP_SECONDS
    chunk = chunk or settings.AUDIT_BACKFILL_CHUNK
    step_started = timezone.now()
    try:
        # The roots are enforced on every read; the log is kept between ticks (kept_logs).
        delta_log = kept_logs.refreshed(check_registered(table.uri))
        _record_gap_if_any(table, delta_log, lease)
        plan = plan_next_chunk(delta_log.listing, table.last_seen_version, chunk)
        if plan is None:
            return _idle_step(table, delta_log, lease, step_started)
        result = _store_chunks(table, delta_log, plan, lease, step_started, chunk, budget)
        if not result.more:
            _refresh_table_findings_if_due(table, delta_log, result, lease)
            clear_notice(table.id, step_started)  # listed after it: every noticed commit stored
        return result
    except DeltaAuditError as err:
        return _record_error(table, err, lease)


def _record_gap_if_any(table: Table, delta_log: DeltaLog, lease: TableLease) -> None:
    gap = find_history_gap(delta_log.listing, table.last_seen_version)
    if gap is not None:
        record_history_gap(table, gap, lease=lease)
        table.refresh_from_db()


def _refresh_table_findings_if_due(
    table: Table, delta_log: DeltaLog, result: TailResult, lease: TableLease
) -> None:
    if table_findings_due(table):
        opened, resolved = refresh_table_findings(
            table, delta_log, result.last_seen_version, lease=lease
        )
        result.opened += opened
        result.resolved += resolved


def _record_error(table: Table, err: DeltaAuditError, lease: TableLease) -> TailResult:
    kept_logs.forget(table.uri)  # the next tick starts from a full listing
    message = one_line(str(err))
    mark_error(table, message, lease=lease, cause=err.cause or StorageCause.OTHER)
    return TailResult(table.id, "error", message=message)


def _idle_step(
    table: Table, delta_log: DeltaLog, lease: TableLease, step_started: datetime
) -> TailResult:
    """Nothing new to store: refresh the table-level findings if due, the stored health if the
    listing moved it (a checkpoint without a commit), and record the check."""
    result = TailResult(table.id, "ok", last_seen_version=table.last_seen_version)
    if table_findings_due(table):
        result.opened, result.resolved = refresh_table_findings(
            table, delta_log, table.last_seen_version, lease=lease
        )
    elif recheck_due(table.id, timezone.now()):  # an incident turns quiet or resolved by time
        tailed = AuditedTable(delta_log, tail_options)
        refresh_incidents(table, tailed, table.last_seen_version, lease=lease)
    if listing_health_due(table.id, delta_log, table.last_seen_version):
        with transaction.atomic():
            lease.keep()
            outcome = store_listing_health(table.id, delta_log, table.last_seen_version)
        alert_on_health(table, outcome)  # committed: e.g. a checkpoint ends a lag alert
    mark_up_to_date(lease, delta_log.listing)
    clear_notice(table.id, step_started)
    return result


def _store_chunks(
    table: Table,
    delta_log: DeltaLog,
    plan: ChunkPlan,
    lease: TableLease,
    step_started: datetime,
    chunk: int,
    budget: float,
) -> TailResult:
    """Store chunk after chunk with one listing until none is left or `budget` seconds passed.

    Each chunk's health alerts are raised as soon as its transaction has committed, so a later
    chunk that fails (a lost lock) cannot take an earlier chunk's alerts with it.
    """
    result: TailResult | None = None
    next_plan: ChunkPlan | None = plan
    while next_plan is not None:
        stored = store_next_chunk(table, delta_log, next_plan, lease, step_started)
        alert_on_health(table, stored.health)  # the chunk has committed: alert on what it showed
        result = stored if result is None else stored.add(result)
        table.refresh_from_db()
        elapsed = (timezone.now() - step_started).total_seconds()
        if not next_plan.more or elapsed >= budget:
            break
        next_plan = plan_next_chunk(delta_log.listing, table.last_seen_version, chunk)
    assert result is not None  # the first plan always stores
    return result


def store_next_chunk(
    table: Table,
    delta_log: DeltaLog,
    plan: ChunkPlan,
    lease: TableLease,
    step_started: datetime,
) -> TailResult:

    tailed = AuditedTable(delta_log, tail_options)

    def audit(history: History, versions: tuple[int, int]) -> AuditResult:
        lease.keep()  # the window is loaded: the audit may take a while
        return run_audit(tailed, history, versions)  # the module's global: tests replace it

    # The chunk's findings can lie before its first version (tailwindow.audit_tail_chunk).
    history, audit_result, findings_from = tailed.audit_window(plan.start, plan.end, audit)
    lease.keep()
    stored = store_history_chunk(
        table,
        history,
        audit_result,
        versions=(plan.start, plan.end),
        more=plan.more,
        lease=lease,
        step_started=step_started,
        findings_from=findings_from,
    )
    if stored.opened or stored.resolved:  # its incidents changed with its findings
        refresh_incidents(
            table, tailed, plan.end, history=history, load_limit=CHUNK_LOAD_LIMIT, lease=lease
        )
    return stored


def record_history_gap(table: Table, gap: HistoryGap, *, lease: TableLease | None = None) -> None:
    """Versions cleaned up before we read them: a `history_gap` finding, and the progress moved
    past them so the tail resumes at the first commit still in the log (gaps.py)."""
    now = timezone.now()
    with transaction.atomic():
        (lease or TableLease(table.id)).guard(
            "recording a history gap",
            last_seen_version=gap.resume_at - 1,
            table_findings_dirty=True,
        )
        upsert_findings(
            table, [history_gap_finding(gap)], scope=(gap.lost_from, gap.lost_from), now=now
        )
    logger.warning(
        "table %s: versions %s..%s were cleaned up before ingestion; resuming at %s",
        table.id,
        gap.lost_from,
        gap.lost_to,
        gap.resume_at,
    )


def table_findings_due(table: Table, now: datetime | None = None) -> bool:
    if not table.table_findings_dirty or table.last_seen_version is None:
        return False
    if table.table_findings_at is None:
        return True
    age = ((now or timezone.now()) - table.table_findings_at).total_seconds()
    return age >= settings.AUDIT_TABLE_FINDINGS_SECONDS


def refresh_table_findings(
    table: Table, delta_log: DeltaLog, end: int | None, *, lease: TableLease | None = None
) -> tuple[int, int]:
    """Recompute the table-level findings over the whole stored history (up to `end`)."""
    tailed = AuditedTable(delta_log, tail_options)
    history = tailed.history(end=end)
    result = run_audit(tailed, history, None)
    findings = [f for f in result.findings if f.kind in TABLE_LEVEL_KINDS]
    if table.key_columns and settings.AUDIT_CHECK_DATA:
        findings += tailed.key_findings(history, result, table.key_columns)
    now = timezone.now()
    with transaction.atomic():
        (lease or TableLease(table.id)).guard(
            "refreshing table-level findings", table_findings_dirty=False, table_findings_at=now
        )
        counts = upsert_findings(table, findings, scope=None, table_level=True, now=now)
    # New commits move the damage, the quiet periods and the writers: every refresh regroups.
    refresh_incidents(table, tailed, end, history=history, lease=lease)
    return counts


def reaudit(table_id: int, *, start: int | None = None, end: int | None = None) -> TailResult:
    """Re-run the audit over stored versions [start, end] and upsert/resolve their findings."""
    table = Table.objects.get(id=table_id)
    if table.last_seen_version is None:
        return TailResult(table_id, table.status, message="nothing stored yet")
    tailed = open_table(check_registered(table.uri), options=tail_options)
    first = tailed.log.listing.commit_versions[0]
    lo = max(start if start is not None else first, first)
    hi = min(end if end is not None else table.last_seen_version, table.last_seen_version)
    _, result, lo = tailed.audit_window(lo, hi, lambda h, v: run_audit(tailed, h, v))
    with transaction.atomic():
        opened, resolved = upsert_findings(table, findings_in(result, lo, hi), scope=(lo, hi))
    more_opened, more_resolved = refresh_table_findings(table, tailed.log, table.last_seen_version)
    return TailResult(
        table_id,
        table.status,
        opened=opened + more_opened,
        resolved=resolved + more_resolved,
        last_seen_version=hi,
    )
