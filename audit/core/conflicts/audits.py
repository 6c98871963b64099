"""The audit's per-commit views, held by column for the commits it never re-checks.

Most commits of a long history have no concurrent window (they read the version just before
their own). Their `CommitAudit` says nothing the summary does not: the read version and where it
came from, the writer's isolation level, the whole-table scope. A `CommitAudit` object and its
dict entry per such commit cost ~170 B (~150 MB at 1M commits), so only windowed commits keep
one; the others keep 17 B of columns and are rebuilt, equal field by field, when read.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

from audit.core.conflicts.scope import whole_table_scope
from audit.core.conflicts.verdict import CommitAudit, Recheck
from audit.core.conflicts.window import NO_WINDOW
from audit.core.model import CommitSummary
from audit.core.vocab import ReadVersionFact

# The one empty conflicts dict every commit without an exception shares (never written: the
# audit gives a commit its own dict at its first exception).
NO_CONFLICTS: dict[int, Recheck] = {}
_NONE = -(2**63)  # a read version of None in the int64 column
_FACTS = tuple(ReadVersionFact)
_FACT_INDEX = {fact: i for i, fact in enumerate(_FACTS)}


class CommitBrief(NamedTuple):
    """What the report reads of a commit the audit never re-checked (no view to build)."""

    read_version: int | None
    read_version_fact: ReadVersionFact
    concurrent_versions: range = NO_WINDOW
    profile: str = ""


class CommitAudits(Mapping[int, CommitAudit]):
    """version -> CommitAudit in audit order, a read-only mapping once the audit has run."""

    def __init__(self, summary: Callable[[int], CommitSummary | None]):
        self._summary = summary
        self._versions = array("q")
        self._read_versions = array("q")
        self._facts = bytearray()
        self._checked: dict[int, CommitAudit] = {}
        self._index: dict[int, int] | None = None  # only if versions came out of order

    def add_checked(self, audit: CommitAudit) -> None:
        self._append(audit.version, audit.read_version, audit.read_version_fact)
        self._checked[audit.version] = audit

    def add_unchecked(self, txn: CommitSummary, read_version: int | None, fact: str) -> None:
        self._append(txn.version, read_version, fact)

    def _append(self, version: int, read_version: int | None, fact: str) -> None:
        if self._versions and version <= self._versions[-1] and self._index is None:
            self._index = {v: i for i, v in enumerate(self._versions)}
        if self._index is not None:
            self._index[version] = len(self._versions)
        self._versions.append(version)
        self._read_versions.append(_NONE if read_version is None else read_version)
        # A ReadVersionFact or its text: both find the enum's index (a str enum hashes as text).
        self._facts.append(_FACT_INDEX[fact])

    def _position(self, version: int) -> int:
        if self._index is not None:
            return self._index.get(version, -1)
        at = bisect_left(self._versions, version)
        return at if at < len(self._versions) and self._versions[at] == version else -1

    def _build(self, at: int) -> CommitAudit:
        version = self._versions[at]
        checked = self._checked.get(version)
        if checked is not None:
            return checked
        txn = self._summary(version)
        if txn is None:  # the summary is gone (cannot happen while the history is held)
            raise KeyError(version)
        read_version = self._read_versions[at]
        return CommitAudit(
            version,
            None if read_version == _NONE else read_version,
            _FACTS[self._facts[at]],
            txn.isolation_level,
            NO_WINDOW,
            # One per rebuilt view, freed with it: a cache by predicate would keep one per
            # distinct predicate (~24k of 100k bench commits).
            whole_table_scope(txn, "not re-checked"),
            False,
            NO_CONFLICTS,
        )

    def brief(self, version: int) -> CommitAudit | CommitBrief | None:
        """The commit's view if it was re-checked, else its columns; None if not audited."""
        checked = self._checked.get(version)
        if checked is not None:
            return checked
        at = self._position(version)
        if at < 0:
            return None
        read_version = self._read_versions[at]
        return CommitBrief(None if read_version == _NONE else read_version, _FACTS[self._facts[at]])

    def windowed(self, version: int) -> bool:
        """Did the commit have concurrent writers? (Only re-checked commits have a window.)"""
        checked = self._checked.get(version)
        return checked is not None and len(checked.concurrent_versions) > 0

    def read_version_facts(self) -> Iterator[tuple[int, ReadVersionFact]]:
        """(version, read-version fact) in audit order, from the columns."""
        facts = _FACTS
        for version, code in zip(self._versions, self._facts, strict=True):
            yield version, facts[code]

    def by_column(
        self,
    ) -> tuple[
        array, list[int | None], list[ReadVersionFact], list[str | None], dict[int, CommitAudit]
    ]:
        """Every commit's version, read version, its fact and isolation level (audit order),
        and the re-checked commits' own views: what a transport needs, without building a view
        per commit (the Spark job's results, workers/spark/transport.py)."""
        isolation = []
        for version in self._versions:
            checked = self._checked.get(version)
            txn = checked if checked is not None else self._summary(version)
            if txn is None:  # as _build: cannot happen while the history is held
                raise KeyError(version)
            isolation.append(txn.isolation_level)
        reads = [None if r == _NONE else r for r in self._read_versions]
        return self._versions, reads, [_FACTS[i] for i in self._facts], isolation, self._checked

    def __getitem__(self, version: int) -> CommitAudit:
        checked = self._checked.get(version)
        if checked is not None:
            return checked
        at = self._position(version)
        if at < 0:
            raise KeyError(version)
        return self._build(at)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self._position(version) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def items(self) -> Iterator[tuple[int, CommitAudit]]:  # type: ignore[override]
        # Positional: no lookup per commit.
        for at, version in enumerate(self._versions):
            yield version, self._build(at)

    def values(self) -> Iterator[CommitAudit]:  # type: ignore[override]
        for at in range(len(self._versions)):
            yield self._build(at)


def read_version_facts(commits: Mapping[int, CommitAudit]) -> Iterable[tuple[int, str]]:
    """(version, read-version fact) of every audited commit, without building the views."""
    if isinstance(commits, CommitAudits):
        return commits.read_version_facts()
    return ((v, a.read_version_fact) for v, a in commits.items())


def has_window(commits: Mapping[int, CommitAudit], version: int) -> bool:
    """Did the audited commit `version` have concurrent writers?"""
    if isinstance(commits, CommitAudits):
        return commits.windowed(version)
    audit = commits.get(version)
    return audit is not None and len(audit.concurrent_versions) > 0
