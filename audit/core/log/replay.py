"""Log replay: a `TableState` from the latest usable checkpoint plus the commits after it."""

from __future__ import annotations

import bisect
import os
from dataclasses import replace
from typing import Any

import orjson

from audit.core.errors import DeltaAuditError
from audit.core.log.checkpoints import read_checkpoint
from audit.core.log.coerce import _dict, _int_like, _str, _str_list
from audit.core.log.layout import CLUSTERING_DOMAIN
from audit.core.log.listing import _as_store, _beyond_latest, _unavailable, list_log
from audit.core.log.reading import iter_commits
from audit.core.model import Commit, IdentityColumn, LogListing, TableState
from audit.core.storage.store import LogStore


def path_key(path: str) -> str:
    """One spelling per file: 'file:/x', 'file:///x' and '/x' name the same file.

    Relative paths (the common case) and anything else are their own key.
    """
    if path[:1] not in ("/", "f"):
        return path  # relative: the common case
    if path.startswith("file:"):
        rest = path[5:]
        return "/" + rest.lstrip("/") if rest.startswith("/") else path
    if path.startswith("/"):
        return "/" + path.lstrip("/")
    return path


def _remove_live(state: TableState, path: str) -> None:
    if state.files.pop(path, None) is not None:
        return
    canonical = path_key(path)
    if canonical[:1] != "/":
        return  # not an absolute path: no other spelling of it can be live
    for live in [p for p in state.files if p[:1] == "/" or p.startswith("file:")]:
        if path_key(live) == canonical:
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


def replay_origin(listing: LogListing, version: int) -> int:
    """The checkpoint `initial_state` starts `version`'s replay from when it is readable (-1:
    none, the replay starts at version 0). A state replayed from it and then advanced commit
    by commit to any later version is what replaying that version gives, while this answer
    stays the same for it (audit.core.history.state_cache)."""
    for cp in sorted((v for v in listing.checkpoints if v <= version), reverse=True):
        return cp if _commits_present(listing, cp + 1, version) else -1
    return -1


def copy_state(state: TableState) -> TableState:
    """A state `apply_commit` can advance without changing `state`: its dicts and lists are
    copied; the actions in them are shared (nothing changes an action once read)."""
    return replace(
        state,
        files=dict(state.files),
        txns=dict(state.txns),
        domain_metadata=dict(state.domain_metadata),
        clustering_columns=list(state.clustering_columns),
        identity_columns=list(state.identity_columns),
    )


def _replay(store: LogStore, listing: LogListing, version: int | None) -> TableState:
    target = listing.latest_version if version is None else version
    if target > listing.latest_version:
        raise _beyond_latest(listing, target)
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
