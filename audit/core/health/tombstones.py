"""A table's state at a version together with its tombstones (the `remove` actions in force).

`log.replay_log` skips tombstones on purpose (they do not change the live files); table health
needs them for VACUUM's reclaimable bytes. This replays the same checkpoint + commits and also
keeps every `remove` whose path is not live again, reading the checkpoint's `remove` column
(classic, multi-part, V2 and its sidecars) that the fast replay leaves out.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.state_cache import KeptFiles, continues
from audit.core.history.summary import History
from audit.core.log import (
    LOG_DIR,
    DeltaLog,
    apply_commit,
    commit_file_name,
    initial_state,
    iter_commits,
    parse_commit,
)
from audit.core.log.checkpoints import _sidecar_path, _struct_rows
from audit.core.log.coerce import _decode_path
from audit.core.model import Commit, LogListing, RemoveFile, TableState
from audit.core.numbers import log_int
from audit.core.storage.store import LogStore

_REMOVE_FIELDS = ("path", "size", "deletionTimestamp", "dataChange", "partitionValues")


@dataclass
class Snapshot:
    """The table at `state.version`, its tombstones and the version's commit timestamp (ms)."""

    state: TableState
    tombstones: dict[str, RemoveFile] = field(default_factory=dict)
    timestamp: int | None = None


def commit_timestamp(commit: Commit) -> int | None:
    """inCommitTimestamp, else commitInfo.timestamp, else the file's modification time."""
    info = commit.commit_info or {}
    for key in ("inCommitTimestamp", "timestamp"):
        value = info.get(key)
        if type(value) is int:
            return value
    return commit.file_modification_time


def snapshot_at(log: DeltaLog, version: int | None = None) -> Snapshot:
    """Replay `log` up to `version` (default latest), keeping tombstones and the timestamp."""
    listing = log.listing
    target = listing.latest_version if version is None else version
    if target > listing.latest_version or target < listing.first_available_version:
        log.snapshot(target)  # raises the log's own precise message
    store = log.store
    state = initial_state(store, listing, target)
    tombstones: dict[str, RemoveFile] = {}
    if state.version >= 0:
        tombstones = checkpoint_tombstones(store, listing, state.version)
        for path in state.files:
            tombstones.pop(path, None)
    timestamp = None
    for commit in iter_commits(store, listing, state.version + 1, target):
        apply_tombstones(tombstones, commit)
        apply_commit(state, commit)
        timestamp = commit_timestamp(commit)
    if timestamp is None and _has_commit(listing, target):
        timestamp = commit_timestamp(log.read_commit(target))
    state.version = target
    return Snapshot(state=state, tombstones=tombstones, timestamp=timestamp)


def _has_commit(listing: LogListing, version: int) -> bool:
    versions = listing.commit_versions
    i = bisect.bisect_left(versions, version)
    return i < len(versions) and versions[i] == version


def apply_tombstones(tombstones: dict[str, RemoveFile], commit: Commit) -> None:
    """Removes become tombstones; a path added again is live, not a tombstone."""
    for remove in commit.removes:
        tombstones[remove.path] = remove
    for add in commit.adds:
        tombstones.pop(add.path, None)


def checkpoint_tombstones(
    store: LogStore, listing: LogListing, version: int
) -> dict[str, RemoveFile]:
    """The `remove` actions a checkpoint carries (tombstones not yet expired when written)."""
    files = listing.checkpoints.get(version, [])
    out: dict[str, RemoveFile] = {}
    sidecars: list[dict[str, Any]] = []
    for name in files:
        if name.endswith(".json"):
            _json_checkpoint_removes(store, f"{LOG_DIR}/{name}", out, sidecars)
        else:
            _parquet_removes(store, f"{LOG_DIR}/{name}", out, sidecars)
    for sidecar in sidecars:
        _parquet_removes(store, _sidecar_path(sidecar, f"checkpoint {version}"), out, [])
    return out


def _json_checkpoint_removes(
    store: LogStore, path: str, out: dict[str, RemoveFile], sidecars: list[dict[str, Any]]
) -> None:
    import orjson

    for line in store.read_bytes(path).splitlines():
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise DeltaAuditError(f"{path}: a line is not valid JSON") from None
        if isinstance(obj, dict):
            if isinstance(obj.get("remove"), dict):
                _keep(out, obj["remove"])
            if isinstance(obj.get("sidecar"), dict):
                sidecars.append(obj["sidecar"])


def _parquet_removes(
    store: LogStore, path: str, out: dict[str, RemoveFile], sidecars: list[dict[str, Any]]
) -> None:
    import pyarrow.parquet as pq

    try:
        with store.open_input(path) as source:
            parquet = pq.ParquetFile(source)
            names = [c for c in ("remove", "sidecar") if c in parquet.schema_arrow.names]
            table = parquet.read(columns=names)
    except Exception as err:  # pyarrow raises many types for a damaged file
        raise DeltaAuditError(f"cannot read tombstones of {path}: {one_line(err)}") from None
    if "remove" in table.column_names:
        for row in _struct_rows(table.column("remove").combine_chunks(), _REMOVE_FIELDS):
            _keep(out, row)
    if "sidecar" in table.column_names:
        sidecars.extend(_struct_rows(table.column("sidecar").combine_chunks()))


def _keep(out: dict[str, RemoveFile], row: dict[str, Any]) -> None:
    raw = row.get("path")
    if not isinstance(raw, str):
        return
    size, ts = row.get("size"), row.get("deletionTimestamp")
    path = _decode_path(raw)
    out[path] = RemoveFile(
        path=path,
        size=log_int(size),
        deletion_timestamp=log_int(ts, signed=True),
        data_change=bool(row.get("dataChange", True)),
    )


def snapshot_from_history(
    history: History, kept: KeptFiles | None = None, key: Hashable = None
) -> Snapshot:
    """The latest version's snapshot reusing the history's replayed state.

    Only tombstones are replayed: the `remove` column of the newest checkpoint, then the
    commits after it. A commit without a `remove` cannot create a tombstone, and while there
    are none it cannot end one either, so its bytes are not parsed (append-only logs).

    `kept` (the tail's, per process) holds the tombstones each call replayed, under `key`:
    the next call starts from them and reads only the commits since, while a fresh replay
    would start from the same origin and every commit between is listed (the same actions in
    the same order; as `audit.core.history.state_cache` does for the state). Without it, a
    tail step re-read every commit since the checkpoint (each a GET on object storage) and
    the checkpoint's tombstones.
    """
    listing, state = history.listing, history.state
    store = history.get_log().store
    target = state.version
    origin = _origin(listing, target)
    found = _kept_tombstones(kept, key, origin, listing, target)
    if found is None:
        tombstones, start, origin = _replay_origin(store, listing, target)
    else:
        tombstones, start = found
    lo = bisect.bisect_left(listing.commit_versions, start)
    hi = bisect.bisect_right(listing.commit_versions, target)
    for version in listing.commit_versions[lo:hi]:
        data = store.read_bytes(f"{LOG_DIR}/{commit_file_name(version)}")
        if not tombstones and b'"remove"' not in data:
            continue
        apply_tombstones(tombstones, parse_commit(version, data))
    if kept is not None:
        kept.put(key, (origin, target, tombstones), len(tombstones) + 1)
    live = state.files
    summary = history.summary(target)
    return Snapshot(
        state=state,
        tombstones={path: r for path, r in tombstones.items() if path not in live},
        timestamp=summary.timestamp if summary else None,
    )


def _origin(listing: LogListing, target: int) -> tuple[str, int]:
    """Where a fresh replay of the tombstones at `target` starts: the newest checkpoint at or
    below it, else the first listed commit."""
    newest = max((v for v in listing.checkpoints if v <= target), default=None)
    if newest is not None:
        return ("checkpoint", newest)
    return ("log", listing.commit_versions[0] if listing.commit_versions else target + 1)


def _replay_origin(
    store: LogStore, listing: LogListing, target: int
) -> tuple[dict[str, RemoveFile], int, tuple[str, int]]:
    """A fresh replay's start: the tombstones of the newest readable checkpoint at or below
    `target` (a damaged one: the next older), the first version after it, and that origin."""
    for cp in sorted((v for v in listing.checkpoints if v <= target), reverse=True):
        try:
            return checkpoint_tombstones(store, listing, cp), cp + 1, ("checkpoint", cp)
        except DeltaAuditError:
            continue  # a damaged checkpoint: replay's fallback already chose another
    start = listing.commit_versions[0] if listing.commit_versions else target + 1
    return {}, start, ("log", start)


def _kept_tombstones(
    kept: KeptFiles | None,
    key: Hashable,
    origin: tuple[str, int],
    listing: LogListing,
    target: int,
) -> tuple[dict[str, RemoveFile], int] | None:
    """The kept tombstones and the first version still to apply, or None (replay afresh)."""
    entry = kept.take(key) if kept is not None else None
    if entry is None:
        return None
    kept_origin, version, tombstones = entry
    if not continues(kept_origin, version, origin, listing, target):
        return None
    return tombstones, version + 1
