"""Listing `_delta_log` and reconciling it into a `LogListing`; checking version ranges."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from audit.core.errors import DeltaAuditError
from audit.core.log.layout import (
    _CLASSIC_CHECKPOINT,
    _COMPACTION,
    _MULTIPART_CHECKPOINT,
    _V2_CHECKPOINT,
    LAST_CHECKPOINT,
    LOG_DIR,
    commit_file_name,
)
from audit.core.model import LogListing
from audit.core.numbers import INT64_MAX
from audit.core.storage.store import FileEntry, LogStore
from audit.core.storage.stores import LocalStore, open_store
from audit.core.vocab import StorageCause


def _as_store(source: LogStore | str | os.PathLike[str]) -> LogStore:
    if isinstance(source, (str, os.PathLike)):
        return open_store(source)
    return source


def read_last_checkpoint(store: LogStore) -> dict[str, Any] | None:
    """`_last_checkpoint` is only a hint: anything unreadable about it means 'no hint'."""
    try:
        parsed = orjson.loads(store.read_bytes(f"{LOG_DIR}/{LAST_CHECKPOINT}"))
    except (DeltaAuditError, orjson.JSONDecodeError):
        return None
    if type(parsed) is not dict or type(parsed.get("version")) is not int:
        return None
    return parsed


def pointed_version(listing: LogListing) -> int | None:
    """The version `_last_checkpoint` names, None when it is missing or names none."""
    pointed = (listing.last_checkpoint or {}).get("version")
    return pointed if isinstance(pointed, int) else None


def pointer_behind(listing: LogListing) -> bool:
    """`_last_checkpoint` missing or behind the newest complete checkpoint listed: readers
    start further back (the health's `last_checkpoint_stale`)."""
    if not listing.checkpoints:
        return False
    pointed = pointed_version(listing)
    return pointed is None or pointed < max(listing.checkpoints)


def _complete_checkpoints(names: Iterable[str]) -> dict[int, list[str]]:
    """version -> files of one complete checkpoint. Incomplete multi-part sets are dropped."""
    single: dict[int, list[str]] = {}
    v2: dict[int, list[str]] = {}
    parts: dict[tuple[int, int], dict[int, str]] = {}
    for name in names:
        if m := _CLASSIC_CHECKPOINT.match(name):
            single[int(m.group(1))] = [name]
        elif m := _V2_CHECKPOINT.match(name):
            v2.setdefault(int(m.group(1)), []).append(name)
        elif m := _MULTIPART_CHECKPOINT.match(name):
            part, total = int(m.group(2)), int(m.group(3))
            parts.setdefault((int(m.group(1)), total), {})[part] = name
    complete: dict[int, list[str]] = {}
    for (version, total), found in parts.items():
        if total > 0 and set(found) == set(range(1, total + 1)):
            complete[version] = [found[i] for i in range(1, total + 1)]
    for version, candidates in v2.items():
        # Several V2 checkpoints for one version are equivalent; take one deterministically.
        complete[version] = [sorted(candidates)[0]]
    complete.update(single)  # a classic checkpoint is the cheapest to read
    # Twenty digits reach past 64 bits: such a name is no version of ours.
    return {v: files for v, files in complete.items() if v <= INT64_MAX}


def _rebuildable_versions(commits: set[int], checkpoints: set[int]) -> set[int]:
    """Versions whose state can be rebuilt: a checkpoint, or a commit on top of such a version."""
    ok: set[int] = set()
    for v in sorted(commits | checkpoints):
        if v in checkpoints or (v in commits and (v == 0 or v - 1 in ok)):
            ok.add(v)
    return ok


def _missing_version(latest: int, commits: set[int], ok: set[int]) -> int:
    """The commit whose absence breaks the chain leading to `latest`."""
    v = latest
    while v - 1 in commits and v - 1 not in ok:
        v -= 1
    return v - 1


class _LogFiles(NamedTuple):
    """What one listing of `_delta_log` holds, sorted by kind (nothing reconciled yet)."""

    commit_mtimes: dict[int, int | None]  # version -> the file's mtime when listed
    checkpoint_names: list[str]
    compactions: list[tuple[int, int, str]]
    has_last_checkpoint: bool


def list_log(source: LogStore | str | os.PathLike[str]) -> LogListing:
    """List and reconcile `_delta_log`. Raises DeltaAuditError if the table cannot be read."""
    store = _as_store(source)
    _require_log_dir(store)
    files = _listed_log_files(store)
    checkpoints = _complete_checkpoints(files.checkpoint_names)
    commit_mtimes = files.commit_mtimes
    if not commit_mtimes and not checkpoints:
        raise DeltaAuditError(
            f"{store.uri} is not a Delta table: _delta_log holds no commit or checkpoint files",
            table_uri=store.uri,
        )
    latest, first = _available_range(store, set(commit_mtimes), set(checkpoints))
    commit_versions = sorted(commit_mtimes)
    if commit_versions and commit_versions[0] < first:
        commit_versions = commit_versions[bisect.bisect_left(commit_versions, first) :]
    times = list(commit_mtimes.values())
    listed_times = times.count(None) < len(times)  # a local disk lists names alone
    return LogListing(
        table_uri=store.uri,
        commit_versions=commit_versions,
        checkpoints={v: checkpoints[v] for v in sorted(checkpoints)},
        compactions=sorted(files.compactions),
        last_checkpoint=read_last_checkpoint(store) if files.has_last_checkpoint else None,
        latest_version=latest,
        first_available_version=first,
        # Complete for object stores (free in their listings); filled lazily for local disks.
        file_modification_times={
            v: mtime for v in commit_versions if (mtime := commit_mtimes[v]) is not None
        }
        if listed_times
        else {},
    )


def _require_log_dir(store: LogStore) -> None:
    """Raise the precise error for a table that does not exist or is not a Delta table."""
    if store.exists(LOG_DIR):
        return
    if not store.exists(""):
        raise DeltaAuditError(
            f"{store.uri} does not exist", table_uri=store.uri, cause=StorageCause.NOT_FOUND
        )
    raise DeltaAuditError(
        f"{store.uri} is not a Delta table: no _delta_log directory", table_uri=store.uri
    )


# _commit_version's answer for a name of a commit's shape that names no version: dropped.
_NO_VERSION = -1


def _commit_version(name: str) -> int | None:
    """The version of a commit file's name (20 digits, `.json`); _NO_VERSION for a name of
    that shape whose 20 characters are no version within 64 bits; None for any other name.
    Commit names are by far the most common: tested without a regex, ASCII first ("²" is a
    digit to str.isdigit() and not to int())."""
    if len(name) != 25 or not name.endswith(".json") or not (head := name[:20]).isascii():
        return None
    if head.isdigit() and (version := int(head)) <= INT64_MAX:
        return version
    return _NO_VERSION


def _listed_log_files(store: LogStore) -> _LogFiles:
    """One listing of `_delta_log`, sorted by kind. A local disk lists names alone, without
    an entry object or a stat per commit file: a million commit names cost 1.2 s that way,
    2.6 s as entries sorted one by one. (Only a plain LocalStore: a store wrapping one, as
    staged.py's adds commits to its listing, lists through `list`.)"""
    if type(store) is not LocalStore:
        return _sort_log_files(store.list(LOG_DIR, stats=False))
    commits: dict[int, int | None] = {}
    rest: list[FileEntry] = []
    for name in store.list_names(LOG_DIR):
        if (version := _commit_version(name)) is not None:
            # A directory of a commit's name is kept too, as _sort_log_files keeps it.
            if version != _NO_VERSION:
                commits[version] = None
        elif ".checkpoint." in name or name.endswith(".compacted.json") or name == LAST_CHECKPOINT:
            # Only a name the listing may use is looked at further: a directory is skipped.
            rest.append(FileEntry(name, None, None, store.is_dir(f"{LOG_DIR}/{name}")))
    return _sort_log_files(rest)._replace(commit_mtimes=commits)


def _sort_log_files(entries: Iterable[FileEntry]) -> _LogFiles:
    commit_mtimes: dict[int, int | None] = {}
    checkpoint_names: list[str] = []
    compactions: list[tuple[int, int, str]] = []
    has_last_checkpoint = False
    for entry in entries:
        name = entry.name
        # (A directory with a commit's name is kept: reading it fails with a clear message.)
        if (version := _commit_version(name)) is not None:
            if version != _NO_VERSION:
                commit_mtimes[version] = entry.modification_time
        elif entry.is_dir:
            continue
        elif ".checkpoint." in name:
            checkpoint_names.append(name)
        elif (m := _COMPACTION.match(name)) and int(m.group(2)) <= INT64_MAX:
            compactions.append((int(m.group(1)), int(m.group(2)), name))
        elif name == LAST_CHECKPOINT:
            has_last_checkpoint = True
        # .crc files, temp files, _commits/ and anything else are ignored.
    return _LogFiles(commit_mtimes, checkpoint_names, compactions, has_last_checkpoint)


def _available_range(store: LogStore, commits: set[int], checkpoints: set[int]) -> tuple[int, int]:
    """(latest, first available) version; an error naming the commit that breaks the chain."""
    contiguous = _contiguous_range(commits, checkpoints)
    if contiguous is not None:
        return contiguous
    latest = max(commits | checkpoints)
    ok = _rebuildable_versions(commits, checkpoints)
    if latest not in ok:
        missing = _missing_version(latest, commits, ok)
        raise DeltaAuditError(
            f"{store.uri}: _delta_log is missing version {missing} ({commit_file_name(missing)}) "
            f"and no later checkpoint covers the gap",
            table_uri=store.uri,
            version=missing,
        )
    first = latest
    while first - 1 in ok:
        first -= 1
    return latest, first


def _contiguous_range(commits: set[int], checkpoints: set[int]) -> tuple[int, int] | None:
    """_available_range's answer for the usual log, without walking a million versions: its
    commits without a gap from one that can be rebuilt, and no checkpoint past the last.
    None for any other log (the walk decides)."""
    if not commits:
        return None
    lo, hi = min(commits), max(commits)
    if len(commits) != hi - lo + 1 or (checkpoints and max(checkpoints) > hi):
        return None
    if not (lo == 0 or lo in checkpoints or lo - 1 in checkpoints):
        return None
    # Every commit lo..hi is rebuildable; below lo only checkpoints are.
    first = lo
    while first - 1 in checkpoints:
        first -= 1
    return hi, first


def _check_range(listing: LogListing, start: int, end: int) -> list[int]:
    """The commit versions in [start, end], or a clear error naming the first missing one."""
    if start < listing.first_available_version:
        raise _unavailable(listing, start)
    if end > listing.latest_version:
        raise _beyond_latest(listing, end)
    versions = listing.commit_versions
    lo, hi = bisect.bisect_left(versions, start), bisect.bisect_right(versions, end)
    if hi - lo != end - start + 1:
        expected = start
        for v in versions[lo:hi]:
            if v != expected:
                break
            expected += 1
        raise DeltaAuditError(
            f"{listing.table_uri}: commit file {commit_file_name(expected)} (version {expected}) is "
            "missing; only its checkpoint remains",
            table_uri=listing.table_uri,
            version=expected,
        )
    return versions[lo:hi]


def _beyond_latest(listing: LogListing, version: int) -> DeltaAuditError:
    return DeltaAuditError(
        f"version {version} does not exist: the latest version of {listing.table_uri} is "
        f"{listing.latest_version}",
        table_uri=listing.table_uri,
        version=version,
    )


def _unavailable(listing: LogListing, version: int) -> DeltaAuditError:
    if version < 0:
        return DeltaAuditError(f"version {version} is not a valid table version")
    return DeltaAuditError(
        f"version {version} of {listing.table_uri} is no longer available: the log starts at "
        f"version {listing.first_available_version} (earlier versions were removed by log cleanup)",
        table_uri=listing.table_uri,
        version=version,
    )
