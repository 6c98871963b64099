"""The facts of each anomaly finding, as the wording (wording/anomalies.py, wording/table.py)
needs them. Computed by the detectors of this package; no sentence is built here."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from audit.core.vocab import ConflictException, IsolationLevel, ReadVersionFact


def commits_span(versions: list[int]) -> dict[str, int]:
    """What a table-level finding about a run of commits states of them (beyond the first,
    which is the finding's version)."""
    return {"commits": len(versions), "last_version": versions[-1]}


@dataclass(frozen=True, slots=True)
class ReorderFacts:
    """A WriteSerializable commit serialized before blind appends the history shows first."""

    version: int
    operation: str | None
    read_version: int | None
    read_version_fact: ReadVersionFact
    read_scope: str  # what it read, described
    winners: list[int]  # the blind appends it did not see
    exceptions: dict[int, ConflictException]  # what Serializable would have raised, per winner

    @property
    def exception_names(self) -> list[str]:
        return sorted(set(self.exceptions.values()))


@dataclass(frozen=True, slots=True)
class NeverExistedFacts:
    """A destructive commit that left alive rows it should have deleted or rewritten."""

    version: int
    operation: str | None
    predicate: str | None  # its condition as recorded; None: every row
    added_by: list[int]  # the versions whose surviving files hold those rows
    read_version: int | None
    read_version_fact: ReadVersionFact
    confirmed: bool  # rows were found in the data
    row_count: int | None  # rows found (when confirmed)
    file_count: int | None  # files they were found in (when confirmed)
    note: str  # why rows were not confirmed


@dataclass(slots=True)
class Hotspot:
    """Concurrent commits overlapping in one partition (or the whole table), per operation pair."""

    partition: str
    operations: tuple[str, str]
    pairs: int = 0
    conflicts: dict[str, int] = field(
        default_factory=lambda: {
            IsolationLevel.SERIALIZABLE.value: 0,
            IsolationLevel.WRITE_SERIALIZABLE.value: 0,
        }
    )
    exceptions: Counter = field(default_factory=Counter)
    first_version: int | None = None
    first_winner: int | None = None
    last_version: int | None = None
    per_day: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "operations": list(self.operations),
            "pairs": self.pairs,
            "conflicts": dict(self.conflicts),
            "exceptions": dict(sorted(self.exceptions.items())),
            "first_version": self.first_version,
            "last_version": self.last_version,
            "per_day": dict(sorted(self.per_day.items())),
        }

    @property
    def serializable_conflicts(self) -> int:
        return self.conflicts[IsolationLevel.SERIALIZABLE]

    @property
    def write_serializable_conflicts(self) -> int:
        return self.conflicts[IsolationLevel.WRITE_SERIALIZABLE]


@dataclass(frozen=True, slots=True)
class IsolationSettingFacts:
    """Writers of one engine that do not parse the table's `delta.isolationLevel` spelling."""

    engine: str
    value: str
    used: str  # the level they use instead, as a sentence names it
    versions: list[int]  # their data-changing commits, in version order


@dataclass(frozen=True, slots=True)
class IdentityFacts:
    """Concurrent data-changing commits on a table with identity columns."""

    columns: list[str]
    concurrent: list[int]


@dataclass(frozen=True, slots=True)
class MissingReadVersionFacts:
    """Non-append commits that recorded no readVersion: derived by the audit, or unknown."""

    unknown: list[int]
    derived: list[int]
