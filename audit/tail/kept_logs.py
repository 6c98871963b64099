"""The tail's view of each table's log, kept between ticks in the worker process (`refreshed`).

An idle tick then costs one listing request from the last known version, new commits one GET
each, and re-reading the window a new commit ran concurrently with costs nothing (the bytes
of immutable log files are cached, bounded by AUDIT_LOG_CACHE_MB). A full listing runs on the
first tick of a process, when the incremental listing cannot explain what it sees, after any
error, and at least every AUDIT_FULL_LISTING_SECONDS (to notice log cleanup).

Each worker process has its own cache of bytes; the listing itself is shared by the pool
(audit.tail.shared): a table visiting a process that has not seen it costs one LIST from the
pool's last known version, not a full listing. Nothing here is correctness-critical: dropping
the cache only costs requests.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from django.conf import settings

from audit.core.errors import DeltaAuditError
from audit.core.history.incremental import ByteCache, TailedLog
from audit.core.history.state_cache import StateCache
from audit.core.log import DeltaLog, commit_file_name
from audit.core.storage.stores import open_store
from audit.tail import shared

_lock = threading.Lock()
_logs: OrderedDict[str, tuple[TailedLog, float]] = OrderedDict()  # uri -> (log, listed at)
_cache: ByteCache | None = None
_states: StateCache | None = None


def _byte_cache() -> ByteCache:
    global _cache
    if _cache is None:
        _cache = ByteCache(int(settings.AUDIT_LOG_CACHE_MB * 2**20))
    return _cache


def _state_cache() -> StateCache | None:
    global _states
    if _states is None and settings.AUDIT_STATE_CACHE_FILES > 0:
        _states = StateCache(settings.AUDIT_STATE_CACHE_FILES)
    return _states


def refreshed(uri: str) -> DeltaLog:
    """The table's log, refreshed: incrementally when this process, or another process of the
    pool (audit.tail.shared), has listed it before."""
    now = time.time()
    with _lock:
        entry = _logs.get(uri)
        if entry is not None:
            _logs.move_to_end(uri)
    if entry is None:
        entry = _from_the_pool(uri)
    if entry is None:
        tailed = TailedLog(open_store(uri), _byte_cache(), _state_cache())
        _remember(uri, tailed, now)
        shared.publish(tailed.listing, now)
        return tailed
    tailed, listed_at = entry
    known, full_listings = tailed.listing, tailed.full_listings
    if now - listed_at >= settings.AUDIT_FULL_LISTING_SECONDS:
        # Due by this process's clock; another process may have listed it in full since.
        entry = _from_the_pool(uri) or entry
        tailed, listed_at = entry
        known, full_listings = tailed.listing, tailed.full_listings
    try:
        if now - listed_at >= settings.AUDIT_FULL_LISTING_SECONDS:
            tailed.relist()
        else:
            tailed.refresh()
        if tailed.full_listings > full_listings:  # listed in full (due, or refresh fell back)
            listed_at = now
    except DeltaAuditError:
        forget(uri)
        raise
    _remember(uri, tailed, listed_at)
    if tailed.listing is not known:
        shared.publish(tailed.listing, listed_at)
    return tailed


def _from_the_pool(uri: str) -> tuple[TailedLog, float] | None:
    found = shared.fetch(uri)
    if found is None:
        return None
    listing, listed_at = found
    return TailedLog.resume(open_store(uri), listing, _byte_cache(), _state_cache()), listed_at


def _remember(uri: str, tailed: TailedLog, listed_at: float) -> None:
    with _lock:
        _logs[uri] = (tailed, listed_at)
        _logs.move_to_end(uri)
        while len(_logs) > settings.AUDIT_LOG_CACHE_TABLES:
            _logs.popitem(last=False)


def forget(uri: str) -> None:
    """Drop what this process knows of the table (after an error: the next tick starts over)."""
    with _lock:
        entry = _logs.pop(uri, None)
    if entry is not None and _cache is not None:
        _cache.drop_table(entry[0].uri)
    if entry is not None and _states is not None:
        _states.take(entry[0].uri)
    shared.drop(uri)  # after an error the pool starts over from a full listing too


def forget_all() -> None:
    global _cache, _states
    with _lock:
        _logs.clear()
        _cache = None
        _states = None


def has_commit(uri: str, version: int) -> bool:
    """The beat's "anything new?" probe: one HEAD of the next commit file, never a listing.

    Errors answer True so that the tail runs and records them on the table.
    """
    with _lock:
        entry = _logs.get(uri)
    try:
        if entry is not None:
            return entry[0].has_commit(version)
        store = open_store(uri)
        probe = getattr(store, "has_file", None)
        path = f"_delta_log/{commit_file_name(version)}"
        return bool(probe(path)) if probe is not None else store.exists(path)
    except (DeltaAuditError, OSError, ValueError):
        return True
