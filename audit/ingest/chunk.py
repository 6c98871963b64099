"""Storing one chunk of a table's history: its commits, findings, rollups, health and progress.

Crash safety comes from one rule: a chunk's commits, its findings and the table's progress
(`last_seen_version`) are written in ONE transaction, so the stored progress never runs ahead
of the rows, and replays are idempotent (unique (table, version) + ignore_conflicts; findings
upserted by key). The same transaction recomputes the CommitRollup rows of the touched version
buckets, which the zoomed-out timeline reads instead of every Commit row, and the stored health.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from audit.core.history.summary import History
from audit.ingest.bulkload import insert_commits
from audit.ingest.commits import commit_values, settings_snapshot
from audit.ingest.findings import findings_in, upsert_findings
from audit.ingest.health_store import record_health
from audit.ingest.lease import TableLease
from audit.ingest.plan import TailResult
from audit.ingest.progress import backfill_fields
from audit.ingest.rollup_store import refresh_rollups
from audit.models import Table


def store_history_chunk(
    table: Table,
    history: History,
    audit_result: Any,
    *,
    versions: tuple[int, int],
    more: bool = False,
    lease: TableLease | None = None,
    step_started: datetime | None = None,
    findings_from: int | None = None,
) -> TailResult:
    """Store the commits of `history` in [start, end], their findings and the table's progress.

    The findings replaced are those of [findings_from, end] (default: start): the audit must
    have covered those versions (tailwindow.audit_tail_chunk says how far back).

    All in one transaction, guarded by the table's `lease` (none: a caller writing alone): the
    progress update applies only while it holds, else everything is rolled back (LockLost).
    The result's `health` is for the caller's alerts, raised once this has committed.
    """
    start, end = versions
    summaries = [s for s in history.summaries if start <= s.version <= end]
    audits = getattr(audit_result, "commits", {}) or {}
    rows = [commit_values(table.id, s, audits.get(s.version)) for s in summaries]
    now = timezone.now()
    health = None
    updates = _progress(table, history, end, rows, more=more, now=now, step_started=step_started)
    with transaction.atomic():
        # The guarded UPDATE comes first: two writers of one table serialise on it.
        (lease or TableLease(table.id)).guard(f"storing v{start}..v{end}", **updates)
        insert_commits(rows)
        if rows:
            stored = [row["version"] for row in rows]
            refresh_rollups(table.id, min(stored), max(stored))
            health = record_health(table, history, min(stored), max(stored), more=more)
        lo = start if findings_from is None else min(findings_from, start)
        opened, resolved = upsert_findings(
            table, findings_in(audit_result, lo, end), scope=(lo, end), now=now
        )
    return TailResult(
        table.id,
        updates["status"],
        stored=len(rows),
        opened=opened,
        resolved=resolved,
        more=more,
        last_seen_version=end,
        health=health,
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
