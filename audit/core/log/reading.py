"""Reading commit files: one, or a range streamed in order with read-ahead on threads."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from audit.core.log.commits import parse_commit
from audit.core.log.layout import _commit_path
from audit.core.log.listing import _as_store, _check_range, list_log
from audit.core.model import Commit, LogListing
from audit.core.storage.store import LogStore
from audit.core.storage.stores import LocalStore


def read_commit(
    source: LogStore | str | os.PathLike[str], version: int, listing: LogListing | None = None
) -> Commit:
    """Read and parse one commit. With a listing, a missing version gets a precise message."""
    store = _as_store(source)
    if listing is not None:
        _check_range(listing, version, version)
    commit = parse_commit(version, store.read_bytes(_commit_path(version)))
    mtimes = listing.file_modification_times if listing is not None else {}
    _set_file_time(store, commit, mtimes)
    return commit


def _needs_file_time(commit_info: dict[str, Any] | None) -> bool:
    """No recorded timestamp (the file's time is the last resort), or an in-commit timestamp
    (such a commit keeps its three times apart in its provenance)."""
    if commit_info is None:
        return True
    if "inCommitTimestamp" in commit_info:
        return True
    return type(commit_info.get("timestamp")) is not int


def _set_file_time(store: LogStore, commit: Commit, mtimes: dict[int, int]) -> None:
    """Stat the file only when its time is needed: most commits record their own."""
    mtime = mtimes.get(commit.version)
    if mtime is None and _needs_file_time(commit.commit_info):
        mtime = store.modification_time(_commit_path(commit.version))
        if mtime is not None:
            mtimes[commit.version] = mtime
    commit.file_modification_time = mtime


def _read_many(store: LogStore, paths: list[str]) -> list[bytes]:
    return [store.read_bytes(p) for p in paths]


def _read_ahead(store: LogStore, paths: list[str]) -> Iterator[bytes]:
    """Yield the bytes of `paths` in order, reading ahead on worker threads.

    Local files are read in batches (a future per tiny file would cost more than the read);
    remote stores get one request per file and more threads, since latency dominates there.
    """
    local = isinstance(store, LocalStore)
    batch, workers, window = (256, 1, 4) if local else (1, 16, 64)
    if len(paths) <= batch:
        yield from _read_many(store, paths)
        return
    chunks = (paths[i : i + batch] for i in range(0, len(paths), batch))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delta-log-read")
    pending: deque[Future[list[bytes]]] = deque()
    try:
        for chunk in chunks:
            pending.append(pool.submit(_read_many, store, chunk))
            if len(pending) >= window:
                break
        while pending:
            done = pending.popleft().result()
            nxt = next(chunks, None)
            if nxt is not None:
                pending.append(pool.submit(_read_many, store, nxt))
            yield from done
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def iter_commits(
    source: LogStore | str | os.PathLike[str],
    listing: LogListing | None = None,
    start: int | None = None,
    end: int | None = None,
) -> Iterator[Commit]:
    """Stream commits `start..end` (inclusive; default: every available commit) in order.

    Only a bounded window of file contents is held at a time, never the whole log.
    """
    store = _as_store(source)
    listing = listing or list_log(store)
    mtimes = listing.file_modification_times
    for version, data in iter_commit_files(store, listing, start, end):
        commit = parse_commit(version, data)
        _set_file_time(store, commit, mtimes)
        yield commit


def iter_commit_files(
    store: LogStore, listing: LogListing, start: int | None = None, end: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """(version, bytes) of the commit files `start..end`, in order, read ahead on threads."""
    if not listing.commit_versions and (start is None or end is None):
        return  # a checkpoint-only log (every commit cleaned up): no commit to stream
    start = listing.commit_versions[0] if start is None else start
    end = listing.commit_versions[-1] if end is None else end
    if start > end:
        return
    versions = _check_range(listing, start, end)
    data_iter = _read_ahead(store, [_commit_path(v) for v in versions])
    yield from zip(versions, data_iter, strict=True)


def set_file_time(store: LogStore, commit: Commit, listing: LogListing) -> None:
    """Give `commit` its file's modification time when it records no timestamp of its own."""
    _set_file_time(store, commit, listing.file_modification_times)
