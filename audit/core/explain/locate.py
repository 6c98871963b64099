"""Where a parsed exception sits in a table's history: the conflicting commit, its peers, and
the table facts the advice depends on.

The conflicting commit is looked up by version, else by txnId, else by timestamp and
operation; when the history does not hold it, the exception's own JSON describes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from audit.core.explain.parse import ParsedException
from audit.core.explain.signals import DELETE_DELETE, DELETE_READ, METADATA, PROTOCOL, TRANSACTION
from audit.core.explain.untrusted import clip, int_or_none, iso, str_or_none
from audit.core.history.commit_summary import decode_parameters, effective_isolation_level
from audit.core.model import CommitSummary, TableState
from audit.core.operations import operation_family
from audit.core.vocab import (
    TABLE_ISOLATION_LEVELS,
    ConflictException,
    Engine,
    ReadVersionFact,
)

TIMESTAMP_TOLERANCE_MS = 5_000
# The engines whose isolation defaults are known; any other is asked as "unknown".
_KNOWN_ENGINES = (Engine.SPARK, Engine.DATABRICKS, Engine.DELTA_RS)


class HistoryLike(Protocol):
    """What explain needs from audit.core.history.summary.History."""

    table_uri: str
    state: TableState
    summaries: list[CommitSummary]


@dataclass
class TableFacts:
    """What the fixes depend on, read from the table's latest state."""

    table_uri: str
    partition_columns: list[str]
    clustering_columns: list[str]
    deletion_vectors: bool
    isolation_property: str | None
    isolation_level: str | None  # effective for the engine that raised the exception
    isolation_level_source: (
        str  # "table property" | "recorded by commits" | "engine default" | "unknown"
    )
    identity_columns: list[str]
    row_level_concurrency: bool  # DVs on and (unpartitioned or liquid clustering)
    latest_version: int
    first_version: int | None


@dataclass
class CommitView:
    """The conflicting commit, from the table's history or else from the exception's JSON."""

    version: int | None
    timestamp: int | None
    operation: str | None
    operation_parameters: dict[str, Any]
    read_version: int | None
    isolation_level: str | None
    blind_append: bool | None
    txn_id: str | None
    user_name: str | None
    engine_info: str | None
    source: str  # "history" | "exception"

    @property
    def kind(self) -> str:
        return operation_family(self.operation, self.blind_append, self.operation_parameters)


@dataclass
class Location:
    """The exception placed in a table's history (or only in its own text, without one)."""

    view: CommitView | None  # the conflicting commit, as the history or the exception has it
    found_by: str | None  # "version" | "txnId" | "timestamp"; None when not in the history
    conflicting_version: int | None
    likely_peer_versions: list[int] = field(default_factory=list)
    candidate_versions: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def locate(parsed: ParsedException, history: HistoryLike | None) -> Location:
    """The conflicting commit, its in-flight peers and, when it is unknown, the candidates."""
    located, found_by, notes = (
        locate_conflicting_commit(parsed, history.summaries)
        if history is not None
        else (None, None, [])
    )
    view = view_from_summary(located) if located else view_from_report(parsed)
    conflicting_version = (
        parsed.version if parsed.version is not None else (view.version if view else None)
    )
    location = Location(view, found_by, conflicting_version, notes=notes)
    if history is not None and conflicting_version is not None:
        location.likely_peer_versions = likely_peer_versions(history.summaries, conflicting_version)
    if history is not None and view is None:
        location.candidate_versions = candidate_versions(parsed.exception, history.summaries)
    return location


def table_facts(history: HistoryLike, engine: Engine = Engine.UNKNOWN) -> TableFacts:
    """The table facts the fixes depend on, with the isolation level `engine` enforces."""
    state = history.state
    properties = state.properties
    dv = str(properties.get("delta.enableDeletionVectors", "")).strip().lower() == "true"
    partitioned = bool(state.partition_columns)
    level, source = _isolation_level(history, engine)
    versions = [s.version for s in history.summaries]
    return TableFacts(
        table_uri=clip(str(history.table_uri), 1000),
        partition_columns=list(state.partition_columns),
        clustering_columns=list(state.clustering_columns),
        deletion_vectors=dv,
        isolation_property=properties.get("delta.isolationLevel"),
        isolation_level=level,
        isolation_level_source=source,
        identity_columns=[c.name for c in state.identity_columns],
        row_level_concurrency=dv and (not partitioned or bool(state.clustering_columns)),
        latest_version=state.version,
        first_version=min(versions) if versions else None,
    )


def _isolation_level(history: HistoryLike, engine: Engine) -> tuple[str | None, str]:
    """The level the failing writer most likely enforced, and where that came from.

    The table property wins (as the writer's engine reads it); without one, the level the
    table's own writers recorded last (SnapshotIsolation is OPTIMIZE's, not a table level);
    else the engine's default.
    """
    properties = history.state.properties
    writer_engine = engine if engine in _KNOWN_ENGINES else Engine.UNKNOWN
    if properties.get("delta.isolationLevel"):
        level = effective_isolation_level(writer_engine, properties)  # type: ignore[arg-type]
        return level, "table property"
    for summary in reversed(history.summaries):
        # Every commit fact says recorded/derived/unknown, as the read version does.
        recorded = summary.facts.get("isolation_level") == ReadVersionFact.RECORDED
        if recorded and summary.isolation_level in TABLE_ISOLATION_LEVELS:
            return summary.isolation_level, "recorded by commits"
    level = effective_isolation_level(writer_engine, properties)  # type: ignore[arg-type]
    return level, "engine default" if level else "unknown"


def locate_conflicting_commit(
    parsed: ParsedException, summaries: list[CommitSummary]
) -> tuple[CommitSummary | None, str | None, list[str]]:
    """(summary, how it was found, notes). By version, else txnId, else timestamp+operation."""
    reported = parsed.conflicting_commit or {}
    notes: list[str] = []
    by_version = {s.version: s for s in summaries}
    if parsed.version is not None:
        found = by_version.get(parsed.version)
        if found is not None:
            return found, "version", _mismatches(found, reported)
        notes.append(
            f"Version {parsed.version} is not in this table's history"
            + (f" (it holds versions {min(by_version)}..{max(by_version)})." if by_version else ".")
        )
    txn_id = reported.get("txnId")
    if isinstance(txn_id, str) and txn_id:
        for summary in summaries:
            if summary.txn_id == txn_id:
                return summary, "txnId", notes
    timestamp = reported.get("timestamp")
    if isinstance(timestamp, int) and not isinstance(timestamp, bool):
        operation = reported.get("operation")
        near = [
            s
            for s in summaries
            if s.timestamp is not None
            and abs(s.timestamp - timestamp) <= TIMESTAMP_TOLERANCE_MS
            and (not isinstance(operation, str) or (s.operation or "").upper() == operation.upper())
        ]
        if near:
            return min(near, key=lambda s: abs((s.timestamp or 0) - timestamp)), "timestamp", notes
    return None, None, notes


def _mismatches(summary: CommitSummary, reported: dict[str, Any]) -> list[str]:
    """One note when the commit found by version disagrees with what the exception says."""
    problems = []
    operation = reported.get("operation")
    if (
        isinstance(operation, str)
        and summary.operation
        and operation.upper() != summary.operation.upper()
    ):
        problems.append(
            f"the exception names operation {clip(operation, 80)!r} but version {summary.version}"
            f" is {clip(summary.operation, 80)!r}"
        )
    txn_id = reported.get("txnId")
    if isinstance(txn_id, str) and summary.txn_id and txn_id != summary.txn_id:
        problems.append(f"txnId {clip(txn_id, 80)} differs from the log's {summary.txn_id}")
    timestamp = reported.get("timestamp")
    if (
        isinstance(timestamp, int)
        and summary.timestamp is not None
        and abs(summary.timestamp - timestamp) > TIMESTAMP_TOLERANCE_MS
    ):
        problems.append(
            f"timestamp {iso(timestamp)} differs from the log's {iso(summary.timestamp)}"
        )
    if problems:
        problems.insert(0, f"Version {summary.version} exists but does not match the exception:")
        problems.append("is this the right table?")
        return [" ".join(problems)]
    return []


def likely_peer_versions(summaries: list[CommitSummary], conflicting_version: int) -> list[int]:
    """Commits whose read interval [read_version, version) contains the conflicting version.

    They were in flight when the conflicting commit landed (or read it and retried), so they
    are the committed neighbours of the transaction that failed; a retry of that transaction is
    among them if it succeeded later.
    """
    return [
        s.version
        for s in summaries
        if s.read_version is not None
        and s.version != conflicting_version
        and s.read_version <= conflicting_version < s.version
    ][:50]


def candidate_versions(
    exception: ConflictException, summaries: list[CommitSummary], limit: int = 5
) -> list[int]:
    """Without a version in the text: the latest commits that could raise this exception."""

    def could_cause(s: CommitSummary) -> bool:
        if exception == METADATA:
            return s.metadata_changed
        if exception == PROTOCOL:
            return s.protocol_changed or (s.metadata_changed and s.version == 0)
        if exception == TRANSACTION:
            return bool(s.app_ids)
        if exception in (DELETE_READ, DELETE_DELETE):
            return bool(s.removed_paths_all)
        return s.files_added > 0

    return [s.version for s in reversed(summaries) if could_cause(s)][:limit]


def view_from_summary(summary: CommitSummary) -> CommitView:
    return CommitView(
        version=summary.version,
        timestamp=summary.timestamp,
        operation=summary.operation,
        operation_parameters=dict(summary.operation_parameters or {}),
        read_version=summary.read_version,
        isolation_level=summary.isolation_level,
        blind_append=summary.blind_append,
        txn_id=summary.txn_id,
        user_name=summary.user_name,
        engine_info=summary.engine_info,
        source="history",
    )


def view_from_report(parsed: ParsedException) -> CommitView | None:
    """The conflicting commit as the exception text describes it; None when it says nothing."""
    reported = parsed.conflicting_commit
    if not reported and parsed.concurrent_operation is None and parsed.version is None:
        return None
    reported = reported or {}
    params = reported.get("operationParameters")
    blind_append = reported.get("isBlindAppend")
    return CommitView(
        version=parsed.version,
        timestamp=int_or_none(reported.get("timestamp")),
        operation=str_or_none(reported.get("operation")) or parsed.concurrent_operation,
        operation_parameters=decode_parameters(params) if isinstance(params, dict) else {},
        read_version=int_or_none(reported.get("readVersion")),
        isolation_level=str_or_none(reported.get("isolationLevel")),
        blind_append=blind_append if isinstance(blind_append, bool) else None,
        txn_id=str_or_none(reported.get("txnId")),
        user_name=str_or_none(reported.get("userName")),
        engine_info=str_or_none(reported.get("engineInfo")),
        source="exception",
    )
