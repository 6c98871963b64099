"""Orphan data files: files in a table's data folders that no commit references.

A writer writes its data files first and commits after; when the commit never lands (a
conflict it gave up on, a killed job, an engine that leaks) the files stay, unreferenced, and
cost storage until VACUUM. This module lists the data folders (never `_delta_log` or other
hidden folders, never deleting anything) and reports the files that are referenced by no add
or remove in the available history and are older than the longest possible in-flight commit
(younger ones may belong to a commit still running).

The listing is bounded: at most `max_dirs` directory listings (each one request on an object
store, which pyarrow pages internally), `max_files` files and `max_depth` levels; a scan that
hit a bound says so (`truncated`) and its counts are lower bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audit.core import severity as sev
from audit.core.errors import DeltaAuditError
from audit.core.model import Finding
from audit.core.storage.roots import shown_path
from audit.core.storage.store import LogStore
from audit.core.storage.stores import FolderWalk
from audit.core.vocab import FindingKind
from audit.core.wording.orphans import hour_iso, orphan_files_text

MAX_FILES = 200_000
MAX_DIRS = 20_000
MAX_DEPTH = 8
MAX_SAMPLE = 50
# Nothing commits faster than this: the floor of the in-flight bound.
MIN_IN_FLIGHT_MS = 60 * 60 * 1000
HOUR_MS = 3_600_000


@dataclass
class OrphanScan:
    files: int = 0
    bytes: int = 0
    oldest: int | None = None  # ms, modification time of the oldest orphan
    newest: int | None = None
    # Hour (ms since the epoch, floored) -> [files, bytes] by modification time.
    hours: dict[int, list[int]] = field(default_factory=dict)
    sample: list[dict[str, Any]] = field(default_factory=list)
    in_flight_files: int = 0  # unreferenced but younger than the bound
    listed_files: int = 0
    listed_dirs: int = 0
    truncated: bool = False
    min_age_ms: int = 0

    def add(self, path: str, size: int, mtime: int) -> None:
        self.files += 1
        self.bytes += size
        self.oldest = mtime if self.oldest is None else min(self.oldest, mtime)
        self.newest = mtime if self.newest is None else max(self.newest, mtime)
        hour = self.hours.setdefault(mtime - mtime % HOUR_MS, [0, 0])
        hour[0] += 1
        hour[1] += size
        if len(self.sample) < MAX_SAMPLE:
            self.sample.append({"path": shown_path(path), "size": size, "modification_time": mtime})

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "oldest": self.oldest,
            "newest": self.newest,
            "hours": [
                {"hour": hour_iso(h), "start": h, "files": c, "bytes": b}
                for h, (c, b) in sorted(self.hours.items())
            ],
            "sample": self.sample,
            "in_flight_files": self.in_flight_files,
            "listed_files": self.listed_files,
            "listed_dirs": self.listed_dirs,
            "truncated": self.truncated,
            "min_age_ms": self.min_age_ms,
        }


def _relative(path: str, root: str) -> str:
    """Paths as the listing spells them: relative to the table root, URL-decoded."""
    for prefix in (root.rstrip("/") + "/", "file://" + root.rstrip("/") + "/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    if path.startswith("file:"):
        local = "/" + path[5:].lstrip("/")
        if local.startswith(root.rstrip("/") + "/"):
            return local[len(root.rstrip("/")) + 1 :]
    return path


def referenced_paths(history: Any, root: str) -> set[str]:
    """Every data file an add or remove of the available history names, plus the live files."""
    paths: set[str] = set()
    for s in history.summaries:
        paths.update(s.added_paths, s.removed_paths_all, s.compacted_paths)
    paths.update(history.state.files)
    # Log paths are already URL-decoded: that is the name on disk (Hive escapes stay escaped).
    return {_relative(p, root) for p in paths}


def referenced_among(history: Any, root: str, listed: set[str]) -> set[str]:
    """The listed files that an add or remove of the history (or the live state) names: what
    `referenced_paths` & `listed` is, holding only listed paths (at a million commits the whole
    referenced set was ~150 MB at the audit's peak, for a question about the files on disk)."""
    found: set[str] = set()
    if not listed:
        return found
    for s in history.summaries:
        for group in (s.added_paths, s.removed_paths_all, s.compacted_paths):
            _add_listed(group, root, listed, found)
    _add_listed(history.state.files, root, listed, found)
    return found


def _add_listed(paths: Any, root: str, listed: set[str], found: set[str]) -> None:
    for path in paths:
        if path in listed:
            found.add(path)
            continue
        relative = _relative(path, root)
        if relative in listed:
            found.add(relative)


def in_flight_bound_ms(history: Any, floor_ms: int = MIN_IN_FLIGHT_MS) -> int:
    """The longest a commit of this table was seen in flight (read -> commit), doubled; at
    least `floor_ms`. Files younger than this may belong to a commit still running."""
    longest = 0
    for s in history.summaries:
        read = s.read_version
        if read is None or s.timestamp is None:
            continue
        # History.summary finds a version by position: no dict of every version's time.
        read_commit = history.summary(read)
        read_stamp = read_commit.timestamp if read_commit is not None else None
        if read_stamp is not None:
            longest = max(longest, s.timestamp - read_stamp)
    return max(floor_ms, 2 * longest)


def _hidden(name: str) -> bool:
    # Delta (like Spark) ignores names starting with '_' or '.': _delta_log, _change_data,
    # .tmp files, checksum files; deletion-vector files are referenced by descriptors, not
    # by path, so they are not judged here.
    return name.startswith(("_", ".")) or name.startswith("deletion_vector_")


@dataclass
class DataListing:
    """The data folders' files as listed (path relative to the root, size, mtime)."""

    files: list[tuple[str, int, int]] = field(default_factory=list)
    listed_dirs: int = 0
    truncated: bool = False

    def paths(self) -> set[str]:
        return {path for path, _, _ in self.files}


def list_data_files(
    store: LogStore,
    *,
    max_files: int = MAX_FILES,
    max_dirs: int = MAX_DIRS,
    max_depth: int = MAX_DEPTH,
) -> DataListing:
    """List the data folders of `store` breadth-first, within the bounds; never writes."""
    listing = DataListing()
    walk = FolderWalk(store, stats=True, max_listings=max_dirs)
    for directory, depth, entries in walk:
        if isinstance(entries, DeltaAuditError):
            continue  # vanished while listing (VACUUM running): nothing to report there
        for entry in sorted(entries, key=lambda e: e.name):
            if _hidden(entry.name):
                continue
            path = f"{directory}/{entry.name}" if directory else entry.name
            if entry.is_dir:
                if depth + 1 < max_depth:
                    walk.descend(path, depth + 1)
                else:
                    listing.truncated = True
                continue
            if len(listing.files) >= max_files:
                listing.truncated = True
                listing.listed_dirs = walk.listings
                return listing
            listing.files.append((path, entry.size or 0, entry.modification_time or 0))
    listing.listed_dirs = walk.listings
    listing.truncated = listing.truncated or walk.truncated
    return listing


def judge_orphans(
    listing: DataListing, referenced: set[str], *, now_ms: int, min_age_ms: int
) -> OrphanScan:
    """The listed files no commit references, older than the in-flight bound."""
    scan = OrphanScan(min_age_ms=min_age_ms)
    scan.listed_files = len(listing.files)
    scan.listed_dirs = listing.listed_dirs
    scan.truncated = listing.truncated
    for path, size, mtime in listing.files:
        if path in referenced:
            continue
        if now_ms - mtime < min_age_ms:
            scan.in_flight_files += 1
            continue
        scan.add(path, size, mtime)
    return scan


def scan_orphans(
    store: LogStore,
    referenced: set[str],
    *,
    now_ms: int,
    min_age_ms: int,
    max_files: int = MAX_FILES,
    max_dirs: int = MAX_DIRS,
    max_depth: int = MAX_DEPTH,
) -> OrphanScan:
    """List the data folders of `store` and judge their files against `referenced`."""
    listing = list_data_files(store, max_files=max_files, max_dirs=max_dirs, max_depth=max_depth)
    return judge_orphans(listing, referenced, now_ms=now_ms, min_age_ms=min_age_ms)


def orphan_finding(scan: OrphanScan, version: int) -> Finding:
    """The `orphan_files` finding for a scan over the configured size (the caller decides)."""
    busiest = sorted(scan.hours.items(), key=lambda kv: -kv[1][1])[:5]
    text = orphan_files_text(scan.files, scan.bytes, scan.oldest, scan.newest, scan.truncated)
    return text.finding(
        FindingKind.ORPHAN_FILES,
        sev.orphan_files_severity(),
        version,
        [],
        confirmed=True,
        witness={
            "files": scan.files,
            "bytes": scan.bytes,
            "oldest": scan.oldest,
            "newest": scan.newest,
            "busiest_hours": [
                {"hour": hour_iso(h), "files": c, "bytes": b} for h, (c, b) in busiest
            ],
            "sample": [s["path"] for s in scan.sample[:10]],
            "truncated": scan.truncated,
        },
    )
