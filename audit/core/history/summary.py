"""Commit summaries: what each commit did, which facts the log recorded and which we derived.

`load_history(uri)` reads a table's log once and returns a `History`: one `CommitSummary` per
available commit, the table configuration as it changed over time, and the latest state.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from audit.core.history.parallel import summarize_log_parallel
from audit.core.history.summarize import (
    MetadataTimeline,
    ProtocolTimeline,
    summarize_commits,
    summarize_log,
)
from audit.core.integrity.checks import IntegrityTap
from audit.core.integrity.dv_track import DvTrack
from audit.core.log import DeltaLog, apply_commit, open_log
from audit.core.model import (
    Commit,
    CommitSummary,
    ListingVersions,
    LogListing,
    Metadata,
    Protocol,
    TableState,
)

# Whether a whole history may be summarised on two processes: True, or a check asked only when
# the log is long enough to split (parallel.spare_core samples the CPUs for 0.1 s: a short
# log should not pay that).
Parallel = bool | Callable[[], bool]


@dataclass
class History(ListingVersions):
    """A table's history as the audit needs it. Built by `load_history`."""

    table_uri: str
    listing: LogListing
    state: TableState  # the latest version
    summaries: list[CommitSummary]
    # Versions at which a metaData / protocol action took effect, ascending, with the value.
    metadata_timeline: MetadataTimeline = field(default_factory=list)
    protocol_timeline: ProtocolTimeline = field(default_factory=list)
    _by_version: dict[int, CommitSummary] = field(default_factory=dict, repr=False)
    # Log-integrity findings computed while the commits were parsed (None: not computed).
    integrity: list[Any] | None = field(default=None, repr=False, compare=False)
    # What the deletion-vector check needs, kept on the same read (integrity/dv_track.py;
    # None: not kept, the check reads the log again).
    dv_track: DvTrack | None = field(default=None, repr=False, compare=False)
    # The open log, reused by whoever needs to read commits again (the witness); opened lazily
    # for histories rebuilt elsewhere (the Spark path).
    _log: DeltaLog | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        summaries = self.summaries
        # Versions in a row (every whole log): found by position, no dict of 1M entries.
        if not summaries or summaries[-1].version - summaries[0].version != len(summaries) - 1:
            self._by_version = {s.version: s for s in summaries}

    def get_log(self) -> DeltaLog:
        if self._log is None:
            self._log = open_log(self.table_uri)
        return self._log

    def summary(self, version: int) -> CommitSummary | None:
        if self._by_version or not self.summaries:
            return self._by_version.get(version)
        summaries = self.summaries
        index = version - summaries[0].version
        if not 0 <= index < len(summaries):
            return None
        found = summaries[index]
        if found.version != version:  # not in version order after all: index them
            self._by_version = {s.version: s for s in summaries}
            return self._by_version.get(version)
        return found

    def metadata_at(self, version: int) -> Metadata | None:
        return _value_at(self.metadata_timeline, version)

    def protocol_at(self, version: int) -> Protocol | None:
        return _value_at(self.protocol_timeline, version)

    def partition_columns_at(self, version: int) -> list[str]:
        metadata = self.metadata_at(version)
        return list(metadata.partition_columns) if metadata else []

    def properties_at(self, version: int) -> dict[str, str]:
        metadata = self.metadata_at(version)
        return dict(metadata.configuration) if metadata else {}


def _value_at(timeline: list[tuple[int, Any]], version: int) -> Any:
    """The value in force at `version` (the last change at or before it; else the first known)."""
    if not timeline:
        return None
    if version >= timeline[-1][0]:  # the latest change: most lookups of a long history
        return timeline[-1][1]
    index = bisect.bisect_right(timeline, version, key=_change_version) - 1
    return timeline[max(index, 0)][1]


def _change_version(change: tuple[int, Any]) -> int:
    return change[0]


# --------------------------------------------------------------------------- loading


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large, long-lived structures.

    Summarising 100k commits allocates millions of containers; each automatic collection
    re-walks the young ones built so far, which more than doubled the time of a large log.
    On the way out the survivors are moved straight to the oldest generation (freeze, then
    unfreeze), so the first collections after the pause do not walk them all again either;
    any cyclic garbage among them is still found by the next full collection.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Only when nobody else froze objects: unfreeze would thaw theirs too.
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


@contextlib.contextmanager
def young_gc() -> Iterator[None]:
    """Run the cyclic collector on what is built from here on, never on what is alive now.

    For a one-shot run that paused the collector while it loaded a history it keeps to the
    end: the history is frozen (out of the collector's generations for good) and the
    collector runs again. The audit makes cyclic garbage with the collector paused nothing
    frees: sqlglot trees point to their parents, and building a partition matcher copies
    them (a third of a megabyte per 5,000 commits of the bench log, and its pools pinned).
    Only the youngest generation is collected, every 20,000 new containers: that garbage
    dies young, and each survivor is walked once. With the default thresholds the frozen
    history left the oldest generation empty, so the 25% rule walked the audit's survivors
    again and again (the audit 33.9 -> 43.1 s CPU at 1M in one loaded run; ~15% at 100k
    with the oldest generation left alone).
    """
    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(_YOUNG, _NEVER, _NEVER)
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        # Back to the oldest generation, as paused_gc leaves its survivors: a process that
        # goes on (the suite calls the command in process) must not keep everything alive
        # now out of the collector, nor skip paused_gc's own freeze for good (the suite ran
        # ~3x slower). Only when nobody else froze objects: unfreeze would thaw theirs too.
        if frozen_before == 0:
            gc.unfreeze()
        if not was_enabled:
            gc.disable()


# Collection thresholds under `young_gc`: the youngest generation every 20,000 new
# containers (the default 700 cost ~15% of the audit's CPU); the older ones never.
_YOUNG = 20_000
_NEVER = 1 << 30


def load_history(
    uri: str, *, start: int | None = None, end: int | None = None, parallel: Parallel = False
) -> History:
    """Read the log of `uri` and summarise every available commit in [start, end].

    `parallel` lets a whole history be summarised on two processes (see parallel.py): for
    one-shot commands, not for long-running servers and workers that should not fork.
    """
    with paused_gc():
        log = open_log(uri)
        return history_from_log(log, start=start, end=end, parallel=parallel)


def history_from_log(
    log: DeltaLog, *, start: int | None = None, end: int | None = None, parallel: Parallel = False
) -> History:
    with paused_gc():
        return _history_from_log(log, start, end, parallel)


def _history_from_log(
    log: DeltaLog, start: int | None, end: int | None, parallel: Parallel = False
) -> History:
    listing = log.listing
    first = listing.commit_versions[0] if listing.commit_versions else listing.latest_version
    start = first if start is None else max(start, first)
    if start > first:
        # A window (the tail): the state before it, advanced by the window's own commits, so
        # the log is replayed once.
        state = log.snapshot(start - 1)
        metadata_timeline, protocol_timeline = _initial_timelines(state, start)
        commits = _applied(log.iter_commits(start, end), state)
    else:
        state = log.snapshot(end)
        metadata_timeline, protocol_timeline = [], []
        commits = None
    # The whole history: its integrity is checked on the same read (a window's is not: the
    # kinds are table-level, see integrity_findings).
    tap = IntegrityTap(log, start) if commits is None and listing.commit_versions else None
    sink = tap.observe_refs if tap is not None else None
    if commits is None and parallel:
        when = parallel if callable(parallel) else None
        summaries = summarize_log_parallel(
            log, start, end, metadata_timeline, protocol_timeline, tap, when
        )
    elif commits is None:  # the whole history: straight from the files (see digest.py)
        summaries = summarize_log(log, start, end, metadata_timeline, protocol_timeline, sink=sink)
    else:
        summaries = list(summarize_commits(commits, metadata_timeline, protocol_timeline))
    return history_of(
        log,
        state,
        summaries,
        metadata_timeline,
        protocol_timeline,
        tap.findings if tap is not None and summaries else None,
        tap.dv if tap is not None and summaries else None,
    )


def history_of(
    log: DeltaLog,
    state: TableState,
    summaries: list[CommitSummary],
    metadata_timeline: MetadataTimeline,
    protocol_timeline: ProtocolTimeline,
    integrity: list[Any] | None = None,
    dv_track: DvTrack | None = None,
) -> History:
    """The `History` of summaries read from `log` up to `state`. A range whose commits changed
    no configuration gets the state's own as its timelines' one entry (what the audit reads)."""
    if not metadata_timeline and state.metadata is not None:
        metadata_timeline.append((state.version, state.metadata))
    if not protocol_timeline and state.protocol is not None:
        protocol_timeline.append((state.version, state.protocol))
    return History(
        table_uri=log.uri,
        listing=log.listing,
        state=state,
        summaries=summaries,
        metadata_timeline=metadata_timeline,
        protocol_timeline=protocol_timeline,
        integrity=integrity,
        dv_track=dv_track,
        _log=log,
    )


def _applied(commits: Iterable[Commit], state: TableState) -> Iterator[Commit]:
    for commit in commits:
        apply_commit(state, commit)
        yield commit


def _initial_timelines(state: TableState, start: int) -> tuple[MetadataTimeline, ProtocolTimeline]:
    """Seed the config timelines with what was in force before `start`."""
    metadata = [(start - 1, state.metadata)] if state.metadata else []
    protocol = [(start - 1, state.protocol)] if state.protocol else []
    return metadata, protocol
