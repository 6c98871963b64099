"""Replayed table states kept between tail steps, so a step does not re-read the checkpoint.

Every tail step replays the table's state before its window (`DeltaLog.snapshot`): the newest
checkpoint at or below that version, then the commits after it. With a commit a second the
checkpoint is the same one step after step, and reading it was most of a step's work on a table
of many files (a checkpoint is every live file's add action: 3,000 files cost ~70 ms of CPU a
step under the profiler, 100,000 files seconds). A `StateCache` keeps the state each step
replayed; the next step takes it and applies only the commits since.

The answer is what a fresh replay gives: a kept state is used only while the replay would start
from the same checkpoint (`replay_origin`) and every commit between is listed, so the same
actions are applied in the same order. A new checkpoint is read once, then kept in turn. The
cache is bounded by the live files it holds in all (the actions are shared with the states the
steps use, so it adds little while a step runs, and holds the tables' file sets between them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from audit.core.log.replay import _commits_present, copy_state
from audit.core.model import LogListing, TableState


class StateCache:
    """A thread-safe LRU of replayed states by table URI, bounded by their live files."""

    def __init__(self, max_files: int):
        self.max_files = max_files
        self.files = 0
        self._items: OrderedDict[str, tuple[int, TableState]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def take(self, uri: str, origin: int, listing: LogListing, version: int) -> TableState | None:
        """The kept state, to advance to `version` (replayed from checkpoint `origin`), or None
        when a fresh replay is needed. It leaves the cache (no copy: a replay that fails
        half-way leaves nothing behind); `put` keeps the result."""
        with self._lock:
            entry = self._items.pop(uri, None)
            if entry is not None:
                self.files -= len(entry[1].files)
        usable = (
            entry is not None
            and entry[0] == origin
            and listing.first_available_version <= entry[1].version <= version
            and version <= listing.latest_version
            and _commits_present(listing, entry[1].version + 1, version)
        )
        if not usable:
            self.misses += 1
            return None
        self.hits += 1
        assert entry is not None
        return entry[1]

    def put(self, uri: str, origin: int, state: TableState) -> None:
        """Keep a copy of `state` (replayed from checkpoint `origin`), unless it is more than a
        quarter of the bound: one huge table must not push every other one out."""
        size = len(state.files)
        if size > self.max_files // 4:
            self.drop_table(uri)
            return
        kept = copy_state(state)
        with self._lock:
            old = self._items.pop(uri, None)
            self.files -= len(old[1].files) if old is not None else 0
            self._items[uri] = (origin, kept)
            self.files += size
            while self.files > self.max_files and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self.files -= len(dropped.files)

    def drop_table(self, uri: str) -> None:
        with self._lock:
            old = self._items.pop(uri, None)
            if old is not None:
                self.files -= len(old[1].files)
