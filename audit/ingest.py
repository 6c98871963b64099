"""The imperative shell around the core: store a table's commits and findings in the database.

This module is the single place that writes Commit and Finding rows (the Celery tail tasks and
the Spark path both call `store_history_chunk`). Crash safety comes from one rule: a chunk's
commits, its findings and the table's progress (`last_seen_version`) are written in ONE
transaction, so the stored progress never runs ahead of the rows, and replays are idempotent
(unique (table, version) + ignore_conflicts; findings upserted by key). The same transaction
recomputes the CommitRollup rows of the touched version buckets, which the zoomed-out timeline
reads instead of every Commit row.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Max, Min, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from audit import models as audit_models
from audit import rollups, tailing
from audit.bulkload import insert_commits
from audit.core import model
from audit.core.audit import TABLE_LEVEL_KINDS, audit_history
from audit.core.errors import DeltaAuditError
from audit.core.gaps import HistoryGap, find_history_gap, history_gap_finding
from audit.core.jsonsafe import clean_text, json_safe
from audit.core.log import DeltaLog, open_log
from audit.core.orphans import SCAN_KINDS
from audit.core.summary import History, history_from_log
from audit.core.tailwindow import load_tail_history
from audit.health_alerts import HEALTH_KINDS
from audit.health_store import record_health
from audit.models import Commit, CommitRollup, Finding, FindingFlip, Table
from audit.paths import check_allowed, check_registered
from audit.progress import backfill_fields

log = logging.getLogger(__name__)

INT64_MAX = 2**63 - 1
MAX_PARTITIONS_PER_COMMIT = 1000  # a commit touching more stores the first ones (sorted)


class LockLost(Exception):
    """Another worker took over this table (our lock expired): the chunk was rolled back."""


@dataclass(frozen=True)
class ChunkPlan:
    start: int  # first version to store
    end: int  # last version to store
    more: bool  # versions after `end` remain (backfill continues)
    latest: int


@dataclass
class TailResult:
    table_id: int
    status: str
    stored: int = 0
    opened: int = 0
    resolved: int = 0
    more: bool = False
    last_seen_version: int | None = None
    message: str = ""

    def line(self) -> str:
        """The one-line summary a task returns."""
        if self.message:
            return f"table {self.table_id}: {self.status}: {self.message}"
        return (
            f"table {self.table_id}: {self.status}, stored {self.stored} commits up to "
            f"v{self.last_seen_version}, findings +{self.opened} resolved {self.resolved}"
            + (", more to backfill" if self.more else "")
        )


# --------------------------------------------------------------------------- registration


def register_table(uri: str, name: str | None = None) -> tuple[Table, bool]:
    """Validate `uri` (allowed root, readable Delta log) and register it. Returns (table, created)."""
    normalised = check_allowed(uri)
    listing = open_log(normalised).listing  # DeltaAuditError if it is not a readable table
    default_name = normalised.rstrip("/").rsplit("/", 1)[-1] or normalised
    table, created = Table.objects.get_or_create(
        uri=normalised,
        defaults={
            "name": (name or default_name)[:200],
            "status": Table.Status.INGESTING,
            "latest_version_in_log": listing.latest_version,
            "first_available_version": listing.first_available_version,
        },
    )
    if not created and name and table.name != name:
        Table.objects.filter(id=table.id).update(name=name[:200])
        table.name = name
    return table, created


# --------------------------------------------------------------------------- planning


def plan_next_chunk(
    listing: model.LogListing, last_seen: int | None, chunk: int
) -> ChunkPlan | None:
    """The next versions to store after `last_seen`, or None when up to date.

    Raises DeltaAuditError when the log no longer continues the stored history: it shrank
    (the table was replaced) or versions we never stored were removed by log cleanup.
    """
    latest = listing.latest_version
    if last_seen is not None and latest < last_seen:
        raise DeltaAuditError(
            f"the log shrank: its latest version is {latest} but version {last_seen} was already "
            "ingested (table deleted and recreated, or its log rewritten)"
        )
    versions = listing.commit_versions
    pending = versions if last_seen is None else [v for v in versions if v > last_seen]
    expected = None if last_seen is None else last_seen + 1
    if expected is not None and expected <= latest and (not pending or pending[0] != expected):
        first = pending[0] if pending else latest + 1
        raise DeltaAuditError(
            f"versions {expected}..{first - 1} were removed from the log (log cleanup) before "
            "they were ingested; the stored history has a gap"
        )
    if not pending:
        return None
    batch = pending[: max(chunk, 1)]
    return ChunkPlan(start=batch[0], end=batch[-1], more=len(pending) > len(batch), latest=latest)


def load_window(log_: DeltaLog, plan: ChunkPlan) -> History:
    """Summaries of the new commits plus the older ones their audit depends on.

    The window is worked out from the log (recorded read versions, and for destructive commits
    without one, the files that survive them): see audit.core.tailwindow. No fixed lookback.
    """
    return load_tail_history(log_, plan.start, plan.end)


def run_audit(history: History, versions: tuple[int, int] | None) -> Any:
    return audit_history(history, check_data=settings.AUDIT_CHECK_DATA, versions=versions)


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
            result = TailResult(table_id, "ok", last_seen_version=table.last_seen_version)
            if table_findings_due(table):
                result.opened, result.resolved = refresh_table_findings(
                    table, log_, table.last_seen_version, lock_token=lock_token
                )
            mark_up_to_date(table, log_.listing, lock_token=lock_token)
            return result
        result = None
        while plan is not None:
            stored = store_next_chunk(table, log_, plan, lock_token, step_started)
            result = stored if result is None else _added(result, stored)
            table.refresh_from_db()
            elapsed = (timezone.now() - step_started).total_seconds()
            if not plan.more or elapsed >= budget:
                break
            plan = plan_next_chunk(log_.listing, table.last_seen_version, chunk)
        if not result.more and table_findings_due(table):
            opened, resolved = refresh_table_findings(
                table, log_, result.last_seen_version, lock_token=lock_token
            )
            result.opened += opened
            result.resolved += resolved
        return result
    except DeltaAuditError as err:
        tailing.forget(table.uri)  # the next tick starts from a full listing
        message = _one_line(str(err))
        mark_error(table, message, lock_token=lock_token, cause=err.cause or "other")
        return TailResult(table_id, "error", message=message)


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


def _added(before: TailResult, after: TailResult) -> TailResult:
    after.stored += before.stored
    after.opened += before.opened
    after.resolved += before.resolved
    return after


def record_history_gap(table: Table, gap: HistoryGap, *, lock_token: str | None = None) -> None:
    """Versions cleaned up before we read them: a `history_gap` finding, and the progress moved
    past them so the tail resumes at the first commit still in the log (gaps.py)."""
    now = timezone.now()
    with transaction.atomic():
        if not _update_table(
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
    findings = [f for f in run_audit(history, None).findings if f.kind in TABLE_LEVEL_KINDS]
    now = timezone.now()
    with transaction.atomic():
        if not _update_table(
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
        opened, resolved = upsert_findings(table, _findings_in(result, lo, hi), scope=(lo, hi))
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
    listing = history.listing
    latest_row = max(rows, key=lambda r: r["version"], default=None)
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
    if latest_row is not None and latest_row["committed_at"] is not None:
        updates["last_commit_at"] = latest_row["committed_at"]
    with transaction.atomic():
        # The conditional UPDATE comes first: on PostgreSQL it row-locks the table, so two
        # writers of the same table serialise here; without the lock we write nothing.
        if not _update_table(table.id, lock_token, **updates):
            raise LockLost(f"table {table.id}: lock lost before storing v{start}..v{end}")
        insert_commits(rows)
        if rows:
            stored = [row["version"] for row in rows]
            refresh_rollups(table.id, min(stored), max(stored))
            record_health(table, history, min(stored), max(stored), more=more)
        opened, resolved = upsert_findings(
            table, _findings_in(audit_result, start, end), scope=(start, end), now=now
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


# --------------------------------------------------------------------------- rollups


def refresh_rollups(
    table_id: int,
    lo: int,
    hi: int,
    *,
    commit_model: type[models.Model] = Commit,
    rollup_model: type[models.Model] = CommitRollup,
) -> int:
    """Recompute the CommitRollup rows of every bucket touching versions [lo, hi].

    One range scan of the (table, version) index over the Commit rows of those whole buckets,
    packed by `audit.rollups` (aggregates, timeline rows, finer cells), then the buckets'
    rollups are replaced. The result depends only
    on the stored rows, so a replayed chunk or a second rebuild cannot double-count. Call it in
    the transaction that stored the commits. The model arguments let a data migration pass its
    historical models. Returns the number of rollup rows written.
    """
    size = audit_models.ROLLUP_SIZE  # read at call time: tests shrink it
    first = min(lo, hi) // size * size
    last = max(lo, hi) // size * size + size - 1
    rows = (
        commit_model.objects.filter(table_id=table_id, version__gte=first, version__lte=last)
        .order_by("version")
        .values_list(*rollups.ROW_FIELDS)
    )
    packed = rollups.pack_rollups(table_id, rows.iterator(chunk_size=10_000), rollup_model, size)
    with transaction.atomic():
        rollup_model.objects.filter(
            table_id=table_id, bucket_start__gte=first, bucket_start__lte=last
        ).delete()
        rollup_model.objects.bulk_create(packed, batch_size=200)
    return len(packed)


def rebuild_rollups(
    table_id: int,
    *,
    commit_model: type[models.Model] = Commit,
    rollup_model: type[models.Model] = CommitRollup,
) -> int:
    """Rebuild all of a table's rollups from its Commit rows (for rows not stored by the ingest:
    tables ingested before rollups existed, bulk loads). Returns the number of rollup rows."""
    bounds = commit_model.objects.filter(table_id=table_id).aggregate(
        lo=Min("version"), hi=Max("version")
    )
    with transaction.atomic():
        rollup_model.objects.filter(table_id=table_id).delete()
        if bounds["lo"] is None:
            return 0
        return refresh_rollups(
            table_id,
            bounds["lo"],
            bounds["hi"],
            commit_model=commit_model,
            rollup_model=rollup_model,
        )


def _min_known(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max_known(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def mark_up_to_date(
    table: Table, listing: model.LogListing, *, lock_token: str | None = None
) -> None:
    _update_table(
        table.id,
        lock_token,
        status=Table.Status.OK,
        last_error="",
        error_cause="",
        last_tail_at=timezone.now(),
        latest_version_in_log=listing.latest_version,
        first_available_version=listing.first_available_version,
        backfill_target_version=None,
        backfill_started_at=None,
        backfill_rate=None,
    )


def mark_error(
    table: Table, message: str, *, lock_token: str | None = None, cause: str = "other"
) -> None:
    log.warning("table %s (%s): %s", table.id, table.uri, message)
    _update_table(
        table.id,
        lock_token,
        status=Table.Status.ERROR,
        last_error=clean_text(message)[:2000],
        error_cause=cause,
        last_tail_at=timezone.now(),
    )


def keep_lock(table_id: int, lock_token: str | None) -> None:
    """Push our lock's expiry forward between the long phases of a step (a huge commit can take
    longer than AUDIT_LOCK_SECONDS to read); stop at once if another worker took the table."""
    if lock_token is None:
        return
    until = timezone.now() + timedelta(seconds=settings.AUDIT_LOCK_SECONDS)
    if not _update_table(table_id, lock_token, locked_until=until):
        raise LockLost(f"table {table_id}: lock lost while tailing; another worker has it")


def _update_table(table_id: int, lock_token: str | None, **fields: Any) -> bool:
    rows = Table.objects.filter(id=table_id)
    if lock_token is not None:
        rows = rows.filter(locked_by=lock_token)
    return rows.update(**fields) == 1


def commit_values(table_id: int, s: model.CommitSummary, audit: Any | None) -> dict[str, Any]:
    """The Commit row (attribute -> value) for one summary and (optionally) its audit.

    JSON columns hold plain Python data here; `insert_commits` serialises them once.
    """
    read_version, read_fact = s.read_version, s.facts.get("read_version", "unknown")
    audited_read = getattr(audit, "read_version", None)
    if audited_read is not None and audited_read != read_version:
        read_version, read_fact = audited_read, getattr(audit, "read_version_fact", "derived")
    concurrent = [int(v) for v in (getattr(audit, "concurrent_versions", None) or [])]
    predicate = s.predicate
    return dict(
        table_id=table_id,
        version=s.version,
        timestamp=_int64(s.timestamp),
        committed_at=_datetime_ms(s.timestamp),
        operation=clean_text(s.operation or "")[:100],
        read_version=_int64(read_version),
        read_version_fact=read_fact,
        isolation_level=clean_text(s.isolation_level)[:40] if s.isolation_level else None,
        isolation_level_fact=s.facts.get("isolation_level", "unknown"),
        blind_append=s.blind_append,
        blind_append_fact=s.facts.get("blind_append", "unknown"),
        engine=s.engine,
        engine_info=clean_text(s.engine_info or "")[:2000],
        txn_id=clean_text(s.txn_id or "")[:200],
        user_id=clean_text(s.user_id or "")[:200],
        user_name=clean_text(s.user_name or "")[:200],
        files_added=min(s.files_added, 2**31 - 1),
        files_removed=min(s.files_removed, 2**31 - 1),
        bytes_added=_int64(s.bytes_added) or 0,
        bytes_removed=_int64(s.bytes_removed) or 0,
        concurrent_versions=concurrent,
        concurrent_count=len(concurrent),
        predicate_raw=clean_text(predicate.raw) if predicate else "",
        predicate_sql=clean_text(predicate.sql or "") if predicate else "",
        operation_parameters=s.operation_parameters,
        operation_metrics=s.operation_metrics,
        partitions=[
            dict(p) for p in sorted(s.partitions_touched, key=repr)[:MAX_PARTITIONS_PER_COMMIT]
        ],
        app_ids=s.app_ids,
        metadata_changed=s.metadata_changed,
        protocol_changed=s.protocol_changed,
        recheck=_recheck(audit),
        facts=dict(s.facts),
    )


def _recheck(audit: Any | None) -> dict[str, Any]:
    """Per concurrent version verdicts, keyed by version (JSON object keys are strings)."""
    verdicts = getattr(audit, "verdicts", None)
    if not verdicts:
        return {}
    if isinstance(verdicts, dict):
        return {str(k): v for k, v in verdicts.items()}
    return {str(getattr(v, "version", i)): v for i, v in enumerate(verdicts)}


# --------------------------------------------------------------------------- findings


def finding_key(kind: str, version: int, related: Iterable[int]) -> str:
    """model.Finding.key as text; long related lists are hashed so the key stays indexable."""
    related_text = ",".join(str(v) for v in related)
    if len(related_text) > 300:
        related_text = "sha1-" + hashlib.sha1(related_text.encode()).hexdigest()
    return f"{kind[:64]}:{version}:{related_text}"


def _findings_in(audit_result: Any, start: int, end: int) -> list[model.Finding]:
    findings = getattr(audit_result, "findings", None) or []
    return [f for f in findings if start <= f.version <= end and f.kind not in TABLE_LEVEL_KINDS]


def upsert_findings(
    table: Table,
    findings: list[model.Finding],
    *,
    scope: tuple[int, int] | None,
    table_level: bool = False,
    kinds: frozenset[str] | None = None,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Insert new findings, refresh re-found ones, resolve those of the scope no longer found.

    The scope is what was re-analysed: commit-level findings with a version in `scope`, or
    (`table_level=True`, scope None) every table-level finding. Only open findings of the
    scope can be resolved; a resolved finding that is found again is reopened.
    Returns (opened, resolved) counts. Call inside a transaction.
    """
    now = now or timezone.now()
    by_key: dict[str, model.Finding] = {}
    for f in findings:
        by_key.setdefault(finding_key(f.kind, f.version, f.related_versions), f)
    rows = Finding.objects.filter(table=table)
    if kinds is not None:  # a producer of its own kinds (the orphan scan): only those
        in_scope = Q(kind__in=kinds)
    elif table_level:
        in_scope = Q(kind__in=TABLE_LEVEL_KINDS)
    else:
        # Scan findings (the orphan scan) and health findings (audit.health_alerts) are not the
        # audit's to resolve.
        in_scope = ~Q(kind__in=TABLE_LEVEL_KINDS | SCAN_KINDS | HEALTH_KINDS) & (
            Q(version__range=scope) if scope else Q()
        )
    existing = {row.key: row for row in rows.filter(in_scope | Q(key__in=list(by_key)))}
    in_scope_ids = set(rows.filter(in_scope).values_list("id", flat=True)) if existing else set()
    flips: list[FindingFlip] = []
    new_rows, changed = [], []
    for key, f in by_key.items():
        row = existing.get(key)
        if row is None:
            new_rows.append(
                Finding(table=table, key=key, first_seen=now, last_seen=now, **finding_fields(f))
            )
            continue
        if row.status != Finding.Status.OPEN:
            flips.append(
                FindingFlip(finding=row, created=now, old_status=row.status, new_status="open")
            )
            row.status, row.resolved_at = Finding.Status.OPEN, None
        for name, value in finding_fields(f).items():
            setattr(row, name, value)
        row.last_seen = now
        changed.append(row)
    stale = [
        row
        for key, row in existing.items()
        if key not in by_key and row.status == Finding.Status.OPEN and row.id in in_scope_ids
    ]
    for row in stale:
        flips.append(
            FindingFlip(finding=row, created=now, old_status="open", new_status="resolved")
        )
        row.status, row.resolved_at = Finding.Status.RESOLVED, now
    created = Finding.objects.bulk_create(new_rows, batch_size=200)
    if any(row.pk is None for row in created):  # backends that do not return ids
        keys = [row.key for row in created]
        created = list(Finding.objects.filter(table=table, key__in=keys))
    flips.extend(
        FindingFlip(finding=row, created=now, old_status="", new_status="open") for row in created
    )
    update_fields = ["status", "resolved_at", "last_seen", *FINDING_FIELDS]
    Finding.objects.bulk_update(changed + stale, update_fields, batch_size=200)
    FindingFlip.objects.bulk_create(flips, batch_size=500)
    return len(created), len(stale)


FINDING_FIELDS = (
    "kind",
    "severity",
    "version",
    "related_versions",
    "confirmed",
    "summary",
    "explanation",
    "witness",
    "details",
)


def finding_fields(f: model.Finding) -> dict[str, Any]:
    return {
        "kind": clean_text(f.kind)[:64],
        "severity": f.severity if f.severity in model.SEVERITY_RANK else "info",
        "version": _int64(f.version) or 0,
        "related_versions": [int(v) for v in f.related_versions],
        "confirmed": bool(f.confirmed),
        "summary": clean_text(f.summary),
        "explanation": clean_text(f.explanation),
        "witness": json_safe(f.witness) if f.witness is not None else None,
        "details": json_safe(f.details or {}),
    }


# --------------------------------------------------------------------------- scheduling probe


def tables_due(now: datetime | None = None) -> list[int]:
    """Tables a tail pass should visit (idle backoff and the "anything new?" probe: polling.py)."""
    from audit.polling import tables_due as due  # noqa: PLC0415

    return due(now)


def _has_commit(uri: str, version: int) -> bool:
    return tailing.has_commit(uri, version)  # one HEAD; errors say True (the tail records them)


# --------------------------------------------------------------------------- value hygiene


def settings_snapshot(state: model.TableState) -> dict[str, Any]:
    protocol = state.protocol
    return json_safe(
        {
            "version": state.version,
            "partition_columns": state.partition_columns,
            "properties": state.properties,
            "protocol": asdict(protocol) if protocol else None,
            "clustering_columns": list(state.clustering_columns),
            "identity_columns": [asdict(c) for c in state.identity_columns],
        }
    )


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "unknown error"


def _int64(value: Any) -> int | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -INT64_MAX <= value <= INT64_MAX else None


def _datetime_ms(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
