"""Following a log as it grows, at a cost independent of its length.

A tail tick asks one question, "anything new after the version I know?". Answering it by
listing the whole `_delta_log` costs one LIST per 1,000 entries on S3, and re-reading the
commits a window needs costs a GET each, every tick. Here:

- `extend_listing` lists only the entries after the last known version (S3 `start-after`:
  one request whatever the log's length) and extends the known `LogListing` with them. It
  gives up (returns None, the caller lists in full) whenever the log did not simply grow:
  the last known version vanished (table deleted or replaced), versions are missing (log
  cleanup ran ahead of us), or a checkpoint appeared beyond the commits.
- `CachingStore` keeps the bytes of immutable log files (commits, checkpoints, sidecars:
  Delta never rewrites them) in a shared, size-bounded LRU, so re-reading a window of
  already-read commits costs no request. `_last_checkpoint` is mutable and never cached.
- `TailedLog` is a `DeltaLog` whose `refresh()` is incremental and whose reads go through the
  cache. A full listing still runs when the incremental one gives up.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

import pyarrow as pa

from audit.core.history.state_cache import StateCache
from audit.core.log import LOG_DIR, DeltaLog, apply_commit, commit_file_name, list_log
from audit.core.log.layout import _COMPACTION
from audit.core.log.listing import _complete_checkpoints, pointer_behind, read_last_checkpoint
from audit.core.log.replay import replay_origin
from audit.core.model import LogListing, TableState
from audit.core.numbers import INT64_MAX, log_int
from audit.core.storage.store import FileEntry, LogStore
from audit.core.storage.stores import LocalStore

_LOG_PREFIX = f"{LOG_DIR}/"


def _is_commit_name(name: str) -> bool:
    # ASCII digits within 64 bits (numbers.log_int): "²" passes str.isdigit(), not int().
    return len(name) == 25 and name.endswith(".json") and log_int(name[:20]) is not None


def list_after(store: LogStore, after: str) -> list[FileEntry]:
    """Entries of `_delta_log` whose names sort after `after` (top-level files only)."""
    lister = getattr(store, "list_after", None)
    if lister is not None:
        entries = lister(LOG_DIR, after)
    else:
        # Local disks and pyarrow stores: a full directory read, filtered. Cheap on a disk.
        entries = [e for e in store.list(LOG_DIR, stats=False) if e.name > after]
    return [e for e in entries if "/" not in e.name and not e.is_dir]


def extend_listing(store: LogStore, known: LogListing) -> LogListing | None:
    """`known` extended with what was written after it, or None when only a full listing can
    tell what happened (see the module docstring). One listing request on S3."""
    last = known.latest_version
    # Start just before the last known commit so it is listed too: its absence means the log
    # was deleted or replaced underneath us.
    after = commit_file_name(last - 1) if last > 0 else ""
    commits: dict[int, int | None] = {}
    checkpoint_names: list[str] = []
    compactions: list[tuple[int, int, str]] = []
    for entry in list_after(store, after):
        name = entry.name
        if _is_commit_name(name):
            commits[int(name[:20])] = entry.modification_time
        elif ".checkpoint." in name:
            checkpoint_names.append(name)
        elif (m := _COMPACTION.match(name)) and int(m.group(2)) <= INT64_MAX:
            compactions.append((int(m.group(1)), int(m.group(2)), name))
    checkpoints = _complete_checkpoints(checkpoint_names)
    if last not in commits and last not in checkpoints:
        return None
    new_versions = sorted(v for v in commits if v > last)
    if new_versions and new_versions != list(range(last + 1, new_versions[-1] + 1)):
        return None  # a hole after what we know: let the full listing name it
    latest = new_versions[-1] if new_versions else last
    if any(v > latest for v in checkpoints):
        return None  # a checkpoint beyond the commits (cleanup, or commits not yet visible)
    new_checkpoints = bool(checkpoints.keys() - known.checkpoints.keys())
    # The pointer is re-read when a checkpoint appears, and while it stays behind the newest
    # one: a writer puts `_last_checkpoint` after the checkpoint, so one listing can see the
    # checkpoint before its pointer. A pointer left behind on purpose costs a GET a step.
    pointer = known.last_checkpoint
    if new_checkpoints or pointer_behind(known):
        pointer = read_last_checkpoint(store)
    if not new_versions and not new_checkpoints and pointer == known.last_checkpoint:
        return known  # idle: nothing to rebuild
    mtimes = dict(known.file_modification_times)
    mtimes.update((v, t) for v in new_versions if (t := commits[v]) is not None)
    known_compactions = {c[2] for c in known.compactions}
    return replace(
        known,
        commit_versions=known.commit_versions + new_versions,
        checkpoints=dict(sorted({**known.checkpoints, **checkpoints}.items())),
        compactions=sorted(
            [*known.compactions, *(c for c in compactions if c[2] not in known_compactions)]
        ),
        latest_version=latest,
        file_modification_times=mtimes,
        last_checkpoint=pointer,
    )


def _immutable(path: str) -> bool:
    """Commits, checkpoints, sidecars and compactions are written once and never changed."""
    if not path.startswith(_LOG_PREFIX):
        return False
    name = path[len(_LOG_PREFIX) :]
    return name[:1].isdigit() or name.startswith("_sidecars/")


class ByteCache:
    """A thread-safe LRU of file contents bounded by total size (shared by many stores)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0
        self._items: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple[str, str]) -> bytes | None:
        with self._lock:
            data = self._items.get(key)
            if data is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return data

    def put(self, key: tuple[str, str], data: bytes) -> None:
        if len(data) > self.max_bytes // 4:
            return  # one huge checkpoint must not flush everything else
        with self._lock:
            old = self._items.pop(key, None)
            self.size -= len(old) if old is not None else 0
            self._items[key] = data
            self.size += len(data)
            while self.size > self.max_bytes and self._items:
                _, dropped = self._items.popitem(last=False)
                self.size -= len(dropped)

    def drop_table(self, uri: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == uri]:
                self.size -= len(self._items.pop(key))


class CachingStore:
    """A LogStore whose reads of immutable log files are served from a `ByteCache`."""

    def __init__(self, inner: LogStore, cache: ByteCache):
        self.inner = inner
        self.cache = cache
        self.uri = inner.uri

    def read_bytes(self, path: str) -> bytes:
        if not _immutable(path):
            return self.inner.read_bytes(path)
        key = (self.uri, path)
        data = self.cache.get(key)
        if data is None:
            data = self.inner.read_bytes(path)
            self.cache.put(key, data)
        return data

    def open_input(self, path: str) -> pa.NativeFile:
        if _immutable(path):
            return pa.BufferReader(self.read_bytes(path))
        return self.inner.open_input(path)

    def __getattr__(self, name: str) -> Any:
        # list, list_after, exists, modification_time, full_path, ...: not cached.
        return getattr(self.inner, name)


class TailedLog(DeltaLog):
    """A DeltaLog kept between tail ticks: incremental refreshes, cached reads."""

    def __init__(
        self, store: LogStore, cache: ByteCache | None = None, states: StateCache | None = None
    ):
        self.cache = cache
        self.states = states
        if cache is not None and not isinstance(store, LocalStore):
            store = CachingStore(store, cache)  # type: ignore[assignment]
        super().__init__(store)
        self.full_listings = 1

    @classmethod
    def resume(
        cls,
        store: LogStore,
        listing: LogListing,
        cache: ByteCache | None = None,
        states: StateCache | None = None,
    ) -> TailedLog:
        """A log picked up from a listing another process made (audit.tail.shared): no listing
        here; the caller's `refresh()` lists only what was written after it."""
        log_ = cls.__new__(cls)
        log_.cache = cache
        log_.states = states
        if cache is not None and not isinstance(store, LocalStore):
            store = CachingStore(store, cache)  # type: ignore[assignment]
        log_.store = store
        log_.uri = store.uri
        log_.listing = listing
        log_.full_listings = 0
        return log_

    def refresh(self) -> LogListing:
        known = self.listing
        extended = extend_listing(self.store, known)
        if extended is None or self._cleaned_up(known, extended):
            return self.relist()
        self.listing = extended
        return extended

    def _cleaned_up(self, known: LogListing, extended: LogListing) -> bool:
        """Log cleanup runs after a checkpoint and deletes the oldest files first: when a new
        checkpoint appeared, one HEAD on the oldest known commit tells whether it ran."""
        if not known.commit_versions or extended.checkpoints.keys() <= known.checkpoints.keys():
            return False
        return not self.has_commit(known.commit_versions[0])

    def snapshot(self, version: int | None = None) -> TableState:
        """The state at `version` (default: latest), from the state the last call replayed
        when the replay would start from the same checkpoint (audit.core.history.state_cache):
        a tail step asks for the state before its window on every tick."""
        if self.states is None:
            return super().snapshot(version)
        target = self.listing.latest_version if version is None else version
        origin = replay_origin(self.listing, target)
        state = self.states.take_state(self.uri, origin, self.listing, target)
        if state is None:
            state = super().snapshot(version)
        else:
            for commit in self.iter_commits(state.version + 1, target):
                apply_commit(state, commit)
            state.version = target
        self.states.put_state(self.uri, origin, state)
        return state

    def relist(self) -> LogListing:
        """A full listing; cached bytes and the kept state of this table are dropped (the log
        may be a new one)."""
        if self.cache is not None:
            self.cache.drop_table(self.uri)
        if self.states is not None:
            self.states.take(self.uri)
        self.full_listings += 1
        self.listing = list_log(self.store)
        return self.listing

    def has_commit(self, version: int) -> bool:
        """Is commit `version` there? One HEAD (a stat locally), never a listing."""
        path = f"{LOG_DIR}/{commit_file_name(version)}"
        probe = getattr(self.store, "has_file", None)
        if probe is not None:
            return bool(probe(path))
        if isinstance(self.store, LocalStore):
            return os.path.isfile(self.store.full_path(path))
        return self.store.exists(path)
