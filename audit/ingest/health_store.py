"""Keeps the stored health (audit.health.models) current as the tail stores commits.

`record_health` is the one hook: `audit.ingest.chunk.store_history_chunk` calls it inside the
same transaction that stores a chunk of commits, so health rows never run ahead of (or behind)
the commits. It writes no findings: it returns what the alerting package needs (the changes,
the health fields), and the caller hands that on after the transaction commits. Per chunk it
costs one re-read of the chunk's own commit files (for the per-version points) and, when the
chunk is the last one of a backfill, one tombstone replay from the newest checkpoint (for the
full health document). Requests never replay the log for the latest version: they read
`TableHealth`."""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.core.errors import DeltaAuditError
from audit.core.health.changes import changes_from_history
from audit.core.health.compute import (
    compute_health,
    file_totals,
    listing_outdates,
    log_sizes,
    small_file_limit,
    totals_fit,
)
from audit.core.health.file_totals import FileTotals
from audit.core.health.tombstones import snapshot_from_history
from audit.core.history.state_cache import KeptFiles
from audit.core.history.summary import History
from audit.core.jsonsafe import json_safe
from audit.core.log import LOG_DIR, DeltaLog, commit_file_name, parse_commit
from audit.core.log.listing import pointed_version
from audit.core.model import LogListing, TableState
from audit.core.numbers import log_int
from audit.core.runs.table import AuditedTable
from audit.core.runs.unpublished import table_publish_lag
from audit.health.models import HealthPoint, TableChange, TableHealth
from audit.ingest.bulkload import insert_rows
from audit.ingest.columns import fit_columns
from audit.models import Table
from audit.reads.activity import stored_activity

log = logging.getLogger(__name__)
BIG_COMMIT_BYTES = 16 * 1024 * 1024  # re-parsing a 100 MB commit per chunk costs seconds


@dataclass
class HealthOutcome:
    """What storing a chunk's health showed, for the alerts raised after it commits."""

    changes: list[dict[str, Any]] = field(default_factory=list)  # schema/protocol changes
    fields: dict[str, Any] | None = None  # the stored TableHealth fields, when recomputed


def record_health(
    table: Table, history: History, start: int, end: int, *, more: bool = False
) -> HealthOutcome:
    """Store health points and changes for versions [start, end]; the full health when done.

    Call inside the transaction that stored those commits. A log problem here is logged and
    skipped: health must never stop the audit's own ingest. What was stored before the problem
    is still returned, so its alerts are raised.
    """
    outcome = HealthOutcome()
    try:
        chunk_bytes = store_points(table.id, history, start, end)
        outcome.changes = store_changes(table.id, history, start, end)
        if not more and history.state.version == end:
            health = store_table_health(table.id, history, (start, chunk_bytes))
            outcome.fields = health_fields(health)
    except DeltaAuditError as err:
        log.warning("table %s: health not updated for v%s..v%s: %s", table.id, start, end, err)
    return outcome


def store_points(table_id: int, history: History, start: int, end: int) -> int:
    """num_files / total_bytes / small_files of every version in [start, end].

    Exact at `end` (the replayed state), then walked backwards through the chunk's commits:
    a version's numbers are the next one's minus that commit's adds plus its removes. Only
    commits after `start` are parsed again; one above BIG_COMMIT_BYTES is undone from its
    summary instead (counts exact, bytes and small files from its data-changing files).
    Returns the bytes of the chunk's commit files (the log size, kept incrementally).
    """
    state = history.state
    if state.version != end:
        return 0
    limit = small_file_limit(state.properties)
    sizes = [f.size or 0 for f in state.files.values()]
    current = [len(sizes), sum(sizes), sum(1 for s in sizes if s < limit)]
    log_ = history.get_log()
    versions = log_.listing.commit_versions
    chunk = versions[bisect.bisect_left(versions, start) : bisect.bisect_right(versions, end)]
    data_of: dict[int, bytes] = {}
    chunk_bytes = 0
    for version in chunk:
        data = log_.store.read_bytes(f"{LOG_DIR}/{commit_file_name(version)}")
        chunk_bytes += len(data)
        if version > start:
            data_of[version] = data
    rows: list[dict[str, Any]] = []
    for version in reversed(chunk):
        summary = history.summary(version)
        point = {
            "table_id": table_id,
            "version": version,
            "timestamp": summary.timestamp if summary is not None else None,
            "num_files": current[0],
            "total_bytes": current[1],  # exact here; two adds of 2**62 are stored clamped
            "small_files": current[2],
        }
        rows.append(fit_columns(HealthPoint, point))
        if version == start:
            break
        limit = small_file_limit(history.properties_at(version))
        data = data_of.pop(version)
        if len(data) > BIG_COMMIT_BYTES and summary is not None:
            _undo_summary(current, summary, limit)
        else:
            _undo_commit(current, parse_commit(version, data), limit)
    insert_rows(HealthPoint, rows)
    return chunk_bytes


def _undo_commit(current: list[int], commit: Any, limit: int) -> None:
    for add in commit.adds:
        current[0] -= 1
        current[1] -= add.size or 0
        current[2] -= (add.size or 0) < limit
    for remove in commit.removes:
        current[0] += 1
        current[1] += remove.size or 0
        current[2] += (remove.size or 0) < limit


def _undo_summary(current: list[int], s: Any, limit: int) -> None:
    added = s.files_added + len(s.compacted_paths)
    removed = len(s.removed_paths_all)
    current[0] += removed - added
    current[1] += s.bytes_removed - s.bytes_added
    if s.files_added and s.bytes_added / s.files_added < limit:
        current[2] -= s.files_added
    if s.files_removed and s.bytes_removed / s.files_removed < limit:
        current[2] += s.files_removed
    current[2] = max(min(current[2], current[0]), 0)


def store_changes(table_id: int, history: History, start: int, end: int) -> list[dict[str, Any]]:
    """The changes of versions start..end, stored and returned as stored: the one sanitiser's
    JSON (a log's NUL breaks PostgreSQL's text and jsonb), a timestamp outside 64 bits as
    none."""
    changes = json_safe([c for c in changes_from_history(history) if start <= c["version"] <= end])
    rows = [
        TableChange(
            table_id=table_id,
            version=c["version"],
            timestamp=log_int(c["timestamp"], signed=True),
            kind=c["kind"],
            before=c["before"],
            after=c["after"],
            diff=c["diff"],
            summary=c["summary"],
        )
        for c in changes
    ]
    TableChange.objects.bulk_create(rows, ignore_conflicts=True)
    return changes


def store_table_health(
    table_id: int, history: History, chunk: tuple[int, int] | None = None
) -> dict[str, Any]:
    """Compute and store the latest health. With `chunk` = (first version, bytes) of the
    commits just stored, the log size is the previous one plus theirs when nothing was
    cleaned up in between, so a steady tail never lists a million-file `_delta_log` with sizes.
    """
    # Keyed by the log too: a kept replay must never meet another table's log under an id.
    key = (table_id, history.get_log().uri)
    snapshot = snapshot_from_history(history, _kept_store("tombstones"), key)
    listing = history.listing
    prev = TableHealth.objects.filter(table_id=table_id).values("version", "data").first()
    prev_log = (prev or {}).get("data", {}).get("log") or {}
    incremental = (
        chunk is not None
        and prev is not None
        and prev["version"] == chunk[0] - 1
        and listing.commit_versions
        and prev_log.get("oldest_version") == listing.commit_versions[0]
        and isinstance(prev_log.get("bytes"), int)
    )
    sizes = {} if incremental else log_sizes(history.get_log())
    totals = _file_totals(table_id, snapshot.state)
    health = compute_health(snapshot, listing, sizes, stored_activity(table_id), totals)
    if incremental:
        assert chunk is not None
        health["log"]["bytes"] = prev_log["bytes"] + chunk[1]
    lag = table_publish_lag(history.get_log(), history.state.protocol, int(time.time() * 1000))
    if lag is not None:
        health["publish_lag"] = lag
    fields = health_fields(health)
    # One UPDATE when a row exists (read above): update_or_create's savepoint, locking read
    # and update were 4 of the ~22 queries of a steady tail's stored commit.
    if prev is None or not TableHealth.objects.filter(table_id=table_id).update(**fields):
        TableHealth.objects.update_or_create(table_id=table_id, defaults=fields)
    checked = (
        (table_id, history.get_log().uri),
        _listing_signature(listing, history.state.version),
    )
    transaction.on_commit(lambda: _remember_checked(*checked))
    return health


# Per (table id, log URI), the listing (`_listing_signature`) the stored health was last known
# to match in this process, so an idle step of an unchanged table reads nothing (an idle fleet
# is stepped table after table, all day).
_checked: dict[tuple[int, str], tuple[Any, ...]] = {}
_CHECKED_MAX = 100_000


def _listing_signature(listing: LogListing, version: int) -> tuple[Any, ...]:
    """What of the listing the health at `version` depends on (LISTING_PARTS), in short."""
    first = listing.commit_versions[0] if listing.commit_versions else None
    return (version, first, max(listing.checkpoints, default=None), pointed_version(listing))


def listing_health_due(table_id: int, log_: DeltaLog, version: int | None) -> bool:
    """Whether the stored health of `version` (the table's last stored one) is behind what the
    listing says of that version: a checkpoint, its pointer or a log cleanup came without a
    commit, and the health would wait for the next commit (a day, on a daily batch table)."""
    if version is None or version < 0:
        return False
    listing, key = log_.listing, (table_id, log_.uri)
    signature = _listing_signature(listing, version)
    if _checked.get(key) == signature:
        return False
    row = (
        TableHealth.objects.filter(table_id=table_id)
        .values_list("version", "data__checkpoint", "data__log")
        .first()
    )
    # No health stored for the version (a backfill under way, or its health failed): the
    # chunk that stores it will compute it.
    due = row is not None and row[0] == version
    due = due and listing_outdates(
        {"version": version, "checkpoint": row[1], "log": row[2]}, listing
    )
    if not due:
        _remember_checked(key, signature)
    return due


def _remember_checked(key: tuple[int, str], signature: tuple[Any, ...]) -> None:
    if len(_checked) >= _CHECKED_MAX:
        _checked.clear()
    _checked[key] = signature


def store_listing_health(table_id: int, log_: DeltaLog, version: int) -> HealthOutcome:
    """Recompute and store the health of `version` against the log's current listing. Call
    inside a transaction; a log problem is logged and stores nothing, as in `record_health`."""
    outcome = HealthOutcome()
    try:
        history = AuditedTable(log_).history(start=version, end=version)
        outcome.fields = health_fields(store_table_health(table_id, history))
    except DeltaAuditError as err:
        log.warning("table %s: health not refreshed at v%s: %s", table_id, version, err)
        # Not again every idle step: the next commit or listing change asks again.
        _remember_checked((table_id, log_.uri), _listing_signature(log_.listing, version))
    return outcome


# What this process keeps of each table between its tail steps (audit.core.history.state_cache):
# "totals", the per-file sums of the health; "tombstones", the replayed tombstones.
_kept: dict[str, KeptFiles] = {}


def _kept_store(name: str) -> KeptFiles | None:
    if settings.AUDIT_STATE_CACHE_FILES <= 0:
        return None
    found = _kept.get(name)
    if found is None:
        found = _kept.setdefault(name, KeptFiles(settings.AUDIT_STATE_CACHE_FILES))
    return found


def _file_totals(table_id: int, state: TableState) -> FileTotals:
    """The per-file sums of the health of `state`: those this process stored last for the
    table, moved by the files that differ (a step's commits change a few of 20,000), else
    summed afresh. Kept per process with the files they sum (AUDIT_STATE_CACHE_FILES)."""
    kept = _kept_store("totals")
    previous = kept.take(table_id) if kept is not None else None
    if previous is not None and totals_fit(previous[1], state):
        files, totals = previous
        totals.advance(files, state.files)
    else:
        totals = file_totals(state)
    if kept is not None:
        kept.put(table_id, (dict(state.files), totals), len(state.files))
    return totals


def health_fields(health: dict[str, Any]) -> dict[str, Any]:
    """The TableHealth row of a health document, its numbers clamped into their columns (a
    staged commit named 99999999999999999999 was a lag past any bigint)."""
    n = health["num_files"]
    return fit_columns(
        TableHealth,
        {
            "version": health["version"],
            "computed_at": timezone.now(),
            "data": health,
            "num_files": n,
            "total_bytes": health["total_bytes"],
            "small_files": health["small_files"]["count"],
            "small_file_ratio": health["small_files"]["count"] / n if n else 0.0,
            "vacuumable_bytes": health["tombstones"]["vacuumable_bytes"],
            "checkpoint_lag": health["checkpoint"]["commits_since"],
            # Catalog-managed / coordinated-commits tables only (0 for the others).
            "publish_lag_versions": (health.get("publish_lag") or {}).get("versions") or 0,
            "publish_lag_seconds": (health.get("publish_lag") or {}).get("seconds") or 0.0,
        },
    )
