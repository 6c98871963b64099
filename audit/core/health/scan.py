"""One listing of a table's data folders, two answers: orphan files and missing files.

The orphan scan (orphans.py) and the time-travel check (timetravel.py) need the same listing;
`scan_data` makes it once and returns both, with their findings worded (wording/timetravel.py).
The worker's periodic scan and the one-shot `manage.py audit` both call it, so the two give
the same findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audit.core import severity as sev
from audit.core.data.orphans import (
    MAX_DEPTH,
    MAX_DIRS,
    MAX_FILES,
    MIN_IN_FLIGHT_MS,
    OrphanScan,
    _relative,
    in_flight_bound_ms,
    judge_orphans,
    list_data_files,
    orphan_finding,
    referenced_among,
)
from audit.core.facts.timestamps import MIN_INTERVAL_MS, TimestampFacts
from audit.core.facts.timetravel import Reachability
from audit.core.health.timestamps import timestamp_facts
from audit.core.health.timetravel import (
    broken_snapshots,
    missing_groups,
    reachability,
    retention_ms,
)
from audit.core.log.layout import LOG_DIR, _commit_path
from audit.core.model import Finding
from audit.core.numbers import log_int
from audit.core.storage.roots import shown_path
from audit.core.storage.store import LogStore
from audit.core.vocab import FindingKind
from audit.core.wording.timetravel import (
    missing_data_file_text,
    timestamps_out_of_order_text,
    vacuum_broke_snapshot_text,
)

ORPHAN_FINDING_BYTES = 1 << 30  # the worker's default (AUDIT_ORPHAN_FINDING_BYTES)
MAX_FILES_IN_WITNESS = 50
MAX_TIMED_COMMITS = 20_000  # commit files whose time a local log has read (see log_file_times)


@dataclass
class DataScan:
    orphans: OrphanScan
    reach: Reachability
    findings: list[Finding] = field(default_factory=list)
    timestamps: TimestampFacts | None = None


def scan_data(
    store: LogStore,
    history: Any,
    root: str,
    *,
    now_ms: int,
    min_age_floor_ms: int = MIN_IN_FLIGHT_MS,
    orphan_finding_bytes: int = ORPHAN_FINDING_BYTES,
    max_files: int = MAX_FILES,
    max_dirs: int = MAX_DIRS,
    max_depth: int = MAX_DEPTH,
    min_interval_ms: int = MIN_INTERVAL_MS,
) -> DataScan:
    """List the data folders once (within the bounds) and judge orphans and missing files;
    commit times misresolved over at least `min_interval_ms` are `timestamps_out_of_order`."""
    listing = list_data_files(store, max_files=max_files, max_dirs=max_dirs, max_depth=max_depth)
    seen = listing.paths()
    orphans = judge_orphans(
        listing,
        referenced_among(history, root, seen),
        now_ms=now_ms,
        min_age_ms=in_flight_bound_ms(history, min_age_floor_ms),
    )
    del listing
    reach = reachability(
        history,
        seen,
        lambda path: _inside(path, root),
        now_ms=now_ms,
        truncated=orphans.truncated,
    )
    findings = []
    if orphans.files and orphans.bytes >= orphan_finding_bytes:
        findings.append(orphan_finding(orphans, history.latest_version))
    findings.extend(reachability_findings(history, reach))
    stamps = timestamp_facts(
        history, log_file_times(store, history), min_interval_ms=min_interval_ms
    )
    findings.extend(timestamp_findings(stamps))
    return DataScan(orphans, reach, findings, stamps)


def log_file_times(store: LogStore, history: Any) -> dict[int, int]:
    """The commit files' modification times. An object store's listing of the log had them
    (no request here); a local one lists without stat calls, so they are read now: all of
    them for a log of up to MAX_TIMED_COMMITS commits, else the newest MAX_TIMED_COMMITS (a
    stat costs ~10 us: the whole of a million-commit log would add ten seconds)."""
    known = history.listing.file_modification_times
    summaries = history.summaries
    if len(known) >= len(summaries):
        return {}
    if len(summaries) > MAX_TIMED_COMMITS:
        newest = summaries[-MAX_TIMED_COMMITS:]
        stamps = ((s.version, store.modification_time(_commit_path(s.version))) for s in newest)
        return {version: mtime for version, mtime in stamps if mtime}
    times: dict[int, int] = {}
    for entry in store.list(LOG_DIR, stats=True):
        name, mtime = entry.name, entry.modification_time
        if (
            len(name) == 25
            and name.endswith(".json")
            and mtime
            and (version := log_int(name[:20])) is not None
        ):
            times[version] = mtime
    return times


def timestamp_findings(facts: TimestampFacts) -> list[Finding]:
    """`timestamps_out_of_order` when a time resolves to another version than it should."""
    if not facts.out_of_order:
        return []
    first = min([*facts.backwards[:1], *facts.skewed[:1]] or [facts.times[0].version])
    return [
        timestamps_out_of_order_text(facts).finding(
            FindingKind.TIMESTAMPS_OUT_OF_ORDER,
            sev.timestamps_out_of_order_severity(),
            first,
            [],
            witness={
                "backwards": facts.backwards[:100],
                "skewed": facts.skewed[:100],
                "max_skew_ms": facts.max_skew_ms,
                "in_commit_timestamps_from": facts.enablement_version,
                "intervals": [
                    {"from": a, "to": b, "history_says": s, "resolves_to": r}
                    for a, b, s, r in facts.intervals
                ],
            },
        )
    ]


def _inside(path: str, root: str) -> str | None:
    """The path as the listing spells it, or None for a file outside the table's folders."""
    name = _relative(path, root)
    if "://" in name or name.startswith("/") or name.startswith("../"):
        return None
    return name


def reachability_findings(history: Any, reach: Reachability) -> list[Finding]:
    """`missing_data_file` per way the files went, `vacuum_broke_snapshot` per transaction."""
    if not reach.judged:
        return []
    retention = retention_ms(history.state.properties)
    findings = []
    for group in missing_groups(reach, retention):
        first = group.broken[0][0]
        related = [group.vacuum.start] if group.vacuum is not None else []
        findings.append(
            missing_data_file_text(group).finding(
                FindingKind.MISSING_DATA_FILE,
                sev.missing_data_file_severity(group.latest_broken),
                first,
                related,
                witness={
                    "files": [shown_path(f.path) for f in group.files[:MAX_FILES_IN_WITNESS]],
                    "file_count": len(group.files),
                    "broken_versions": [list(r) for r in group.broken],
                    "deleted_by": _vacuum(group.vacuum),
                    "latest_broken": group.latest_broken,
                },
            )
        )
    for fact in broken_snapshots(history.summaries, reach, retention):
        vacuum = fact.vacuum
        related = sorted({fact.read_version, vacuum.start, *([vacuum.end] if vacuum.end else [])})
        findings.append(
            vacuum_broke_snapshot_text(fact).finding(
                FindingKind.VACUUM_BROKE_SNAPSHOT,
                sev.vacuum_broke_snapshot_severity(),
                fact.version,
                related,
                witness={
                    "cycle": [
                        {"version": fact.read_version, "step": "read"},
                        {"version": vacuum.start, "step": "vacuum deleted files of that read"},
                        {"version": fact.version, "step": "committed"},
                    ],
                    "files": [shown_path(f.path) for f in fact.files[:MAX_FILES_IN_WITNESS]],
                    "file_count": len(fact.files),
                    "vacuum": _vacuum(vacuum),
                    "table_retention_ms": fact.retention_ms,
                },
            )
        )
    return findings


def _vacuum(vacuum: Any) -> dict[str, Any] | None:
    if vacuum is None:
        return None
    return {
        "start": vacuum.start,
        "end": vacuum.end,
        "timestamp": vacuum.timestamp,
        "specified_retention_ms": vacuum.specified_retention_ms,
        "retention_check": vacuum.retention_check,
    }
