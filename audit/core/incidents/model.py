"""The dataclasses of an incident: its cause key, its damage, its statements.

An incident is one root cause and every finding it produced. Its identity is its cause key
(the cause, the writer, the operation and the scope), never a version, so the one-shot audit
and the tail, whichever chunk saw it first, give it the same `id`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from audit.core.model import Finding
from audit.core.storage.roots import shown_path
from audit.core.vocab import FindingKind, IncidentCause, IncidentStatus, Severity, StatementEngine

ID_LENGTH = 16  # hex digits of the key's SHA-256: a short id, no version in it
# The userMetadata a repair statement commits with: its files hold no wrong row (damage.py).
REPAIR_MARK = "Delta Audit repair of incident"


@dataclass(frozen=True, slots=True)
class CauseKey:
    """What one root cause is: its rule or setting, who wrote, what, where. Empty parts are
    parts that do not apply (a table-level cause has no writer)."""

    cause: IncidentCause
    writer: str = ""
    operation: str = ""
    scope: str = ""
    # The Delta table's own id (metaData.id): the same cause in two tables is two incidents.
    table: str = ""

    @property
    def id(self) -> str:
        parts = (self.table, self.cause.value, self.writer, self.operation, self.scope)
        text = "\x1f".join(parts)
        return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:ID_LENGTH]


@dataclass(frozen=True, slots=True)
class Statement:
    """One copyable statement: what it does and, as plainly, what it does not undo."""

    engine: StatementEngine
    code: str
    does: str
    does_not: str

    def as_dict(self) -> dict[str, str]:
        return {
            "engine": self.engine.value,
            "code": self.code,
            "does": self.does,
            "does_not": self.does_not,
        }


@dataclass(slots=True)
class Damage:
    """What an incident left wrong at the latest version.

    `rows_extra`: live rows a serial history would not hold; `rows_missing`: rows it would hold
    that are gone (an UPDATE's missed versions, the rows of missing files). `rows_wrong_now` is
    their sum; None when unknown. `exact` is False when a count is a bound (`note` says which).
    """

    rows_extra: int | None = 0
    rows_missing: int | None = 0
    files: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    exact: bool = True
    note: str = ""

    @property
    def rows_wrong_now(self) -> int | None:
        if self.rows_extra is None or self.rows_missing is None:
            return None
        return self.rows_extra + self.rows_missing

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_wrong_now": self.rows_wrong_now,
            "rows_extra": self.rows_extra,
            "rows_missing": self.rows_missing,
            "files": [shown_path(p) for p in self.files],
            "partitions": list(self.partitions),
            "versions": list(self.versions),
            "exact": self.exact,
            "note": self.note,
        }


@dataclass(slots=True)
class Acknowledgement:
    """What the app knows of an incident: acknowledged up to a version (None: never)."""

    version: int | None = None


@dataclass(slots=True)
class Incident:
    key: CauseKey
    findings: list[Finding]  # in version order; the head (a table-level cause) among them
    writer: dict[str, str] = field(default_factory=dict)
    severity: Severity = Severity.INFO
    status: IncidentStatus = IncidentStatus.OPEN
    quiet_since: int | None = None  # the last version it occurred at, when quiet or resolved
    resolved_because: str = ""
    headline: str = ""
    explanation: str = ""
    damage: Damage = field(default_factory=Damage)
    repair: list[Statement] = field(default_factory=list)
    inspect: list[Statement] = field(default_factory=list)
    prevent: list[Statement] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def first_version(self) -> int:
        return min(f.version for f in self.findings)

    @property
    def last_version(self) -> int:
        return max(occurrences(self))


def occurrences(incident: Incident) -> list[int]:
    """The versions the cause recurred at: its findings' versions and the commits they name
    (a retry storm's later commits), sorted."""
    versions = {f.version for f in incident.findings}
    for f in incident.findings:
        if f.kind in _OCCURS_AT_RELATED:
            versions.update(f.related_versions)
        last = (
            (f.details or {}).get("last_version")
            if f.kind == FindingKind.CONFLICT_HOTSPOT
            else None
        )
        if type(last) is int:
            versions.add(last)
    return sorted(versions)


# Kinds whose related versions are further occurrences of the same thing (a storm's later
# commits), not other commits (the winners a stale commit missed).
_OCCURS_AT_RELATED = frozenset({FindingKind.RETRY_STORM})
