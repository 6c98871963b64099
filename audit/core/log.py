"""Reading a Delta table's `_delta_log`: listing, commits, checkpoints and log replay.

The pieces, in the order a reader meets them:

- `list_log` reconciles what `_delta_log` holds (commits, classic / multi-part / V2
  checkpoints, compaction files, `_last_checkpoint`) into a `LogListing`, including the
  earliest version whose state can still be rebuilt (`first_available_version`).
- `parse_commit` turns one commit file's bytes into a `Commit` (orjson, one line per action).
- `iter_commits` streams commits in version order, reading files ahead on a thread pool
  while the main thread parses (file reads release the GIL).
- `replay_log` starts from the latest usable checkpoint and applies later commits to
  produce a `TableState`. A checkpoint that cannot be read is skipped for an older one.

All strings from the log are untrusted: malformed input raises `DeltaAuditError` with one
line naming the version and file, and any other value of an unexpected type is ignored.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote

import orjson

from audit.core.errors import DeltaAuditError
from audit.core.model import (
    AddFile,
    Cdc,
    Commit,
    DomainMetadata,
    IdentityColumn,
    LogListing,
    Metadata,
    Protocol,
    RemoveFile,
    TableState,
    Txn,
)
from audit.core.storage import LocalStore, LogStore, open_store

LOG_DIR = "_delta_log"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"
LAST_CHECKPOINT = "_last_checkpoint"
CLUSTERING_DOMAIN = "delta.clustering"

_CLASSIC_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint\."
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.(parquet|json)$"
)
_COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")

# Columns of a checkpoint that replay needs. `remove` is left out on purpose: tombstones do
# not affect the live files, and skipping them makes large checkpoints cheaper to read.
_CHECKPOINT_COLUMNS = (
    "add",
    "metaData",
    "protocol",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)
_ADD_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "tags",
    "deletionVector",
    "baseRowId",
    "clusteringProvider",
)


def commit_file_name(version: int) -> str:
    return f"{version:020d}.json"


def _commit_path(version: int) -> str:
    return f"{LOG_DIR}/{commit_file_name(version)}"


# --------------------------------------------------------------------------- small coercions
# Values from the log are untrusted: a field of the wrong type is treated as absent.


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _int_like(value: Any) -> int | None:
    """Identity column metadata is written as numbers by some writers and strings by others."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def _bool(value: Any, default: bool) -> bool:
    return value if type(value) is bool else default


def _dict(value: Any) -> dict[str, Any] | None:
    return value if type(value) is dict else None


def _str_map(value: Any) -> dict[str, str | None]:
    """A map<string,string>: a JSON object, or the list of pairs pyarrow gives for a parquet map."""
    if type(value) is dict:
        items = value.items()
    elif type(value) is list:
        items = (pair for pair in value if type(pair) is tuple and len(pair) == 2)
    else:
        return {}
    out: dict[str, str | None] = {}
    for key, item in items:
        if type(key) is not str:
            continue
        out[key] = item if item is None or type(item) is str else str(item)
    return out


def _partition_values(value: Any) -> dict[str, str | None]:
    if type(value) is dict:
        # Fast path: a well-formed JSON object is used as it is.
        for item in value.values():
            if item is not None and type(item) is not str:
                return _str_map(value)
        return value
    return _str_map(value)


def _str_list(value: Any) -> list[str]:
    return [item for item in value if type(item) is str] if type(value) is list else []


def _decode_path(path: str) -> str:
    # PROTOCOL.md: paths in add/remove/cdc are URL-encoded (RFC 2396). `unquote`, not
    # `unquote_plus`: a '+' in a path is a literal plus.
    return unquote(path) if "%" in path else path


# --------------------------------------------------------------------------- actions


class _Malformed(Exception):
    """A known action lacks a required field; the caller says where (built only on error)."""


def _add_from(d: dict[str, Any]) -> AddFile:
    # The hot path of reading a log: inlined type checks, positional construction.
    path = d.get("path")
    if type(path) is not str or not path:
        raise _Malformed("add action without a path")
    size, mtime, stats = d.get("size"), d.get("modificationTime"), d.get("stats")
    data_change, tags = d.get("dataChange"), d.get("tags")
    dv, row_id, provider = d.get("deletionVector"), d.get("baseRowId"), d.get("clusteringProvider")
    return AddFile(
        _decode_path(path),
        _partition_values(d.get("partitionValues")),
        size if type(size) is int else None,
        mtime if type(mtime) is int else None,
        data_change if type(data_change) is bool else True,
        stats if type(stats) is str else None,
        None if tags is None else _str_map(tags),  # type: ignore[arg-type]
        dv if type(dv) is dict else None,
        row_id if type(row_id) is int else None,
        provider if type(provider) is str else None,
    )


def _remove_from(d: dict[str, Any]) -> RemoveFile:
    path = d.get("path")
    if type(path) is not str or not path:
        raise _Malformed("remove action without a path")
    values, size, deleted = d.get("partitionValues"), d.get("size"), d.get("deletionTimestamp")
    data_change, extended, dv = (
        d.get("dataChange"),
        d.get("extendedFileMetadata"),
        d.get("deletionVector"),
    )
    return RemoveFile(
        _decode_path(path),
        None if values is None else _partition_values(values),
        size if type(size) is int else None,
        deleted if type(deleted) is int else None,
        data_change if type(data_change) is bool else True,
        extended if type(extended) is bool else None,
        dv if type(dv) is dict else None,
    )


def _cdc_from(d: dict[str, Any]) -> Cdc:
    path = d.get("path")
    if type(path) is not str or not path:
        raise _Malformed("cdc action without a path")
    return Cdc(
        path=_decode_path(path),
        partition_values=_partition_values(d.get("partitionValues")),
        size=_int(d.get("size")),
        data_change=_bool(d.get("dataChange"), False),
    )


def _metadata_from(d: dict[str, Any]) -> Metadata:
    fmt = _dict(d.get("format")) or {}
    return Metadata(
        id=_str(d.get("id")),
        schema_string=_str(d.get("schemaString")),
        partition_columns=_str_list(d.get("partitionColumns")),
        configuration={k: v for k, v in _str_map(d.get("configuration")).items() if v is not None},
        name=_str(d.get("name")),
        description=_str(d.get("description")),
        created_time=_int(d.get("createdTime")),
        format_provider=_str(fmt.get("provider")),
    )


def _protocol_from(d: dict[str, Any]) -> Protocol:
    reader, writer = _int(d.get("minReaderVersion")), _int(d.get("minWriterVersion"))
    if reader is None or writer is None:
        raise _Malformed("protocol action without minReaderVersion/minWriterVersion")
    features = d.get("readerFeatures"), d.get("writerFeatures")
    return Protocol(
        min_reader_version=reader,
        min_writer_version=writer,
        reader_features=_str_list(features[0]) if features[0] is not None else None,
        writer_features=_str_list(features[1]) if features[1] is not None else None,
    )


def _txn_from(d: dict[str, Any]) -> Txn:
    app_id, version = _str(d.get("appId")), _int(d.get("version"))
    if app_id is None or version is None:
        raise _Malformed("txn action without appId/version")
    return Txn(app_id=app_id, version=version, last_updated=_int(d.get("lastUpdated")))


def _domain_from(d: dict[str, Any]) -> DomainMetadata:
    domain = _str(d.get("domain"))
    if domain is None:
        raise _Malformed("domainMetadata action without a domain")
    return DomainMetadata(
        domain=domain,
        configuration=_str(d.get("configuration")) or "",
        removed=_bool(d.get("removed"), False),
    )


def _on_add(c: Commit, v: dict[str, Any]) -> None:
    c.adds.append(_add_from(v))


def _on_remove(c: Commit, v: dict[str, Any]) -> None:
    c.removes.append(_remove_from(v))


def _on_cdc(c: Commit, v: dict[str, Any]) -> None:
    c.cdcs.append(_cdc_from(v))


def _on_metadata(c: Commit, v: dict[str, Any]) -> None:
    c.metadata = _metadata_from(v)


def _on_protocol(c: Commit, v: dict[str, Any]) -> None:
    c.protocol = _protocol_from(v)


def _on_txn(c: Commit, v: dict[str, Any]) -> None:
    c.txns.append(_txn_from(v))


def _on_domain(c: Commit, v: dict[str, Any]) -> None:
    c.domain_metadata.append(_domain_from(v))


def _on_commit_info(c: Commit, v: dict[str, Any]) -> None:
    if c.commit_info is None:
        c.commit_info = v


_ACTION_HANDLERS: dict[str, Callable[[Commit, dict[str, Any]], None]] = {
    "add": _on_add,
    "remove": _on_remove,
    "cdc": _on_cdc,
    "metaData": _on_metadata,
    "protocol": _on_protocol,
    "txn": _on_txn,
    "domainMetadata": _on_domain,
    "commitInfo": _on_commit_info,
}


# --------------------------------------------------------------------------- commit parsing


def _json_line_error(
    label: str, file_name: str, lineno: int, line: bytes, err: Exception
) -> DeltaAuditError:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return DeltaAuditError(
            f"{label}: line {lineno} of {file_name} is not valid UTF-8 (bad byte at offset {bad.start})"
        )
    reason = str(err).splitlines()[0] if str(err) else "malformed"
    return DeltaAuditError(
        f"{label}: line {lineno} is not valid JSON ({reason}) in {file_name}; the file may be truncated or corrupt"
    )


class _SlowPath(Exception):
    """The one-call fast path met something unusual; the line-by-line path will explain it."""


def _parse_actions(
    data: bytes,
    commit: Commit,
    kind: str = "commit",
    file_name: str | None = None,
    sidecars: list[dict[str, Any]] | None = None,
) -> Commit:
    """Parse newline-delimited JSON actions into `commit`.

    Fast path: the whole file as one JSON array (one orjson call per file instead of one per
    line). Anything unusual (blank lines, a corrupt line, a malformed action) is re-parsed
    line by line, which raises an error naming the line. `kind` and `file_name` only serve
    error messages. `sidecars` collects V2 checkpoint sidecar actions.
    """
    try:
        actions = orjson.loads(b"[" + data.strip().replace(b"\n", b",") + b"]")
        if actions:
            _apply_actions(actions, commit, sidecars)
            return commit
    except (orjson.JSONDecodeError, _SlowPath, _Malformed):
        _reset(commit)
    return _parse_lines(data, commit, kind, file_name, sidecars)


def _apply_actions(
    actions: list[Any], commit: Commit, sidecars: list[dict[str, Any]] | None
) -> None:
    adds, removes, handlers = commit.adds, commit.removes, _ACTION_HANDLERS
    for obj in actions:
        if type(obj) is not dict:
            raise _SlowPath
        for key, value in obj.items():
            # The three actions of almost every line, dispatched without a lookup.
            if type(value) is dict:
                if key == "add":
                    adds.append(_add_from(value))
                    continue
                if key == "remove":
                    removes.append(_remove_from(value))
                    continue
                if key == "commitInfo":
                    if commit.commit_info is None:
                        commit.commit_info = value
                    continue
            _apply_other(commit, key, value, handlers, sidecars)


def _apply_other(
    commit: Commit,
    key: str,
    value: Any,
    handlers: dict[str, Callable[[Commit, dict[str, Any]], None]],
    sidecars: list[dict[str, Any]] | None,
) -> None:
    handler = handlers.get(key)
    if handler is None:
        if sidecars is not None and key == "sidecar" and type(value) is dict:
            sidecars.append(value)
        elif not (sidecars is not None and key == "checkpointMetadata"):
            commit.unknown_actions.append(key)
    elif type(value) is dict:
        handler(commit, value)
    elif value is not None:  # {"add": null} carries nothing; anything else is malformed
        raise _Malformed(f"'{key}' is not a JSON object")


def _reset(commit: Commit) -> None:
    for items in (commit.adds, commit.removes, commit.cdcs, commit.txns, commit.domain_metadata):
        items.clear()
    commit.unknown_actions.clear()
    commit.commit_info = commit.metadata = commit.protocol = None


def _parse_lines(
    data: bytes,
    commit: Commit,
    kind: str,
    file_name: str | None,
    sidecars: list[dict[str, Any]] | None,
) -> Commit:
    """The line-by-line parser: tolerant of blank lines, precise about errors."""
    handlers = _ACTION_HANDLERS
    seen_action = False
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            if not line.strip():
                continue  # a blank line (e.g. "\r" or spaces) carries no action
            raise _json_line_error(
                _label(kind, commit), _file_of(commit, file_name), lineno, line, err
            ) from None
        if type(obj) is not dict:
            raise _located(kind, commit, file_name, lineno, "is not a JSON object")
        seen_action = True
        for key, value in obj.items():
            try:
                if key == "commitInfo" and type(value) is dict:
                    if commit.commit_info is None:
                        commit.commit_info = value
                else:
                    _apply_other(commit, key, value, handlers, sidecars)
            except _Malformed as err:
                raise _located(kind, commit, file_name, lineno, str(err)) from None
    if not seen_action:
        raise DeltaAuditError(
            f"{_label(kind, commit)}: {_file_of(commit, file_name)} is empty (no actions)",
            version=commit.version,
        )
    return commit


def _label(kind: str, commit: Commit) -> str:
    return f"{kind} {commit.version}"


def _file_of(commit: Commit, file_name: str | None) -> str:
    return file_name or commit_file_name(commit.version)


def _located(
    kind: str, commit: Commit, file_name: str | None, lineno: int, problem: str
) -> DeltaAuditError:
    return DeltaAuditError(
        f"{_label(kind, commit)}: line {lineno} of {_file_of(commit, file_name)}: {problem}",
        version=commit.version,
    )


def parse_commit(version: int, data: bytes) -> Commit:
    """Parse the bytes of commit file `version`. Raises DeltaAuditError on unreadable input."""
    return _parse_actions(data, Commit(version=version))


# --------------------------------------------------------------------------- listing


def _as_store(source: LogStore | str | os.PathLike[str]) -> LogStore:
    if isinstance(source, (str, os.PathLike)):
        return open_store(source)
    return source


def _read_last_checkpoint(store: LogStore) -> dict[str, Any] | None:
    """`_last_checkpoint` is only a hint: anything unreadable about it means 'no hint'."""
    try:
        parsed = orjson.loads(store.read_bytes(f"{LOG_DIR}/{LAST_CHECKPOINT}"))
    except (DeltaAuditError, orjson.JSONDecodeError):
        return None
    if type(parsed) is not dict or type(parsed.get("version")) is not int:
        return None
    return parsed


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
    return complete


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


def list_log(source: LogStore | str | os.PathLike[str]) -> LogListing:
    """List and reconcile `_delta_log`. Raises DeltaAuditError if the table cannot be read."""
    store = _as_store(source)
    if not store.exists(LOG_DIR):
        if not store.exists(""):
            raise DeltaAuditError(
                f"{store.uri} does not exist", table_uri=store.uri, cause="not_found"
            )
        raise DeltaAuditError(
            f"{store.uri} is not a Delta table: no _delta_log directory", table_uri=store.uri
        )
    entries = store.list(LOG_DIR, stats=False)
    commit_mtimes: dict[int, int | None] = {}
    other_names: list[str] = []
    compactions: list[tuple[int, int, str]] = []
    has_last_checkpoint = False
    for entry in entries:
        name = entry.name
        # Commit names are by far the most common: test them without a regex. (A directory
        # with a commit's name is kept: reading it fails with a clear message.)
        if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
            commit_mtimes[int(name[:20])] = entry.modification_time
        elif entry.is_dir:
            continue
        elif ".checkpoint." in name:
            other_names.append(name)
        elif m := _COMPACTION.match(name):
            compactions.append((int(m.group(1)), int(m.group(2)), name))
        elif name == LAST_CHECKPOINT:
            has_last_checkpoint = True
        # .crc files, temp files, _commits/ and anything else are ignored.
    checkpoints = _complete_checkpoints(other_names)
    if not commit_mtimes and not checkpoints:
        raise DeltaAuditError(
            f"{store.uri} is not a Delta table: _delta_log holds no commit or checkpoint files",
            table_uri=store.uri,
        )
    commits, checkpoint_versions = set(commit_mtimes), set(checkpoints)
    latest = max(commits | checkpoint_versions)
    ok = _rebuildable_versions(commits, checkpoint_versions)
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
    commit_versions = sorted(v for v in commits if v >= first)
    return LogListing(
        table_uri=store.uri,
        commit_versions=commit_versions,
        checkpoints={v: checkpoints[v] for v in sorted(checkpoints)},
        compactions=sorted(compactions),
        last_checkpoint=_read_last_checkpoint(store) if has_last_checkpoint else None,
        latest_version=latest,
        first_available_version=first,
        # Complete for object stores (free in their listings); filled lazily for local disks.
        file_modification_times={
            v: mtime for v in commit_versions if (mtime := commit_mtimes[v]) is not None
        },
    )


# --------------------------------------------------------------------------- reading commits


def _check_range(listing: LogListing, start: int, end: int) -> list[int]:
    """The commit versions in [start, end], or a clear error naming the first missing one."""
    if start < listing.first_available_version:
        raise _unavailable(listing, start)
    if end > listing.latest_version:
        raise DeltaAuditError(
            f"version {end} does not exist: the latest version of {listing.table_uri} is "
            f"{listing.latest_version}",
            table_uri=listing.table_uri,
            version=end,
        )
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


def _unavailable(listing: LogListing, version: int) -> DeltaAuditError:
    if version < 0:
        return DeltaAuditError(f"version {version} is not a valid table version")
    return DeltaAuditError(
        f"version {version} of {listing.table_uri} is no longer available: the log starts at "
        f"version {listing.first_available_version} (earlier versions were removed by log cleanup)",
        table_uri=listing.table_uri,
        version=version,
    )


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


def _has_timestamp(commit_info: dict[str, Any] | None) -> bool:
    if commit_info is None:
        return False
    return type(commit_info.get("timestamp")) is int or "inCommitTimestamp" in commit_info


def _set_file_time(store: LogStore, commit: Commit, mtimes: dict[int, int]) -> None:
    """The file's mtime is only a last-resort timestamp: stat the file only when needed."""
    mtime = mtimes.get(commit.version)
    if mtime is None and not _has_timestamp(commit.commit_info):
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


# --------------------------------------------------------------------------- checkpoints


def _one_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else err.__class__.__name__


def _struct_rows(column: Any, fields: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Non-null rows of a struct column as dicts, keeping only `fields` when given."""
    import pyarrow.compute as pc

    valid = column.filter(pc.is_valid(column))
    if len(valid) == 0:
        return []
    if fields is None:
        return valid.to_pylist()
    present = [f for f in fields if valid.type.get_field_index(f) >= 0]
    values = [pc.struct_field(valid, [f]).to_pylist() for f in present]
    return [dict(zip(present, row, strict=True)) for row in zip(*values, strict=True)]


def _read_parquet_actions(
    store: LogStore, path: str, label: str, commit: Commit, sidecars: list[dict[str, Any]]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with store.open_input(path) as source:
            parquet = pq.ParquetFile(source)
            names = set(parquet.schema_arrow.names)
            table = parquet.read(columns=[c for c in _CHECKPOINT_COLUMNS if c in names])
        where = f"{label} ({path.rsplit('/', 1)[-1]})"
        for name in table.column_names:
            column = table.column(name)
            if not pa.types.is_struct(column.type):
                raise DeltaAuditError(f"{where}: column '{name}' is not a struct")
            if name == "add":
                commit.adds.extend(_add_from(row) for row in _struct_rows(column, _ADD_FIELDS))
            elif name == "sidecar":
                sidecars.extend(_struct_rows(column))
            elif name != "checkpointMetadata":
                handler = _ACTION_HANDLERS[name]
                for row in _struct_rows(column):
                    handler(commit, row)
    except DeltaAuditError:
        raise
    except _Malformed as err:
        raise DeltaAuditError(f"{label}: {path.rsplit('/', 1)[-1]}: {err}") from None
    except Exception as err:  # pyarrow raises many types for a damaged file; all mean "unreadable"
        raise DeltaAuditError(
            f"{label}: cannot read {path.rsplit('/', 1)[-1]}: {_one_line(err)}",
            table_uri=store.uri,
        ) from None


def _sidecar_path(sidecar: dict[str, Any], label: str) -> str:
    raw = sidecar.get("path")
    if type(raw) is not str or not raw:
        raise DeltaAuditError(f"{label}: sidecar action without a path")
    # Sidecars always live in _delta_log/_sidecars; writers should store just the file name.
    name = unquote(raw).rstrip("/").rsplit("/", 1)[-1]
    return f"{SIDECAR_DIR}/{name}"


def read_checkpoint(store: LogStore, version: int, files: list[str]) -> Commit:
    """Read the actions of a complete checkpoint (classic, multi-part or V2 with sidecars).

    Returned as a `Commit` for `version` (adds are the live files; removes are not read).
    """
    label = f"checkpoint {version}"
    commit = Commit(version=version)
    sidecars: list[dict[str, Any]] = []
    for name in files:
        path = f"{LOG_DIR}/{name}"
        if name.endswith(".json"):
            _parse_actions(store.read_bytes(path), commit, "checkpoint", name, sidecars)
        else:
            _read_parquet_actions(store, path, label, commit, sidecars)
    for sidecar in sidecars:
        _read_parquet_actions(store, _sidecar_path(sidecar, label), label, commit, [])
    commit.unknown_actions.clear()  # in a checkpoint these are non-replay actions, not news
    return commit


# --------------------------------------------------------------------------- replay


def _canonical_path(path: str) -> str | None:
    """One spelling of an absolute path: 'file:/x', 'file:///x' and '/x' name the same file."""
    if path.startswith("file:"):
        rest = path[5:]
        return "/" + rest.lstrip("/") if rest.startswith("/") else None
    if path.startswith("/"):
        return "/" + path.lstrip("/")
    return None


def _remove_live(state: TableState, path: str) -> None:
    if state.files.pop(path, None) is not None:
        return
    canonical = _canonical_path(path)
    if canonical is None:
        return
    for live in [p for p in state.files if p[:1] == "/" or p.startswith("file:")]:
        if _canonical_path(live) == canonical:
            del state.files[live]


def _clustering_from_domain(configuration: str) -> list[str]:
    try:
        parsed = orjson.loads(configuration)
    except orjson.JSONDecodeError:
        return []
    columns = parsed.get("clusteringColumns") if type(parsed) is dict else None
    if type(columns) is not list:
        return []
    out = []
    for column in columns:
        if type(column) is list and column and all(type(p) is str for p in column):
            out.append(".".join(column))
        elif type(column) is str:
            out.append(column)
    return out


def _clustering_from_commit_info(commit_info: dict[str, Any] | None) -> list[str] | None:
    """`clusterBy` of CREATE/REPLACE/CLUSTER BY commits (a JSON-encoded list of names)."""
    params = _dict((commit_info or {}).get("operationParameters"))
    if not params or "clusterBy" not in params:
        return None
    value = params["clusterBy"]
    if type(value) is str:
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    columns = _str_list(value)
    operation = _str((commit_info or {}).get("operation")) or ""
    # Plain writes to clustered tables may carry an empty clusterBy: that is not "unclustered".
    if not columns and not operation.startswith(("CREATE", "REPLACE", "CLUSTER BY")):
        return None
    return columns


def identity_columns(schema_string: str | None) -> list[IdentityColumn]:
    """Identity columns declared in a schema's field metadata (`delta.identity.*`)."""
    if not schema_string:
        return []
    try:
        schema = orjson.loads(schema_string)
    except orjson.JSONDecodeError:
        return []
    fields = schema.get("fields") if type(schema) is dict else None
    out = []
    for field in fields if type(fields) is list else []:
        meta = _dict(field.get("metadata")) if type(field) is dict else None
        if not meta or not any(k.startswith("delta.identity.") for k in meta):
            continue
        explicit = meta.get("delta.identity.allowExplicitInsert")
        if isinstance(explicit, str):
            explicit = {"true": True, "false": False}.get(explicit.lower())
        out.append(
            IdentityColumn(
                name=_str(field.get("name")) or "",
                start=_int_like(meta.get("delta.identity.start")),
                step=_int_like(meta.get("delta.identity.step")),
                high_water_mark=_int_like(meta.get("delta.identity.highWaterMark")),
                allow_explicit_insert=explicit if type(explicit) is bool else None,
            )
        )
    return out


def empty_state() -> TableState:
    """The state before version 0."""
    return TableState(version=-1, metadata=None, protocol=None, files={})


def apply_commit(state: TableState, commit: Commit) -> None:
    """Apply one commit (or checkpoint) to `state` in place.

    Removes are applied before adds: a commit may remove and re-add the same path (e.g. a
    new deletion vector for a file), in either line order, and the file stays live.
    """
    files = state.files
    for remove in commit.removes:
        _remove_live(state, remove.path)
    for add in commit.adds:
        files[add.path] = add
    if commit.metadata is not None:
        state.metadata = commit.metadata
        state.identity_columns = identity_columns(commit.metadata.schema_string)
    if commit.protocol is not None:
        state.protocol = commit.protocol
    for txn in commit.txns:
        state.txns[txn.app_id] = txn
    for domain in commit.domain_metadata:
        if domain.removed:
            state.domain_metadata.pop(domain.domain, None)
        else:
            state.domain_metadata[domain.domain] = domain
        if domain.domain == CLUSTERING_DOMAIN:
            state.clustering_columns = (
                [] if domain.removed else _clustering_from_domain(domain.configuration)
            )
    if CLUSTERING_DOMAIN not in state.domain_metadata:
        # Fallback for writers that record clustering only in commitInfo.
        columns = _clustering_from_commit_info(commit.commit_info)
        if columns is not None:
            state.clustering_columns = columns
    state.version = commit.version


def _state_from_checkpoint(store: LogStore, version: int, files: list[str]) -> TableState:
    checkpoint = read_checkpoint(store, version, files)
    # A checkpoint must carry the table's metaData and protocol; one that lacks them is
    # damaged, and replay should fall back to an older checkpoint or to the commits.
    for action, value in (("metaData", checkpoint.metadata), ("protocol", checkpoint.protocol)):
        if value is None:
            raise DeltaAuditError(
                f"checkpoint {version} ({files[0]}) has no {action} action", table_uri=store.uri
            )
    state = empty_state()
    apply_commit(state, checkpoint)
    return state


def _commits_present(listing: LogListing, start: int, end: int) -> bool:
    versions = listing.commit_versions
    lo, hi = bisect.bisect_left(versions, start), bisect.bisect_right(versions, end)
    return hi - lo == end - start + 1


def initial_state(store: LogStore, listing: LogListing, version: int) -> TableState:
    """The state to replay from: the latest readable checkpoint <= version, else version -1.

    A checkpoint that cannot be read (corrupt, missing sidecar) is skipped for an older one,
    or for replay from version 0 when every commit is still there.
    """
    first_error: DeltaAuditError | None = None
    for cp in sorted((v for v in listing.checkpoints if v <= version), reverse=True):
        if not _commits_present(listing, cp + 1, version):
            break  # commits between an older checkpoint and `version` were cleaned up
        try:
            return _state_from_checkpoint(store, cp, listing.checkpoints[cp])
        except DeltaAuditError as err:
            first_error = first_error or err
    if listing.first_available_version == 0 and _commits_present(listing, 0, version):
        return empty_state()
    if first_error is not None:
        raise first_error
    raise _unavailable(listing, version)


def _replay(store: LogStore, listing: LogListing, version: int | None) -> TableState:
    target = listing.latest_version if version is None else version
    if target > listing.latest_version:
        raise DeltaAuditError(
            f"version {target} does not exist: the latest version of {listing.table_uri} is "
            f"{listing.latest_version}",
            table_uri=listing.table_uri,
            version=target,
        )
    if target < listing.first_available_version:
        raise _unavailable(listing, target)
    state = initial_state(store, listing, target)
    for commit in iter_commits(store, listing, state.version + 1, target):
        apply_commit(state, commit)
    state.version = target
    return state


def replay_log(source: LogStore | str | os.PathLike[str], version: int | None = None) -> TableState:
    """The table's state as of `version` (default: latest)."""
    store = _as_store(source)
    return _replay(store, list_log(store), version)


# --------------------------------------------------------------------------- convenience


class DeltaLog:
    """A table's log: its store, its listing (refreshable) and reading helpers."""

    def __init__(self, source: LogStore | str | os.PathLike[str]):
        self.store = _as_store(source)
        self.uri = self.store.uri
        self.listing = list_log(self.store)

    def refresh(self) -> LogListing:
        self.listing = list_log(self.store)
        return self.listing

    @property
    def latest_version(self) -> int:
        return self.listing.latest_version

    @property
    def first_available_version(self) -> int:
        return self.listing.first_available_version

    def read_commit(self, version: int) -> Commit:
        return read_commit(self.store, version, self.listing)

    def iter_commits(self, start: int | None = None, end: int | None = None) -> Iterator[Commit]:
        return iter_commits(self.store, self.listing, start, end)

    def snapshot(self, version: int | None = None) -> TableState:
        return _replay(self.store, self.listing, version)


def open_log(uri: str | os.PathLike[str]) -> DeltaLog:
    return DeltaLog(uri)
