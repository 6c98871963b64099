"""Time-travel reachability: which retained versions can still be read, from one listing.

The orphan scan lists the table's data folders; this module takes the same listing (the set
of file paths it saw) and the history's adds and removes, and finds the data files a retained
version references that storage no longer has. Each such file breaks every version it was
live in. A file removed by a commit and deleted by a VACUUM that ran at least
`delta.deletedFileRetentionDuration` after the removal is Delta working as designed (time
travel ends there): those files move the earliest readable version and are no finding.

Facts only (their dataclasses: facts/timetravel.py); the words are in `wording/timetravel.py`.

Limits: a listing that hit its bounds judges nothing (a file not seen may simply not have been
listed); files outside the table root (absolute paths, shallow clones) are not judged; a log
whose data folders hold no file at all (a log copied without its data) is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from audit.core.facts.timetravel import (
    BrokenSnapshot,
    MissingFile,
    MissingGroup,
    Reachability,
    Vacuum,
)
from audit.core.model import CommitSummary
from audit.core.numbers import INT64_MAX, log_int
from audit.core.vocab import Operation

RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000  # Delta's default: interval 1 week
MAX_FILES_NAMED = 20
MAX_BROKEN_LISTED = 1000
_VACUUMS = (Operation.VACUUM_START, Operation.VACUUM_END)
_UNIT_MS = {
    "week": 7 * 86_400_000,
    "day": 86_400_000,
    "hour": 3_600_000,
    "minute": 60_000,
    "second": 1000,
    "millisecond": 1,
    "microsecond": 0.001,
}
_INTERVAL_PART = re.compile(
    r"(-?\d+)\s*(week|day|hour|minute|second|millisecond|microsecond)s?", re.ASCII
)


def retention_ms(properties: dict[str, str]) -> int:
    """`delta.deletedFileRetentionDuration` ("interval 1 week", "interval 168 hours") in ms."""
    text = str(properties.get(RETENTION_PROPERTY) or "").strip().lower()
    parts = _INTERVAL_PART.findall(text)
    if not parts:
        return DEFAULT_RETENTION_MS
    total = int(sum(int(n) * _UNIT_MS[unit] for n, unit in parts))
    return max(min(total, INT64_MAX), -INT64_MAX)  # a hostile "interval 10**30 weeks"


def vacuums_of(summaries: Iterable[CommitSummary]) -> list[Vacuum]:
    found: list[Vacuum] = []
    for s in summaries:
        if s.operation == Operation.VACUUM_START:
            p = s.operation_parameters
            found.append(
                Vacuum(
                    s.version,
                    None,
                    s.timestamp,
                    _int(p.get("specifiedRetentionMillis")),
                    _bool(p.get("retentionCheckEnabled")),
                )
            )
        elif s.operation == Operation.VACUUM_END:
            if found and found[-1].end is None:
                last = found[-1]
                found[-1] = Vacuum(
                    last.start,
                    s.version,
                    last.timestamp,
                    last.specified_retention_ms,
                    last.retention_check,
                )
            else:
                found.append(Vacuum(s.version, s.version, s.timestamp, None, None))
    return found


def _int(value: Any) -> int | None:
    return log_int(value)


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def file_lives(
    summaries: list[CommitSummary], live: Iterable[str], first: int
) -> dict[str, list[tuple[int, int | None]]]:
    """Per referenced path, the version ranges it was live in (start, removing version)."""
    opened: dict[str, int] = {}
    lives: dict[str, list[tuple[int, int | None]]] = {}
    for s in summaries:
        if s.version < first:
            continue
        for path in s.removed_paths_all:
            start = opened.pop(path, None)
            if start is None and path not in lives:
                start = first  # added before the available history (a checkpoint holds it)
            if start is not None and start < s.version:
                lives.setdefault(path, []).append((start, s.version))
        for paths in (s.added_paths, s.compacted_paths):
            for path in paths:
                opened.setdefault(path, s.version)
    for path in live:
        opened.setdefault(path, first)
    for path, start in opened.items():
        lives.setdefault(path, []).append((start, None))
    return lives


def reachability(
    history: Any,
    listed: set[str] | None,
    relative: Any,
    *,
    now_ms: int,
    truncated: bool = False,
) -> Reachability:
    """Which retained versions reference files `listed` lacks. `relative(path)` spells a log
    path as the listing does (relative to the root); None when the path is outside the root."""
    first, latest = history.first_available_version, history.latest_version
    result = Reachability(False, None, first, latest, earliest_readable_version=first)
    result.earliest_readable_timestamp = _timestamp_of(history, first)
    if listed is None:
        result.reason = "the data folders were not listed"
        return result
    if truncated:
        result.reason = "the listing of the data folders hit its limits"
        return result
    if not listed:
        result.reason = "the data folders hold no file (a log without its data)"
        return result
    result.judged = True
    retention = retention_ms(history.state.properties)
    vacuums = vacuums_of(history.summaries)
    stamps = {s.version: s.timestamp for s in history.summaries}
    lives = file_lives(history.summaries, history.state.files, first)
    for path, spans in lives.items():
        name = relative(path)
        if name is None or name in listed:
            continue
        removed = spans[-1][1]
        removed_at = stamps.get(removed) if removed is not None else None
        vacuum = _vacuum_after(vacuums, removed) if removed is not None else None
        legal = _legal(removed_at, vacuum, retention, now_ms)
        result.missing.append(MissingFile(path, spans, removed_at, vacuum, legal))
    result.missing.sort(key=lambda m: (m.lives[0][0], m.path))
    _ranges(result, latest)
    return result


def _vacuum_after(vacuums: list[Vacuum], removed: int) -> Vacuum | None:
    return next((v for v in vacuums if v.start > removed), None)


def _legal(removed_at: int | None, vacuum: Vacuum | None, retention: int, now_ms: int) -> bool:
    """Deleted no earlier than its retention allowed (by a logged VACUUM, or, with none in
    the log, a cleanup that may have run any time after the retention expired)."""
    if removed_at is None:
        return False
    deleted_by = now_ms if vacuum is None or vacuum.timestamp is None else vacuum.timestamp
    return deleted_by - removed_at >= retention


def _ranges(result: Reachability, latest: int) -> None:
    """Broken ranges (files deleted before their time) and the earliest readable version
    (which files cleaned up after their retention move too, without being a fault)."""
    result.broken = _merged(result.missing, latest, faults_only=True)
    earliest = result.first_available_version
    for start, end in _merged(result.missing, latest, faults_only=False):
        if start <= earliest <= end:
            earliest = end + 1
    result.earliest_readable_version = earliest if earliest <= latest else None


def _merged(missing: list[MissingFile], latest: int, *, faults_only: bool) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for file in missing:
        if faults_only and file.legal:
            continue
        for start, end in file.lives:
            last = latest if end is None else end - 1
            if start <= last:
                spans.append((start, last))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _timestamp_of(history: Any, version: int | None) -> int | None:
    if version is None:
        return None
    summary = history.summary(version)
    return summary.timestamp if summary is not None else None


def broken_versions(result: Reachability) -> list[int]:
    """The broken versions one by one, at most MAX_BROKEN_LISTED of them (the ranges are whole)."""
    out: list[int] = []
    for start, end in result.broken:
        out.extend(range(start, min(end, start + MAX_BROKEN_LISTED - len(out)) + 1))
        if len(out) >= MAX_BROKEN_LISTED:
            break
    return out[:MAX_BROKEN_LISTED]


def time_travel_section(result: Reachability, history: Any) -> dict[str, Any]:
    """The `health.time_travel` object of the report."""
    earliest = result.earliest_readable_version
    return {
        "judged": result.judged,
        "reason": result.reason,
        "first_available_version": result.first_available_version,
        "earliest_readable_version": earliest,
        # How far `TIMESTAMP AS OF` can go back: the commit time of the earliest readable one.
        "earliest_readable_timestamp": _timestamp_of(history, earliest),
        "broken_versions": broken_versions(result),
        "broken_ranges": [list(r) for r in result.broken],
        "missing_files": len(result.missing),
        "missing_files_beyond_retention": sum(1 for m in result.missing if m.legal),
    }


# --------------------------------------------------------------------------- finding facts


def missing_groups(result: Reachability, retention: int) -> list[MissingGroup]:
    groups: dict[tuple[bool, int | None], list[MissingFile]] = {}
    for file in result.missing:
        if file.legal:
            continue
        latest = file.lives[-1][1] is None
        start = file.vacuum.start if file.vacuum is not None else None
        groups.setdefault((latest, start), []).append(file)
    out = []
    for (latest, _start), files in sorted(
        groups.items(), key=lambda kv: (not kv[0][0], kv[0][1] or -1)
    ):
        broken = _merged(files, result.latest_version, faults_only=True)
        out.append(MissingGroup(files, files[0].vacuum, latest, broken, retention))
    return out


def broken_snapshots(
    summaries: list[CommitSummary], result: Reachability, retention: int
) -> list[BrokenSnapshot]:
    by_vacuum: dict[int, tuple[Vacuum, list[MissingFile]]] = {}
    for file in result.missing:
        if file.vacuum is not None:
            by_vacuum.setdefault(file.vacuum.start, (file.vacuum, []))[1].append(file)
    if not by_vacuum:
        return []
    found: list[BrokenSnapshot] = []
    for s in summaries:
        read = s.read_version
        if read is None or read >= s.version - 1:
            continue
        for start, (vacuum, files) in by_vacuum.items():
            if not read < start < s.version:
                continue
            read_files = [f for f in files if _live_at(f, read)]
            if read_files:
                found.append(BrokenSnapshot(s.version, read, vacuum, read_files, retention))
    return found


def _live_at(file: MissingFile, version: int) -> bool:
    return any(start <= version and (end is None or version < end) for start, end in file.lives)
