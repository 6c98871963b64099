"""The facts of a conflict finding, as the wording (wording/conflicts.py) needs them."""

from __future__ import annotations

from dataclasses import dataclass

from audit.core.vocab import ConflictException, ReadVersionFact


@dataclass(frozen=True, slots=True)
class MissedConflictFacts:
    """A commit that committed although its own isolation level should have failed it."""

    version: int
    operation: str | None
    engine: str
    isolation_level: str | None
    isolation_level_fact: str  # "recorded", or how the audit knows the level
    read_version: int | None
    read_version_fact: ReadVersionFact
    read_scope: str  # what it read, described
    winners: list[int]
    exceptions: dict[str, ConflictException | None]  # str(winner) -> exception at its level

    @property
    def exception_names(self) -> list[str]:
        return sorted({v for v in self.exceptions.values() if v})


@dataclass(frozen=True, slots=True)
class MetadataChangeFacts:
    """A protocol or metadata change that commits in flight across it did not fail on."""

    version: int
    operation: str | None  # the changing commit's
    change: str  # "protocol" | "metadata"
    in_flight: list[int]  # the commits that read before it and committed after it
    data_changing: bool
    confirmed: bool
