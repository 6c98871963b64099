"""Replayed table states kept between tail steps, so a step does not re-read the checkpoint.

Every tail step replays the table's state before its window (`DeltaLog.snapshot`): the newest
checkpoint at or below that version, then the commits after it. With a commit a second the
checkpoint is the same one step after step, and reading it was most of a step's work on a table
of many files (a checkpoint is every live file's add action: 3,000 files cost ~70 ms of CPU a
step under the profiler, 100,000 files seconds). The tail keeps the state each step replayed;
the next step takes it and applies only the commits since (`TailedLog.snapshot`).

The answer is what a fresh replay gives: a kept state is used only while the replay would start
from the same checkpoint (`replay_origin`) and every commit between is listed, so the same
actions are applied in the same order. A new checkpoint is read once, then kept in turn.

`KeptFiles` is the bounded store: an LRU of values that each hold a set of live files, bounded
by those files in all (the actions are shared with the states the steps use, so it adds little
while a step runs, and holds the tables' file sets between them). The health's per-file sums
are kept in one too (audit.ingest.health_store).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from audit.core.log.replay import _commits_present, copy_state
from audit.core.model import LogListing, TableState


class KeptFiles:
    """A thread-safe LRU of values by key, bounded by the live files they hold in all."""

    def __init__(self, max_files: int):
        self.max_files = max_files
        self.files = 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: Hashable) -> Any | None:
        """The kept value, which leaves the store (nothing is copied: a caller that fails
        half-way leaves nothing behind), or None."""
        with self._lock:
            entry = self._items.pop(key, None)
            if entry is None:
                return None
            self.files -= entry[1]
            return entry[0]

    def put(self, key: Hashable, value: Any, files: int) -> None:
        """Keep `value` (holding `files` live files), unless it is more than a quarter of the
        bound: one huge table must not push every other one out."""
        if files > self.max_files // 4:
            self.take(key)
            return
        with self._lock:
            old = self._items.pop(key, None)
            self.files -= old[1] if old is not None else 0
            self._items[key] = (value, files)
            self.files += files
            while self.files > self.max_files and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self.files -= dropped

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items


def continues(
    kept_origin: Hashable, kept_version: int, origin: Hashable, listing: LogListing, version: int
) -> bool:
    """Whether a replay kept at `kept_version` (started from `kept_origin`), advanced by the
    listed commits after it, is what a fresh replay of `version` from `origin` gives: the same
    start, no step back, and every commit between listed."""
    return (
        kept_origin == origin
        and listing.first_available_version <= kept_version <= version
        and version <= listing.latest_version
        and _commits_present(listing, kept_version + 1, version)
    )


class StateCache(KeptFiles):
    """Replayed states by table URI, each with the checkpoint its replay started from."""

    def __init__(self, max_files: int):
        super().__init__(max_files)
        self.hits = self.misses = 0

    def take_state(
        self, uri: str, origin: int, listing: LogListing, version: int
    ) -> TableState | None:
        """The kept state, to advance to `version` (replayed from checkpoint `origin`), or None
        when a fresh replay is needed; `put_state` keeps the result."""
        entry = self.take(uri)
        if entry is None or not continues(entry[0], entry[1].version, origin, listing, version):
            self.misses += 1
            return None
        self.hits += 1
        return entry[1]

    def put_state(self, uri: str, origin: int, state: TableState) -> None:
        """Keep a copy of `state` (the caller goes on changing its own); a state `put` would
        refuse is not copied first."""
        if len(state.files) > self.max_files // 4:
            self.take(uri)
            return
        self.put(uri, (origin, copy_state(state)), len(state.files))
