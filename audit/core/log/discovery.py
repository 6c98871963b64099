"""Find the Delta tables under a root (a local folder or an object-store prefix).

A Delta table is a folder whose `_delta_log/` holds a commit (`NNNNNNNNNNNNNNNNNNNN.json`) or a
checkpoint. The walk lists one folder level at a time (one delimited LIST per folder on an
object store), to a bounded depth, and never descends into a table: its partition folders can
number in the millions and hold no tables. Folders whose names start with "_" or "." (Spark's
`_temporary`, `_SUCCESS` markers, `.hive-staging`) are skipped. A folder that cannot be listed
is reported with its cause and the walk goes on: one forbidden prefix never hides the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from audit.core.errors import DeltaAuditError
from audit.core.log.layout import LOG_DIR
from audit.core.numbers import log_int
from audit.core.storage.store import LogStore
from audit.core.storage.stores import FolderWalk, open_store

DEFAULT_MAX_DEPTH = 6
DEFAULT_MAX_FOLDERS = 20_000

_COMMIT = re.compile(r"^([0-9]{20})\.json$")  # ASCII digits: `\d` takes any Unicode digit
# Classic, multi-part (N.checkpoint.i.n.parquet) and V2 (N.checkpoint.<uuid>.json|parquet).
_CHECKPOINT = re.compile(r"^([0-9]{20})\.checkpoint(?:\.[^/]+)?\.(?:parquet|json)$")


@dataclass(frozen=True, slots=True)
class FoundTable:
    uri: str
    path: str  # relative to the root ("" when the root itself is a table)
    latest_version: int  # the highest commit or checkpoint version in the listing
    depth: int


@dataclass(frozen=True, slots=True)
class FolderError:
    path: str
    message: str
    cause: str | None


@dataclass(slots=True)
class Discovery:
    root: str
    tables: list[FoundTable] = field(default_factory=list)
    errors: list[FolderError] = field(default_factory=list)
    folders_listed: int = 0
    truncated: bool = False  # stopped at max_folders: tables may be missing


def latest_log_version(names: list[str]) -> int | None:
    """Highest version named by a commit or checkpoint file in a `_delta_log` listing."""
    best: int | None = None
    for name in names:
        m = _COMMIT.match(name) or _CHECKPOINT.match(name)
        version = log_int(m.group(1)) if m is not None else None  # within 64 bits
        if version is not None:
            best = version if best is None or version > best else best
    return best


def discover_tables(
    root: str,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_folders: int = DEFAULT_MAX_FOLDERS,
    store: LogStore | None = None,
) -> Discovery:
    """Every Delta table under `root`, breadth first. DeltaAuditError if the root itself fails."""
    store = store or open_store(root)
    base = store.uri.rstrip("/")
    found = Discovery(root=base)
    walk = FolderWalk(store, stats=False, max_listings=max_folders)
    for path, depth, entries in walk:
        if isinstance(entries, DeltaAuditError):
            found.errors.append(FolderError(path, str(entries), entries.cause))
            continue
        subdirs = sorted(e.name for e in entries if e.is_dir)
        if LOG_DIR in subdirs:
            table = _table_at(walk, base, path, depth, found)
            if table is not None:
                found.tables.append(table)
                continue  # never into a table's own data folders
        if depth >= max_depth:
            continue
        for name in subdirs:
            if not name.startswith(("_", ".")):
                walk.descend(f"{path}/{name}" if path else name, depth + 1)
    found.folders_listed, found.truncated = walk.listings, walk.truncated
    found.tables.sort(key=lambda t: t.uri)
    return found


def _table_at(
    walk: FolderWalk, base: str, path: str, depth: int, found: Discovery
) -> FoundTable | None:
    log_path = f"{path}/{LOG_DIR}" if path else LOG_DIR
    try:
        names = [e.name for e in walk.store.list(log_path, stats=False) if not e.is_dir]
    except DeltaAuditError as err:
        found.errors.append(FolderError(log_path, str(err), err.cause))
        return None
    walk.listings += 1  # the log's listing counts against the walk's budget
    latest = latest_log_version(names)
    if latest is None:
        return None  # an empty or foreign _delta_log: not a table (yet)
    uri = f"{base}/{path}" if path else base
    return FoundTable(uri, path, latest, depth)
