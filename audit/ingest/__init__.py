"""The imperative shell around the core: store a table's commits and findings in the database.

This package is the single place that writes Commit and Finding rows (the Celery tail tasks and
the Spark path both call `store_history_chunk`). Crash safety comes from one rule: a chunk's
commits, its findings and the table's progress (`last_seen_version`) are written in ONE
transaction, so the stored progress never runs ahead of the rows, and replays are idempotent
(unique (table, version) + ignore_conflicts; findings upserted by key). The same transaction
recomputes the CommitRollup rows of the touched version buckets, which the zoomed-out timeline
reads instead of every Commit row.

This module is the tail step itself; the parts it writes with live beside it:
`tables` (registration, the table row and its lock), `plan` (which versions next),
`commits` (Commit row values), `findings` (upserting Finding rows), `rollup_store`
(CommitRollup rows). Every name is importable from `audit.ingest` as before. The step calls
`run_audit` and `upsert_findings` through this module's globals, so a test can replace them here.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from audit.core.audit import audit_history, key_findings
from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.summary import History, history_from_log
from audit.core.history.tailwindow import load_tail_history
from audit.core.integrity.gaps import HistoryGap, find_history_gap, history_gap_finding
from audit.core.jsonsafe import clean_text, json_safe
from audit.core.log import DeltaLog, open_log
from audit.core.vocab import TABLE_LEVEL_KINDS, StorageCause
from audit.health.store import record_health
from audit.ingest.bulkload import insert_commits
from audit.ingest.commits import (
    INT64_MAX,
    MAX_PARTITIONS_PER_COMMIT,
    commit_values,
    datetime_ms,
    int64,
    settings_snapshot,
)
from audit.ingest.findings import (
    FINDING_FIELDS,
    finding_fields,
    finding_key,
    findings_in,
    upsert_findings,
)
from audit.ingest.plan import ChunkPlan, TailResult, plan_next_chunk
from audit.ingest.rollup_store import rebuild_rollups, refresh_rollups
from audit.ingest.tables import (
    LockLost,
    keep_lock,
    mark_error,
    mark_up_to_date,
    register_table,
    update_table,
)
from audit.models import Table
from audit.tail import logs as tailing
from audit.tail.progress import backfill_fields
from audit.trust.paths import allowed_roots, check_registered

__all__ = [
    "FINDING_FIELDS",
    "INT64_MAX",
    "MAX_PARTITIONS_PER_COMMIT",
    "TABLE_LEVEL_KINDS",
    "ChunkPlan",
    "LockLost",
    "TailResult",
    "clean_text",
    "commit_values",
    "datetime_ms",
    "finding_fields",
    "finding_key",
    "findings_in",
    "int64",
    "json_safe",
    "keep_lock",
    "load_window",
    "mark_error",
    "mark_up_to_date",
    "plan_next_chunk",
    "reaudit",
    "rebuild_rollups",
    "record_history_gap",
    "refresh_rollups",
    "refresh_table_findings",
    "register_table",
    "run_audit",
    "settings_snapshot",
    "store_history_chunk",
    "store_next_chunk",
    "table_findings_due",
    "tables_due",
    "tail_once",
    "update_table",
    "upsert_findings",
]

log = logging.getLogger(__name__)


def load_window(log_: DeltaLog, plan: ChunkPlan) -> History:
    """Summaries of the new commits plus the older ones their audit depends on.

    The window is worked out from the log (recorded read versions, and for destructive commits
    without one, the files that survive them): see audit.core.history.tailwindow. No fixed lookback.
    """
    return load_tail_history(log_, plan.start, plan.end)


def run_audit(history: History, versions: tuple[int, int] | None) -> Any:
    return audit_history(
        history,
        check_data=settings.AUDIT_CHECK_DATA,
        versions=versions,
        read_roots=allowed_roots(),  # the witness reads data files only inside them
        sample_rows=settings.AUDIT_WITNESS_SAMPLE_ROWS,
    )


# --------------------------------------------------------------------------- one tail step


def tail_once(
    table_id: int, *, lock_token: str | None = None, chunk: int | None = None
) -> TailResult:
    """Store the next chunk(s) of a table's new commits and audit them, one transaction each.

    With the default chunk size, a backfill step goes on to further chunks with the same log
    listing (listing a 100k-commit `_delta_log` costs as much as storing a chunk) until
    AUDIT_BACKFILL_STEP_SECONDS have passed; an explicit `chunk` stores exactly one chunk.
    """
    table = Table.objects.get(id=table_id)
    if table.status == Table.Status.PAUSED:
        return TailResult(table_id, "paused", message="paused; not tailed")
    budget = 0.0 if chunk else settings.AUDIT_BACKFILL_STEP_SECONDS
    chunk = chunk or settings.AUDIT_BACKFILL_CHUNK
    step_started = timezone.now()
    try:
        # The roots are enforced on every read; the log is kept between ticks (tailing.py).
        log_ = tailing.open_log(check_registered(table.uri))
        gap = find_history_gap(log_.listing, table.last_seen_version)
        if gap is not None:
            record_history_gap(table, gap, lock_token=lock_token)
            table.refresh_from_db()
        plan = plan_next_chunk(log_.listing, table.last_seen_version, chunk)
        if plan is None:
            return _idle_step(table, log_, lock_token)
        result = _store_chunks(table, log_, plan, lock_token, step_started, chunk, budget)
        if not result.more and table_findings_due(table):
            opened, resolved = refresh_table_findings(
                table, log_, result.last_seen_version, lock_token=lock_token
            )
            result.opened += opened
            result.resolved += resolved
        return result
    except DeltaAuditError as err:
        tailing.forget(table.uri)  # the next tick starts from a full listing
        message = one_line(str(err))
        mark_error(table, message, lock_token=lock_token, cause=err.cause or StorageCause.OTHER)
        return TailResult(table_id, "error", message=message)


def _idle_step(table: Table, log_: DeltaLog, lock_token: str | None) -> TailResult:
    """Nothing new to store: refresh the table-level findings if due, record the check."""
    result = TailResult(table.id, "ok", last_seen_version=table.last_seen_version)
    if table_findings_due(table):
        result.opened, result.resolved = refresh_table_findings(
            table, log_, table.last_seen_version, lock_token=lock_token
        )
    mark_up_to_date(table, log_.listing, lock_token=lock_token)
    return result


def _store_chunks(
    table: Table,
    log_: DeltaLog,
    plan: ChunkPlan,
    lock_token: str | None,
    step_started: datetime,
    chunk: int,
    budget: float,
) -> TailResult:
    """Store chunk after chunk with one listing until none is left or `budget` seconds passed."""
    result: TailResult | None = None
    next_plan: ChunkPlan | None = plan
    while next_plan is not None:
        stored = store_next_chunk(table, log_, next_plan, lock_token, step_started)
        result = stored if result is None else stored.add(result)
        table.refresh_from_db()
        elapsed = (timezone.now() - step_started).total_seconds()
        if not next_plan.more or elapsed >= budget:
            break
        next_plan = plan_next_chunk(log_.listing, table.last_seen_version, chunk)
    assert result is not None  # the first plan always stores
    return result


def store_next_chunk(
    table: Table,
    log_: DeltaLog,
    plan: ChunkPlan,
    lock_token: str | None,
    step_started: datetime,
) -> TailResult:
    history = load_window(log_, plan)
    keep_lock(table.id, lock_token)
    audit_result = run_audit(history, (plan.start, plan.end))
    keep_lock(table.id, lock_token)
    return store_history_chunk(
        table,
        history,
        audit_result,
        versions=(plan.start, plan.end),
        more=plan.more,
        lock_token=lock_token,
        step_started=step_started,
    )


def record_history_gap(table: Table, gap: HistoryGap, *, lock_token: str | None = None) -> None:
    """Versions cleaned up before we read them: a `history_gap` finding, and the progress moved
    past them so the tail resumes at the first commit still in the log (gaps.py)."""
    now = timezone.now()
    with transaction.atomic():
        if not update_table(
            table.id,
            lock_token,
            last_seen_version=gap.resume_at - 1,
            table_findings_dirty=True,
        ):
            raise LockLost(f"table {table.id}: lock lost before recording a history gap")
        upsert_findings(
            table, [history_gap_finding(gap)], scope=(gap.lost_from, gap.lost_from), now=now
        )
    log.warning(
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
    table: Table, log_: DeltaLog, end: int | None, *, lock_token: str | None = None
) -> tuple[int, int]:
    """Recompute the table-level findings over the whole stored history (up to `end`)."""
    history = history_from_log(log_, end=end)
    result = run_audit(history, None)
    findings = [f for f in result.findings if f.kind in TABLE_LEVEL_KINDS]
    if table.key_columns and settings.AUDIT_CHECK_DATA:
        findings += key_findings(history, result, table.key_columns, allowed_roots())
    now = timezone.now()
    with transaction.atomic():
        if not update_table(
            table.id, lock_token, table_findings_dirty=False, table_findings_at=now
        ):
            raise LockLost(f"table {table.id}: lock lost before refreshing table-level findings")
        return upsert_findings(table, findings, scope=None, table_level=True, now=now)


def reaudit(table_id: int, *, start: int | None = None, end: int | None = None) -> TailResult:
    """Re-run the audit over stored versions [start, end] and upsert/resolve their findings."""
    table = Table.objects.get(id=table_id)
    if table.last_seen_version is None:
        return TailResult(table_id, table.status, message="nothing stored yet")
    log_ = open_log(check_registered(table.uri))
    first = log_.listing.commit_versions[0]
    lo = max(start if start is not None else first, first)
    hi = min(end if end is not None else table.last_seen_version, table.last_seen_version)
    plan = ChunkPlan(start=lo, end=hi, more=False, latest=log_.listing.latest_version)
    history = load_window(log_, plan)
    result = run_audit(history, (lo, hi))
    with transaction.atomic():
        opened, resolved = upsert_findings(table, findings_in(result, lo, hi), scope=(lo, hi))
    more_opened, more_resolved = refresh_table_findings(table, log_, table.last_seen_version)
    return TailResult(
        table_id,
        table.status,
        opened=opened + more_opened,
        resolved=resolved + more_resolved,
        last_seen_version=hi,
    )


# --------------------------------------------------------------------------- writing


def store_history_chunk(
    table: Table,
    history: History,
    audit_result: Any,
    *,
    versions: tuple[int, int],
    more: bool = False,
    lock_token: str | None = None,
    step_started: datetime | None = None,
) -> TailResult:
    """Store the commits of `history` in [start, end], their findings and the table's progress.

    All in one transaction. With `lock_token`, the progress update only applies while this
    worker still holds the table's lock; otherwise everything is rolled back (LockLost).
    """
    start, end = versions
    summaries = [s for s in history.summaries if start <= s.version <= end]
    audits = getattr(audit_result, "commits", {}) or {}
    rows = [commit_values(table.id, s, audits.get(s.version)) for s in summaries]
    now = timezone.now()
    updates = _progress(table, history, end, rows, more=more, now=now, step_started=step_started)
    with transaction.atomic():
        # The conditional UPDATE comes first: on PostgreSQL it row-locks the table, so two
        # writers of the same table serialise here; without the lock we write nothing.
        if not update_table(table.id, lock_token, **updates):
            raise LockLost(f"table {table.id}: lock lost before storing v{start}..v{end}")
        insert_commits(rows)
        if rows:
            stored = [row["version"] for row in rows]
            refresh_rollups(table.id, min(stored), max(stored))
            record_health(table, history, min(stored), max(stored), more=more)
        opened, resolved = upsert_findings(
            table, findings_in(audit_result, start, end), scope=(start, end), now=now
        )
    return TailResult(
        table.id,
        updates["status"],
        stored=len(rows),
        opened=opened,
        resolved=resolved,
        more=more,
        last_seen_version=end,
    )


def _progress(
    table: Table,
    history: History,
    end: int,
    rows: list[dict[str, Any]],
    *,
    more: bool,
    now: datetime,
    step_started: datetime | None,
) -> dict[str, Any]:
    """The table row's fields after storing a chunk up to `end` (progress never goes back)."""
    listing = history.listing
    updates: dict[str, Any] = {
        "last_seen_version": Greatest(Coalesce("last_seen_version", -1), end),
        "latest_version_in_log": listing.latest_version,
        "first_available_version": listing.first_available_version,
        "status": Table.Status.BACKFILLING if more else Table.Status.OK,
        "last_error": "",
        "error_cause": "",
        "last_tail_at": now,
        "settings_snapshot": settings_snapshot(history.state),
        "table_findings_dirty": True,
        **backfill_fields(table, listing, end, more=more, now=now, step_started=step_started),
    }
    latest_row = max(rows, key=lambda r: r["version"], default=None)
    if latest_row is not None and latest_row["committed_at"] is not None:
        updates["last_commit_at"] = latest_row["committed_at"]
    return updates


# --------------------------------------------------------------------------- scheduling probe


def tables_due(now: datetime | None = None) -> list[int]:
    """Tables a tail pass should visit (idle backoff and the "anything new?" probe: polling.py)."""
    from audit.tail.polling import tables_due as due  # noqa: PLC0415

    return due(now)


def _has_commit(uri: str, version: int) -> bool:
    return tailing.has_commit(uri, version)  # one HEAD; errors say True (the tail records them)
