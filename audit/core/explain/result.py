"""The entry point: an exception text (and optionally the table's history) -> `Explanation`.

`explain` returns the typed tree; `explain_conflict` returns its `as_dict()`, the JSON contract
the CLI, the API and the dashboard serve (`{"exception", "conflicting_version", "explanation",
"fixes", ...}`). Key order is part of that contract: the serialised bytes must not change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from audit.core.explain.fixes import fixes_for
from audit.core.explain.locate import (
    CommitView,
    HistoryLike,
    Location,
    TableFacts,
    locate,
    table_facts,
)
from audit.core.explain.parse import ParsedException, parse_exception
from audit.core.explain.untrusted import MAX_INPUT_CHARS
from audit.core.explain.wording import MEANINGS, NOT_A_CONFLICT, explanation
from audit.core.vocab import ConflictException, Engine

# The members of the exception's `Conflicting commit` JSON echoed back, in this order.
_REPORTED_KEYS = (
    "version",
    "timestamp",
    "userId",
    "userName",
    "operation",
    "operationParameters",
    "job",
    "notebook",
    "clusterId",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "operationMetrics",
    "engineInfo",
    "txnId",
)


@dataclass(frozen=True)
class Operations:
    conflicting: str | None  # the conflicting commit's operation, e.g. "MERGE"
    conflicting_kind: str | None  # its class in the conflict matrix (OperationClass)


# The conflicting commit's members in the contract, in order ("kind" is its matrix class).
_COMMIT_MEMBERS = (
    "version",
    "timestamp",
    "operation",
    "kind",
    "read_version",
    "isolation_level",
    "blind_append",
    "txn_id",
    "user_name",
    "engine_info",
)


@dataclass(frozen=True)
class ConflictingCommit:
    """The conflicting commit as the table's history holds it, and how it was found there."""

    commit: CommitView
    found_by: str  # "version" | "txnId" | "timestamp"

    def as_dict(self) -> dict[str, Any]:
        members = {name: getattr(self.commit, name) for name in _COMMIT_MEMBERS}
        return {**members, "found_by": self.found_by}


@dataclass(frozen=True)
class ReportedCommit:
    """The conflicting commit as the exception's JSON reports it (the known members only)."""

    members: dict[str, Any]
    complete: bool  # False when the JSON was cut off or invalid

    @classmethod
    def from_parsed(cls, parsed: ParsedException) -> ReportedCommit | None:
        commit = parsed.conflicting_commit
        if commit is None:
            return None
        members = {k: commit[k] for k in _REPORTED_KEYS if k in commit}
        return cls(members, parsed.conflicting_commit_complete)

    def as_dict(self) -> dict[str, Any]:
        return {**self.members, "complete": self.complete}


@dataclass(frozen=True)
class Explanation:
    """What happened, which commit did it, and what to change.

    When the text is no conflict exception only the first four fields are set.
    """

    exception: ConflictException | None
    conflicting_version: int | None
    explanation: str
    fixes: list[str]
    error_class: str | None = None
    engine: Engine | None = None
    message: str | None = None
    meaning: str | None = None
    partitions: list[dict[str, str | None]] = field(default_factory=list)
    root_of_table: bool = False
    files: list[str] = field(default_factory=list)
    operations: Operations | None = None
    conflicting_commit: ConflictingCommit | None = None
    reported_commit: ReportedCommit | None = None
    likely_peer_versions: list[int] = field(default_factory=list)
    candidate_versions: list[int] = field(default_factory=list)
    isolation_level: str | None = None
    table: TableFacts | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON contract, keys in the order the CLI, API and dashboard have always served."""
        head = {
            "exception": self.exception,
            "conflicting_version": self.conflicting_version,
            "explanation": self.explanation,
            "fixes": self.fixes,
        }
        if self.exception is None:
            return head
        return head | {
            "error_class": self.error_class,
            "engine": self.engine,
            "message": self.message,
            "meaning": self.meaning,
            "partitions": self.partitions,
            "root_of_table": self.root_of_table,
            "files": self.files,
            "operations": asdict(self.operations) if self.operations else None,
            "conflicting_commit": self.conflicting_commit.as_dict()
            if self.conflicting_commit
            else None,
            "reported_commit": self.reported_commit.as_dict() if self.reported_commit else None,
            "likely_peer_versions": self.likely_peer_versions,
            "candidate_versions": self.candidate_versions,
            "isolation_level": self.isolation_level,
            "table": asdict(self.table) if self.table else None,
            "notes": self.notes,
        }


def explain(text: str, history: HistoryLike | None = None) -> Explanation:
    """Explain a conflict exception, located in `history` when given. Never raises on input."""
    parsed = parse_exception(text)
    if parsed is None:
        return Explanation(None, None, NOT_A_CONFLICT, [])
    facts = table_facts(history, parsed.engine) if history is not None else None
    location = locate(parsed, history)
    view = location.view
    return Explanation(
        exception=parsed.exception,
        conflicting_version=location.conflicting_version,
        explanation=explanation(parsed, view, location.found_by, facts),
        fixes=fixes_for(parsed, view, facts),
        error_class=parsed.error_class,
        engine=parsed.engine,
        message=parsed.message,
        meaning=MEANINGS[parsed.exception],
        partitions=parsed.partitions,
        root_of_table=parsed.root_of_table,
        files=parsed.files,
        operations=Operations(
            conflicting=view.operation if view else parsed.concurrent_operation,
            conflicting_kind=view.kind if view else None,
        ),
        conflicting_commit=_from_history(location),
        reported_commit=ReportedCommit.from_parsed(parsed),
        likely_peer_versions=location.likely_peer_versions,
        candidate_versions=location.candidate_versions,
        isolation_level=facts.isolation_level if facts else None,
        table=facts,
        notes=location.notes + _input_notes(parsed),
    )


def explain_conflict(text: str, history: HistoryLike | None = None) -> dict[str, Any]:
    """`explain(...)` as the JSON contract's dict. Never raises on input."""
    return explain(text, history).as_dict()


def _from_history(location: Location) -> ConflictingCommit | None:
    """The conflicting commit when the history holds it (not when only the exception tells)."""
    if location.found_by is None or location.view is None:
        return None
    return ConflictingCommit(location.view, location.found_by)


def _input_notes(parsed: ParsedException) -> list[str]:
    """What the reader should know about the pasted text itself."""
    notes = []
    if parsed.input_truncated:
        notes.append(
            f"The input was longer than {MAX_INPUT_CHARS} characters; only the start was read."
        )
    if parsed.conflicting_commit is not None and not parsed.conflicting_commit_complete:
        notes.append(
            "The Conflicting commit JSON was cut off or invalid; only its readable fields were used."
        )
    return notes
