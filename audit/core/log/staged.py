"""Unpublished commits of catalog-managed and coordinated-commits tables.

A catalog-managed table (`catalogManaged`) writes each commit first as a staged file
`_delta_log/_staged_commits/<version>.<uuid>.json`; coordinated commits write
`_delta_log/_commits/<version>.<uuid>.json`. The catalog (or commit coordinator) ratifies one
file per version and publishes (backfills) it as `_delta_log/<version>.json` later.

The file system cannot say which file the catalog ratified. What it can say: when exactly one
staged file exists for each version after the published log, in an unbroken run, those are the
only candidates, so they are audited like published commits and marked as such. The run stops
at the first version with several candidates (a writer lost the race for it; only the catalog
knows which file won) or with none.

`StagedStore` presents the chosen files as `_delta_log/<version>.json` to the log reader, so
the audit reads them with the same code as published commits; data files are read from the
table's own store as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from audit.core.errors import DeltaAuditError
from audit.core.numbers import log_int
from audit.core.storage.store import FileEntry, LogStore
from audit.core.storage.stores import LinkRefused, link_refused

STAGED_DIRS = {"_delta_log/_staged_commits": "catalog", "_delta_log/_commits": "coordinated"}
LOG_DIR = "_delta_log"
# Names are listed from storage: ASCII digits only (`\d` takes any Unicode digit), and a
# version within 64 bits (log_int): 99999999999999999999 names no version.
_STAGED = re.compile(r"^([0-9]{20})\.[0-9A-Za-z-]+\.json$")


@dataclass(frozen=True, slots=True)
class StagedCommit:
    version: int
    path: str  # relative to the table root
    modification_time: int | None
    source: str  # "catalog" (_staged_commits) or "coordinated" (_commits)


@dataclass(slots=True)
class Unpublished:
    """The staged commits beyond the published log, and which of them can be audited."""

    published: int
    readable: list[StagedCommit] = field(default_factory=list)  # one candidate each, in a run
    ambiguous: list[int] = field(default_factory=list)  # versions with several candidates
    staged_versions: list[int] = field(default_factory=list)  # every version beyond published
    # Staged folders or files that are symbolic links leading outside the table: not read,
    # one line each (local disks only).
    refused: list[str] = field(default_factory=list)

    @property
    def lag_versions(self) -> int:
        return (self.staged_versions[-1] - self.published) if self.staged_versions else 0


def staged_version(name: str) -> int | None:
    """The version a staged commit file's name gives, else None (not a staged commit's name,
    or twenty digits past 64 bits: a lag past every column, once)."""
    match = _STAGED.match(name)
    return log_int(match.group(1)) if match is not None else None


def _candidates(
    store: LogStore, published: int, refused: list[str]
) -> dict[int, list[StagedCommit]]:
    found: dict[int, list[StagedCommit]] = {}
    for directory, source in STAGED_DIRS.items():
        try:
            entries = store.list(directory, stats=True)
        except LinkRefused as err:
            refused.append(str(err))
            continue
        except DeltaAuditError:
            continue  # no such directory: nothing staged there
        for entry in entries:
            version = staged_version(entry.name)
            if entry.is_dir or version is None or version <= published:
                continue
            path = f"{directory}/{entry.name}"
            # Only local stores list links (and have leads_inside).
            if entry.is_link and not store.leads_inside(path):  # type: ignore[attr-defined]
                refused.append(str(link_refused(store.uri, path)))
                continue
            staged = StagedCommit(version, path, entry.modification_time, source)
            found.setdefault(version, []).append(staged)
    return found


def find_unpublished(store: LogStore, published: int) -> Unpublished:
    """The staged commits after `published`; `readable` is the unbroken run after it with a
    single candidate per version."""
    refused: list[str] = []
    candidates = _candidates(store, published, refused)
    result = Unpublished(published, staged_versions=sorted(candidates), refused=refused)
    result.ambiguous = sorted(v for v, files in candidates.items() if len(files) > 1)
    version = published + 1
    while len(candidates.get(version, ())) == 1:
        result.readable.append(candidates[version][0])
        version += 1
    return result


def _commit_name(version: int) -> str:
    return f"{version:020d}.json"


class StagedStore:
    """A store whose `_delta_log` also lists the chosen staged commits under their published
    names; everything else is the wrapped store's."""

    def __init__(self, store: LogStore, staged: list[StagedCommit]):
        self._store = store
        self.uri = store.uri
        self._virtual = {f"{LOG_DIR}/{_commit_name(s.version)}": s for s in staged}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _real(self, path: str) -> str:
        staged = self._virtual.get(path)
        return staged.path if staged is not None else path

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        entries = self._store.list(directory, stats=stats)
        if directory.rstrip("/") == LOG_DIR:
            names = {e.name for e in entries}
            for path, staged in self._virtual.items():
                name = path.rsplit("/", 1)[1]
                if name not in names:
                    entries.append(FileEntry(name, None, staged.modification_time))
        return entries

    def read_bytes(self, path: str) -> bytes:
        return self._store.read_bytes(self._real(path))

    def exists(self, path: str) -> bool:
        return path in self._virtual or self._store.exists(path)

    def modification_time(self, path: str) -> int | None:
        return self._store.modification_time(self._real(path))

    def full_path(self, path: str) -> str:
        return self._store.full_path(self._real(path))
