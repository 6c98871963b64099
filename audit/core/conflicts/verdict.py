"""What the re-run conflict checks found: per (txn, winner) pair, and per commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audit.core.conflicts.scope import ReadScope
from audit.core.model import CommitSummary
from audit.core.vocab import ConflictException, IsolationLevel, ReadVersionFact

SERIALIZABLE = IsolationLevel.SERIALIZABLE
WRITE_SERIALIZABLE = IsolationLevel.WRITE_SERIALIZABLE
SNAPSHOT_ISOLATION = IsolationLevel.SNAPSHOT_ISOLATION
LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)


@dataclass(frozen=True, slots=True)
class Recheck:
    """Delta's verdict for one (txn, winner) pair under each isolation level.

    `rule` names the check that fired first (protocol, metadata, domain, txn, append,
    delete_read, delete_delete). `certain` is False when the exception depends on files or rows
    the log does not show (e.g. which files an unpartitioned predicate really read).
    `same_row_only`: row-level concurrency applies, so the exception is raised only if both
    commits touched the same rows, which the log cannot show.
    """

    serializable: ConflictException | None
    write_serializable: ConflictException | None
    rule: str | None = None
    certain: bool = True
    same_row_only: bool = False
    blind_append_exempt: bool = False

    def at(self, level: str | None) -> ConflictException | None:
        if level == WRITE_SERIALIZABLE:
            return self.write_serializable
        if level == SERIALIZABLE:
            return self.serializable
        if level == SNAPSHOT_ISOLATION:
            # OPTIMIZE's level: Delta skips the added-files check, the others still apply.
            return self.write_serializable if self.rule != "append" else None
        return None

    def as_dict(self) -> dict[str, str | None]:
        # Plain-text keys: orjson refuses str subclasses (the enums) as dict keys.
        return {
            SERIALIZABLE.value: self.serializable,
            WRITE_SERIALIZABLE.value: self.write_serializable,
        }

    @property
    def any(self) -> bool:
        return self.serializable is not None or self.write_serializable is not None


NO_CONFLICT = Recheck(None, None)


@dataclass(slots=True)
class CommitAudit:
    """The audit's view of one commit."""

    version: int
    read_version: int | None
    read_version_fact: ReadVersionFact
    isolation_level: str | None
    concurrent_versions: range  # (read_version, version), possibly clipped; empty if unknown
    read_scope: ReadScope
    window_truncated: bool = False
    # Only pairs with at least one exception are stored; `verdicts` fills in the rest.
    conflicts: dict[int, Recheck] = field(default_factory=dict)
    # The engine profile (conflicts/profiles.py) of a re-checked commit's writer, and the
    # concurrent versions its own rules would let through although the reference rejects them.
    profile: str = ""
    departures: dict[int, str] | None = None

    @property
    def verdicts(self) -> dict[int, dict[str, str | None]]:
        """Per concurrent version: {"Serializable": exc | None, "WriteSerializable": exc | None}."""
        return {w: self.conflicts.get(w, NO_CONFLICT).as_dict() for w in self.concurrent_versions}

    @property
    def read_scope_description(self) -> str:
        return self.read_scope.describe()

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "read_version": self.read_version,
            "read_version_fact": self.read_version_fact,
            "isolation_level": self.isolation_level,
            "concurrent_versions": list(self.concurrent_versions),
            "read_scope": self.read_scope.as_dict(),
            "window_truncated": self.window_truncated,
            "verdicts": {str(w): v for w, v in self.verdicts.items()},
            "profile": self.profile,
            "departures": {str(w): why for w, why in (self.departures or {}).items()},
        }


def commit_facts(txn: CommitSummary, audit: CommitAudit) -> dict[str, Any]:
    """The facts every finding about one audited commit states (fields of its facts class)."""
    return {
        "version": txn.version,
        "operation": txn.operation,
        "read_version": audit.read_version,
        "read_version_fact": audit.read_version_fact,
        "read_scope": audit.read_scope.describe(),
    }
