"""One long history audited in version ranges, its whole-history part assembled from them.

A range [start, end] is audited over the tail's window (`tailwindow.load_tail_history`, proven
equal to the one-shot audit). The table-level findings need the whole history, but not a
second read of it: each range also hands back what the whole-log pass would have produced for
its own versions (`RangePart`: the summaries, the config changes, and what the log-integrity
checks read of each commit, as parallel.py's forked child sends it), and `assemble_history`
rebuilds the whole-log `History` from the parts, replaying the integrity records in version
order. Summaries made in a window are exact: the window's history starts from the snapshot
before it, so the isolation level each derives uses the configuration in force (unlike the
forked child, nothing needs re-deriving).
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.core.history.summarize import (
    CommitSink,
    MetadataTimeline,
    ProtocolTimeline,
    summarize_log,
)
from audit.core.history.summary import History, history_of, paused_gc
from audit.core.integrity.checks import IntegrityTap
from audit.core.integrity.ranged import RangeIntegrity, range_integrity
from audit.core.integrity.refs import FileRef, IntegrityRecord, integrity_record
from audit.core.log import DeltaLog
from audit.core.model import Commit, CommitSummary
from audit.core.runs.tailwindow import GUESS, widen_window


@dataclass
class RangePart:
    """What versions [start, end] of the whole-log pass are, summarised in a range's task."""

    start: int
    end: int
    summaries: list[CommitSummary]
    metadata: MetadataTimeline  # changes made by these versions only
    protocol: ProtocolTimeline
    records: list[IntegrityRecord]


def load_range(log: DeltaLog, start: int, end: int) -> tuple[History, RangePart]:
    """The window history that audits [start, end] exactly, and the range's own part."""
    versions = log.listing.commit_versions
    first = versions[0] if versions else start
    with paused_gc():
        window = _window_history(log, start, end, first) if start - GUESS > first else None
        if window is not None:
            history, (records, _) = window
            own = [s for s in history.summaries if start <= s.version <= end]
            records = [r for r in records if r[0] >= start]
            return history, _own_part(history, start, end, own, records)
        # The window reaches the first version: the tail loads it as the whole-log pass does
        # (straight from the files, not through iter_commits), so do that pass here.
        history, part = _first_range(log, first, end)
    own = [s for s in part.summaries if start <= s.version <= end]
    records = [r for r in part.records if start <= r[0] <= end]
    return history, _own_part(history, start, end, own, records)


def load_range_checked(log: DeltaLog, start: int, end: int) -> tuple[History, RangeIntegrity]:
    """The window history that audits [start, end] exactly (as `load_range`), and the
    range's log-integrity findings, checked from the snapshot before the window
    (integrity.ranged): nothing of the range's commits leaves the task but its results."""
    versions = log.listing.commit_versions
    first = versions[0] if versions else start
    with paused_gc():
        window = _window_history(log, start, end, first) if start - GUESS > first else None
        if window is not None:
            history, (records, lo) = window
        else:
            history, part = _first_range(log, first, end)
            records, lo = part.records, first
        return history, range_integrity(log, first, lo, start, records)


def _window_history(
    log: DeltaLog, start: int, end: int, first: int
) -> tuple[History, tuple[list[IntegrityRecord], int]] | None:
    """`load_tail_history`'s window (its rules, `widen_window`), each try read straight from
    the files as the whole-log pass reads them (`summarize_log`, ~3x cheaper than parsing
    commits into objects), with the range's integrity records. None when the window reaches
    the first version."""
    return widen_window(
        log, start, first, lambda lo: None if lo <= first else _digest_window(log, lo, start, end)
    )


def _digest_window(
    log: DeltaLog, lo: int, start: int, end: int
) -> tuple[History, tuple[list[IntegrityRecord], int]]:
    """The history [lo, end] as `history_from_log(log, start=lo, end=end)` builds it, with
    the integrity records of its commits (from `lo`) and `lo`."""
    records, record = _recorder(since=lo)

    before = log.snapshot(lo - 1)
    metadata = [(lo - 1, before.metadata)] if before.metadata else []
    protocol = [(lo - 1, before.protocol)] if before.protocol else []
    summaries = summarize_log(log, lo, end, metadata, protocol, sink=record)
    return history_of(log, log.snapshot(end), summaries, metadata, protocol), (records, lo)


def _recorder(since: int) -> tuple[list[IntegrityRecord], CommitSink]:
    """A `summarize_log` sink keeping the integrity records of the versions from `since`."""
    records: list[IntegrityRecord] = []

    def record(commit: Commit, adds: list[FileRef], removes: list[FileRef]) -> None:
        if commit.version >= since:
            records.append(integrity_record(commit, adds, removes))

    return records, record


def _own_part(
    history: History,
    start: int,
    end: int,
    own: list[CommitSummary],
    records: list[IntegrityRecord],
) -> RangePart:
    """The range's versions of a window history (whose timelines begin with the config in
    force before the window, at a version before `start`)."""
    return RangePart(
        start,
        end,
        own,
        [(v, m) for v, m in history.metadata_timeline if start <= v <= end],
        [(v, p) for v, p in history.protocol_timeline if start <= v <= end],
        records,
    )


def _first_range(log: DeltaLog, first: int, end: int) -> tuple[History, RangePart]:
    records, record = _recorder(since=first)
    metadata: MetadataTimeline = []
    protocol: ProtocolTimeline = []
    summaries = summarize_log(log, first, end, metadata, protocol, sink=record)
    part = RangePart(first, end, summaries, list(metadata), list(protocol), records)
    # The range's own history is the whole-log one up to `end` (its integrity is not needed:
    # the windowed audit leaves those kinds alone).
    return assemble_history(log, [part], integrity=False), part


def assemble_history(
    log: DeltaLog, parts: list[RangePart], *, integrity: bool = True, end: int | None = None
) -> History:
    """The whole-log `History` (as `history_from_log(log)` builds it) from every range's part,
    in version order; the integrity findings from the records, replayed in order."""
    with paused_gc():
        parts = sorted(parts, key=lambda p: p.start)
        end = parts[-1].end if end is None else end  # the state's version (the latest)
        summaries = [s for p in parts for s in p.summaries]
        metadata = [c for p in parts for c in p.metadata]
        protocol = [c for p in parts for c in p.protocol]
        tap = None
        if integrity and log.listing.commit_versions:
            tap = IntegrityTap(log, parts[0].start)
            for p in parts:
                tap.replay(p.records)
        found = tap.findings if tap is not None and summaries else None
        track = tap.dv if tap is not None and summaries else None
        return history_of(log, log.snapshot(end), summaries, metadata, protocol, found, track)
