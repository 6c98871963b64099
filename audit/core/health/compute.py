"""Table health of one version, computed from the log alone (no data file is read).

What Delta viewers show first (file counts and sizes, small files, partition skew, what VACUUM
would reclaim, checkpoint lag), plus recommendations whose `when` comes from this table's own
commit hours: OPTIMIZE is scheduled away from the hours UPDATE/DELETE/MERGE commit whenever
the conflict matrix, resolved for this table's settings, says the two can conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from audit.core.conflicts.matrix import conflict_matrix, normalize_isolation_level, verdict_for
from audit.core.health.file_totals import FileTotals
from audit.core.health.tombstones import Snapshot, snapshot_at
from audit.core.history.summary import History
from audit.core.log import LOG_DIR, DeltaLog
from audit.core.log.listing import pointed_version, pointer_behind
from audit.core.model import CommitSummary, LogListing, TableState
from audit.core.numbers import log_int
from audit.core.operations import classify_operation, uses_zorder
from audit.core.vocab import IsolationLevel, OperationClass, Verdict

MIB = 1024 * 1024
DEFAULT_TARGET_FILE_SIZE = 128 * MIB
DAY_MS = 24 * 3600 * 1000
HOUR_MS = 3600 * 1000
DEFAULT_DELETED_FILE_RETENTION = "interval 7 days"
DEFAULT_LOG_RETENTION = "interval 30 days"
DEFAULT_CHECKPOINT_INTERVAL = 10  # Delta's default (Spark); delta-rs uses 100
# Recommendation thresholds: enough small files to matter, and a real share of the table.
SMALL_FILES_MIN = 10
SMALL_FILES_RATIO = 0.25
VACUUM_SHARE = 0.10
VACUUM_MIN_BYTES = 1024 * MIB
SKEW_LIMIT = 10.0
QUIET_HOURS = 3  # length of the suggested maintenance window
ACTIVITY_DAYS = 30  # how far back the commit-hour profile looks
ACTIVITY_SUMMARIES = 100_000  # and at most this many recent commits
_ANY_TIME = "any time (no commit times known)"

_UNITS = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": MIB,
    "mb": MIB,
    "g": 1024 * MIB,
    "gb": 1024 * MIB,
}
_INTERVAL_UNITS_MS = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": DAY_MS,
    "week": 7 * DAY_MS,
}


# --------------------------------------------------------------------------- settings


def parse_bytes(value: str | None) -> int | None:
    """'134217728', '128mb', '1g' -> bytes; None when absent or unreadable."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9]+)\s*([a-zA-Z]*)\s*", str(value))
    if not m:
        return None
    unit = _UNITS.get(m.group(2).lower() or "b")
    return _scaled(m.group(1), unit)


def parse_interval_ms(value: str | None) -> int | None:
    """Delta's 'interval 7 days' (also '168 hours', 'interval 1 week') -> milliseconds."""
    if value is None:
        return None
    m = re.fullmatch(
        r"\s*(?:interval\s+)?([0-9]+)\s*([a-zA-Z]+?)s?\s*", str(value), re.IGNORECASE | re.ASCII
    )
    if not m:
        return None
    unit = _INTERVAL_UNITS_MS.get(m.group(2).lower())
    return _scaled(m.group(1), unit)


def _scaled(digits: str, unit: int | None) -> int | None:
    # A table property is log text: a value past 64 bits (before or after the unit) is unknown.
    number = log_int(digits)
    return log_int(number * unit) if number is not None and unit else None


def target_file_size(properties: dict[str, str]) -> int:
    return parse_bytes(properties.get("delta.targetFileSize")) or DEFAULT_TARGET_FILE_SIZE


def small_file_limit(properties: dict[str, str]) -> int:
    """Files below a quarter of the target size count as small."""
    return target_file_size(properties) // 4


def deleted_file_retention_ms(properties: dict[str, str]) -> int:
    raw = properties.get("delta.deletedFileRetentionDuration")
    parsed = parse_interval_ms(raw)
    return parsed if parsed is not None else 7 * DAY_MS


# --------------------------------------------------------------------------- activity


@dataclass
class Activity:
    """When this table's writers commit: per UTC hour, all commits and UPDATE/DELETE/MERGE."""

    all_hours: list[int] = field(default_factory=lambda: [0] * 24)
    udm_hours: list[int] = field(default_factory=lambda: [0] * 24)
    zorder_used: bool = False

    def add(self, timestamp: int | None, family: str | None, zorder: bool = False) -> None:
        if timestamp is not None:
            # The UTC hour by arithmetic (a datetime per commit was most of this loop): the same
            # value as datetime's in its range, and an answer past year 9999, where a log's
            # timestamp may be (datetime would raise there).
            hour = int(timestamp) // HOUR_MS % 24
            self.all_hours[hour] += 1
            if family == OperationClass.UDM:
                self.udm_hours[hour] += 1
        self.zorder_used = self.zorder_used or zorder


def activity_from(summaries: list[CommitSummary], until: int | None = None) -> Activity:
    """The commit-hour profile of the last ACTIVITY_DAYS days up to `until` (ms)."""
    activity = Activity()
    timed = [s.timestamp for s in summaries if s.timestamp is not None]
    end = until if until is not None else (max(timed) if timed else 0)
    since = end - ACTIVITY_DAYS * DAY_MS
    # Most commits repeat a few (operation, parameters) shapes (appends): classify each once.
    families: dict[tuple[Any, ...], tuple[str | None, bool]] = {}
    for s in summaries:
        if s.timestamp is None or not since <= s.timestamp <= end:
            continue
        try:
            # Text, not orjson's bytes: a key kept for each distinct parameter set would hold
            # its 4 KB write buffer (~85 MB over 100k commits of unique MERGE predicates).
            params = orjson.dumps(s.operation_parameters, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:  # not JSON-serialisable: classify directly
            params = None
        key = (s.operation, s.blind_append, params)
        known = families.get(key) if params is not None else None
        if known is None:
            family = classify_operation(s.operation, s.blind_append, s.operation_parameters)
            known = (
                family,
                family == OperationClass.OPTIMIZE and uses_zorder(s.operation_parameters),
            )
            if params is not None:
                families[key] = known
        activity.add(s.timestamp, *known)
    return activity


def quiet_window(hours: list[int], avoid: list[int] | None = None) -> tuple[int, int]:
    """The QUIET_HOURS-long UTC window (start hour, commits in it) with the fewest commits.

    With `avoid`, its hours weigh 100x: the window dodges them first, then ordinary traffic.
    """
    avoid = avoid or [0] * 24
    best: tuple[int, int] | None = None
    best_cost = None
    for start in range(24):
        span = [(start + i) % 24 for i in range(QUIET_HOURS)]
        cost = sum(hours[h] + 100 * avoid[h] for h in span)
        if best_cost is None or cost < best_cost:
            best, best_cost = (start, sum(hours[h] for h in span)), cost
    assert best is not None
    return best


def _window_text(start: int) -> str:
    return f"{start:02d}:00-{(start + QUIET_HOURS) % 24:02d}:00 UTC"


# --------------------------------------------------------------------------- health


def health_at(
    log: DeltaLog,
    version: int | None = None,
    activity: Activity | None = None,
) -> dict[str, Any]:
    """Health of `version` (default latest) of the table behind `log`."""
    snapshot = snapshot_at(log, version)
    return compute_health(snapshot, log.listing, log_sizes(log), activity or Activity())


def log_sizes(log: DeltaLog) -> dict[int, int]:
    """Bytes of each NNN.json commit file, from one listing with sizes."""
    out: dict[int, int] = {}
    for entry in log.store.list(LOG_DIR, stats=True):
        name = entry.name
        if len(name) == 25 and name.endswith(".json") and log_int(name[:20]) is not None:
            out[int(name[:20])] = entry.size or 0
    return out


def file_totals(state: TableState) -> FileTotals:
    """The per-file sums of `state`'s live files (the health's file sections)."""
    limit = small_file_limit(state.properties)
    return FileTotals.of(state.files.values(), limit, bool(state.partition_columns))


def totals_fit(totals: FileTotals, state: TableState) -> bool:
    """Whether sums kept for another version of the table still apply to `state` (the same
    small-file limit, partitioned or not): then `advance` brings them to its files."""
    limit = small_file_limit(state.properties)
    return totals.limit == limit and totals.partitioned == bool(state.partition_columns)


def compute_health(
    snapshot: Snapshot,
    listing: LogListing,
    sizes: dict[int, int],
    activity: Activity,
    totals: FileTotals | None = None,
) -> dict[str, Any]:
    """The health document of one version (field names are the API's and the CLI's).
    `totals`: the sums of the state's files when the caller kept them (`FileTotals.advance`)."""
    state = snapshot.state
    props = state.properties
    files = (totals or file_totals(state)).sections()
    health: dict[str, Any] = {
        "version": state.version,
        "timestamp": snapshot.timestamp,
        "num_files": files["num_files"],
        "total_bytes": files["total_bytes"],
        "num_records": files["num_records"],
        "target_file_size": target_file_size(props),
        "file_size_histogram": files["file_size_histogram"],
        "small_files": files["small_files"],
        "files_without_stats": files["files_without_stats"],
        "partitions": files["partitions"],
        "tombstones": tombstone_health(snapshot, props),
        "checkpoint": checkpoint_health(listing, state.version, props),
        "log": log_health(listing, state.version, sizes, props),
        "deletion_vectors": files["deletion_vectors"],
    }
    health["partition_skew"] = health["partitions"].pop("skew")
    health["recommendations"] = recommendations(health, state, activity)
    return health


def tombstone_health(snapshot: Snapshot, props: dict[str, str]) -> dict[str, Any]:
    """Tombstones and the part VACUUM may delete at the version's timestamp."""
    retention = deleted_file_retention_ms(props)
    at = snapshot.timestamp
    cutoff = None if at is None else at - retention
    stones = list(snapshot.tombstones.values())
    expired = [t for t in stones if cutoff is not None and (t.deletion_timestamp or 0) < cutoff]
    return {
        "count": len(stones),
        "bytes": sum(t.size or 0 for t in stones),
        "vacuumable_count": len(expired),
        "vacuumable_bytes": sum(t.size or 0 for t in expired),
        "retention": props.get(
            "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION
        ),
        "retention_ms": retention,
        "as_of": at,
    }


def checkpoint_health(listing: LogListing, version: int, props: dict[str, str]) -> dict[str, Any]:
    done = [v for v in listing.checkpoints if v <= version]
    last = max(done) if done else None
    raw_interval = props.get("delta.checkpointInterval")
    interval = log_int(raw_interval) or None  # 0 is no interval: the default applies
    return {
        "last_version": last,
        "commits_since": version - last if last is not None else version + 1,
        "interval": interval,
        "interval_effective": interval or DEFAULT_CHECKPOINT_INTERVAL,
        "last_checkpoint_version": pointed_version(listing),
        "last_checkpoint_stale": pointer_behind(listing),
    }


# The parts of the health document that come from the listing alone, as (section, key): a
# checkpoint or a log cleanup moves them without a new commit.
LISTING_PARTS = (
    ("checkpoint", "last_version"),
    ("checkpoint", "commits_since"),
    ("checkpoint", "last_checkpoint_version"),
    ("checkpoint", "last_checkpoint_stale"),
    ("log", "json_commits"),
    ("log", "oldest_version"),
)


def listing_outdates(health: dict[str, Any], listing: LogListing) -> bool:
    """Whether `listing` moved what `health` (a stored document) says of the listing at its own
    version: a checkpoint, its pointer or a log cleanup that came without a commit."""
    version = health.get("version")
    if not isinstance(version, int):
        return False
    fresh = {
        "checkpoint": checkpoint_health(listing, version, {}),
        "log": log_health(listing, version, {}, {}),
    }
    return any((health.get(s) or {}).get(k) != fresh[s][k] for s, k in LISTING_PARTS)


def log_health(
    listing: LogListing, version: int, sizes: dict[int, int], props: dict[str, str]
) -> dict[str, Any]:
    versions = [v for v in listing.commit_versions if v <= version]
    return {
        "json_commits": len(versions),
        "bytes": sum(sizes.get(v, 0) for v in versions),
        "oldest_version": versions[0] if versions else None,
        "log_retention": props.get("delta.logRetentionDuration", DEFAULT_LOG_RETENTION),
    }


# --------------------------------------------------------------------------- recommendations


def optimize_conflicts_with_dml(state: TableState, zorder: bool) -> tuple[bool, str]:
    """Whether OPTIMIZE can conflict with UPDATE/DELETE/MERGE here, and the matrix's note."""
    props = state.properties
    default = IsolationLevel.WRITE_SERIALIZABLE
    try:
        level = normalize_isolation_level(props.get("delta.isolationLevel", default))
    except ValueError:
        level = default
    dv = props.get("delta.enableDeletionVectors", "").lower() == "true"
    rlc = dv and (not state.partition_columns or bool(state.clustering_columns))
    cells = conflict_matrix(level, rlc, dv, zorder)
    verdict = verdict_for(cells, OperationClass.UDM, OperationClass.OPTIMIZE)
    note = next(
        c.note for c in cells if {c.a, c.b} == {OperationClass.UDM, OperationClass.OPTIMIZE}
    )
    return verdict != Verdict.CANNOT_CONFLICT, note


def recommendations(
    health: dict[str, Any], state: TableState, activity: Activity
) -> list[dict[str, str]]:
    """What to run on this table and when, in the order the health document lists them."""
    when = _general_when(activity)
    advice = [
        _optimize_advice(health, state, activity),
        _cluster_by_advice(state, activity, when),
        _vacuum_advice(health, when),
        _checkpoint_advice(health),
        _partitioning_advice(health, when),
    ]
    return [a for a in advice if a is not None]


def _general_when(activity: Activity) -> str:
    """When to run maintenance that conflicts with nothing: the table's quietest hours."""
    if not any(activity.all_hours):
        return _ANY_TIME
    quiet_start, _ = quiet_window(activity.all_hours)
    return f"{_window_text(quiet_start)}, the table's quietest hours"


def _optimize_advice(
    health: dict[str, Any], state: TableState, activity: Activity
) -> dict[str, str] | None:
    small, n = health["small_files"], health["num_files"]
    if small["count"] >= SMALL_FILES_MIN and small["count"] >= SMALL_FILES_RATIO * n:
        return _optimize(health, state, activity)
    return None


def _cluster_by_advice(state: TableState, activity: Activity, when: str) -> dict[str, str] | None:
    # Liquid clustering is the way out only for a table not clustered yet whose writers run
    # OPTIMIZE ZORDER BY, and only where that OPTIMIZE can conflict with UPDATE/DELETE/MERGE.
    if state.clustering_columns != [] or not activity.zorder_used:
        return None
    conflicts, note = optimize_conflicts_with_dml(state, True)
    if not conflicts:
        return None
    return {
        "action": "CLUSTER BY",
        "why": (
            "OPTIMIZE ZORDER BY is used on this table and, under its settings, can "
            f"conflict with UPDATE/DELETE/MERGE ({note}) Liquid clustering "
            "reorganises data incrementally without that conflict."
        ),
        "when": when,
    }


def _vacuum_advice(health: dict[str, Any], when: str) -> dict[str, str] | None:
    tomb = health["tombstones"]
    reclaimable = tomb["vacuumable_bytes"]
    if reclaimable <= 0 or (
        reclaimable < VACUUM_SHARE * health["total_bytes"] and reclaimable < VACUUM_MIN_BYTES
    ):
        return None
    return {
        "action": "VACUUM",
        "why": (
            f"{tomb['vacuumable_count']} removed files ({reclaimable} bytes) are "
            f"older than the retention ({tomb['retention']}) and still on storage."
        ),
        "when": when + "; VACUUM never conflicts with writers",
    }


def _checkpoint_advice(health: dict[str, Any]) -> dict[str, str] | None:
    cp = health["checkpoint"]
    if cp["last_checkpoint_stale"]:
        why = "_last_checkpoint points before the newest checkpoint: readers start too far back."
    elif cp["commits_since"] > 2 * cp["interval_effective"]:
        why = (
            f"{cp['commits_since']} commits since the last checkpoint "
            f"(interval {cp['interval_effective']}): every reader replays them."
        )
    else:
        return None
    return {"action": "CHECKPOINT", "why": why, "when": "now; checkpoints never conflict"}


def _partitioning_advice(health: dict[str, Any], when: str) -> dict[str, str] | None:
    if (health["partition_skew"] or 0) <= SKEW_LIMIT or health["partitions"]["count"] < 4:
        return None
    return {
        "action": "REVIEW PARTITIONING",
        "why": (
            f"The largest partition holds {health['partition_skew']}x the median partition's "
            "bytes: work and conflicts concentrate there."
        ),
        "when": when,
    }


def _optimize(health: dict[str, Any], state: TableState, activity: Activity) -> dict[str, str]:
    small, n = health["small_files"], health["num_files"]
    conflicts, note = optimize_conflicts_with_dml(state, activity.zorder_used)
    why = (
        f"{small['count']} of {n} files ({small['bytes']} bytes) are below {small['threshold']} "
        "bytes (a quarter of the target file size); every small append or retried write adds one."
    )
    if not any(activity.all_hours):
        return {"action": "OPTIMIZE", "why": why, "when": _ANY_TIME}
    if conflicts:
        start, _ = quiet_window(activity.all_hours, activity.udm_hours)
        in_window = sum(activity.udm_hours[(start + i) % 24] for i in range(QUIET_HOURS))
        peak = max(range(24), key=lambda h: activity.udm_hours[h])
        when = f"{_window_text(start)}: {in_window} UPDATE/DELETE/MERGE commits there in the last {ACTIVITY_DAYS} days"
        if any(activity.udm_hours):
            when += f" (they peak at {peak:02d}:00 UTC)"
        why += (
            f" Under this table's settings OPTIMIZE can conflict with UPDATE/DELETE/MERGE: {note}"
        )
    else:
        start, _ = quiet_window(activity.all_hours)
        when = f"{_window_text(start)}, the quietest hours (OPTIMIZE cannot conflict with UPDATE/DELETE/MERGE here)"
    return {"action": "OPTIMIZE", "why": why, "when": when}


def health_of_history(history: History) -> dict[str, Any]:
    """Health of the history's latest version, reusing its replayed state (the CLI's path)."""
    from audit.core.health.tombstones import snapshot_from_history

    snapshot = snapshot_from_history(history)
    recent = history.summaries[-ACTIVITY_SUMMARIES:]
    listing = history.listing
    sizes = listing.commit_sizes
    # Every commit file was read for the summaries: their sizes are known, no stat listing.
    if not all(v in sizes for v in listing.commit_versions):
        sizes = log_sizes(history.get_log())
    return compute_health(snapshot, listing, sizes, activity_from(recent))
