"""Partitioning recommendations (SPEC §3): which columns would have kept concurrent commits apart.

From the predicates of DELETE/UPDATE/MERGE/replaceWhere commits that ran concurrently:
candidate columns, their cardinality (partition values and file statistics), a what-if replay
of the history as if the table had been partitioned by each candidate, warnings against
high-cardinality columns, the row-level-concurrency route, and MERGE conditions rewritten with
explicit partition predicates.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from audit.core.health.changes import load_schema
from audit.core.model import AddFile, CommitSummary
from audit.core.predicates import (
    disjoint,
    merge_condition_lacks_partition_literal,
    rewrite_merge_condition,
)
from audit.core.vocab import Engine, Operation

if TYPE_CHECKING:
    from audit.core.audit import AuditResult
    from audit.core.history.summary import History

# A partition column should leave each partition with plenty of rows and the table with a
# manageable number of directories (the reference page warns against high cardinality).
MAX_PARTITIONS = 10_000
HIGH_CARDINALITY_PARTITIONS = 1_000
MIN_ROWS_PER_PARTITION = 1_000
UNIQUE_RATIO = 0.5  # distinct/rows above this is an id-like column
# Operations whose predicate says what they read, matched as prefixes of the operation name.
_READING_OPERATIONS = (
    Operation.DELETE,
    Operation.UPDATE,
    Operation.MERGE,
    Operation.WRITE,
    "REPLACE",  # every REPLACE TABLE ... variant
)


@dataclass
class Cardinality:
    column: str
    distinct: int | None  # estimate; None when nothing is known
    exact: bool
    source: str  # "partition_values" | "file_stats" | "none"
    rows: int | None


@dataclass
class Candidate:
    column: str
    commits: list[int] = field(default_factory=list)  # commits whose predicates name it
    overlapping_pairs: int = 0
    disjoint_pairs: int = 0
    disjoint_examples: list[tuple[int, int]] = field(default_factory=list)


def recommend_partitioning(history: History, result: AuditResult | None) -> dict[str, Any]:
    state = history.state
    partition_columns = state.partition_columns
    pairs = overlapping_pairs(history, result)
    candidates = _candidates(pairs, partition_columns)
    column_types = _column_types(state.metadata.schema_string if state.metadata else None)
    files = list(state.files.values())
    recommendations = []
    for candidate in sorted(candidates.values(), key=lambda c: (-c.disjoint_pairs, c.column)):
        cardinality = estimate_cardinality(candidate.column, files, partition_columns, column_types)
        warnings = cardinality_warnings(cardinality)
        recommendations.append(
            {
                "column": candidate.column,
                "type": column_types.get(candidate.column),
                "commits": candidate.commits[:50],
                "overlapping_pairs": candidate.overlapping_pairs,
                "pairs_made_disjoint": candidate.disjoint_pairs,
                "examples": [list(p) for p in candidate.disjoint_examples[:10]],
                "cardinality": cardinality.__dict__,
                "partitions_created": cardinality.distinct,
                "warnings": warnings,
                "recommended": bool(candidate.disjoint_pairs) and not warnings,
            }
        )
    return {
        "partition_columns": partition_columns,
        "overlapping_pairs": len(pairs),
        "candidates": recommendations,
        "recommended_columns": [r["column"] for r in recommendations if r["recommended"]],
        "row_level_concurrency": _row_level_route(history),
        "merge_rewrites": merge_rewrites(history, partition_columns),
    }


def overlapping_pairs(
    history: History, result: AuditResult | None
) -> list[tuple[CommitSummary, CommitSummary]]:
    """Concurrent (txn, winner) pairs where both read the table through a predicate."""
    if result is None:
        return []
    pairs = []
    for version, audit in sorted(result.commits.items()):
        txn = history.summary(version)
        if not _reads_with_predicate(txn):
            continue
        for winner_version in sorted(audit.verdicts):
            winner = history.summary(winner_version)
            if _reads_with_predicate(winner):
                pairs.append((txn, winner))
    return pairs


def _reads_with_predicate(summary: CommitSummary | None) -> bool:
    if (
        summary is None
        or summary.blind_append
        or summary.predicate is None
        or summary.predicate.sql is None
    ):
        return False
    return str(summary.operation or "").upper().startswith(_READING_OPERATIONS)


def _candidates(pairs, partition_columns: list[str]) -> dict[str, Candidate]:
    candidates: dict[str, Candidate] = {}
    existing = {c.lower() for c in partition_columns}
    for txn, winner in pairs:
        shared = (txn.predicate.columns & winner.predicate.columns) - existing
        for column in sorted(shared):
            candidate = candidates.setdefault(column, Candidate(column))
            for version in (txn.version, winner.version):
                if version not in candidate.commits:
                    candidate.commits.append(version)
            candidate.overlapping_pairs += 1
            if disjoint(txn.predicate, winner.predicate, [column]):
                candidate.disjoint_pairs += 1
                candidate.disjoint_examples.append((winner.version, txn.version))
    return candidates


# --------------------------------------------------------------------------- cardinality


def estimate_cardinality(
    column: str, files: list[AddFile], partition_columns: list[str], column_types: dict[str, str]
) -> Cardinality:
    rows = _total_rows(files)
    by_lower = {c.lower(): c for c in partition_columns}
    if column in by_lower:
        name = by_lower[column]
        values = {f.partition_values.get(name) for f in files}
        return Cardinality(column, len(values), True, "partition_values", rows)
    lows, highs, constant_values = [], [], set()
    constant = True
    for f in files:
        stats = _stats(f)
        low = _stat_value(stats.get("minValues"), column)
        high = _stat_value(stats.get("maxValues"), column)
        if low is None or high is None:
            constant = False
            continue
        lows.append(low)
        highs.append(high)
        if low == high:
            constant_values.add(low)
        else:
            constant = False
    if not lows:
        return Cardinality(column, None, False, "none", rows)
    if constant:
        return Cardinality(column, len(constant_values), True, "file_stats", rows)
    span = _span(min(lows), max(highs), column_types.get(column))
    distinct = span if span is not None else len(set(lows) | set(highs))
    if rows is not None and distinct is not None:
        distinct = min(distinct, rows)
    return Cardinality(column, distinct, False, "file_stats", rows)


def cardinality_warnings(card: Cardinality) -> list[str]:
    warnings = []
    if card.distinct is None:
        warnings.append(
            "cardinality unknown: no partition values or file statistics for this column"
        )
        return warnings
    if card.distinct > HIGH_CARDINALITY_PARTITIONS:
        warnings.append(
            f"high cardinality: about {card.distinct} partitions; partitioning by a high-cardinality column "
            "creates many small files and directories"
        )
    if card.rows and card.distinct >= max(2, UNIQUE_RATIO * card.rows) and card.rows >= 20:
        warnings.append("nearly unique per row (an id-like column): never partition by it")
    elif (
        card.rows
        and card.distinct > 1
        and card.rows / card.distinct < MIN_ROWS_PER_PARTITION
        and card.distinct > 100
    ):
        warnings.append(f"only about {card.rows // card.distinct} rows per partition")
    return warnings


def _total_rows(files: list[AddFile]) -> int | None:
    total = 0
    for f in files:
        records = _stats(f).get("numRecords")
        if not isinstance(records, int):
            return None
        total += records
    return total


def _stats(file: AddFile) -> dict[str, Any]:
    if not file.stats:
        return {}
    try:
        parsed = orjson.loads(file.stats)
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _stat_value(values: Any, column: str) -> Any:
    if not isinstance(values, dict):
        return None
    for key, value in values.items():
        if key.lower() == column and not isinstance(value, dict | list):
            return value
    return None


def _span(low: Any, high: Any, delta_type: str | None) -> int | None:
    """Number of distinct values an integer or date range can hold."""
    if isinstance(low, int) and isinstance(high, int) and not isinstance(low, bool):
        return high - low + 1
    if delta_type == "date" and isinstance(low, str) and isinstance(high, str):
        try:
            return (dt.date.fromisoformat(high[:10]) - dt.date.fromisoformat(low[:10])).days + 1
        except ValueError:
            return None
    return None


def _column_types(schema_string: str | None) -> dict[str, str]:
    """Top-level column (lower-cased) -> its Delta type; nested types read as "struct"."""
    types = {}
    fields = load_schema(schema_string).get("fields")
    for f in fields if isinstance(fields, list) else []:  # a hostile schema: "fields": 5
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            kind = f.get("type")
            types[f["name"].lower()] = kind if isinstance(kind, str) else "struct"
    return types


# --------------------------------------------------------------------------- advice


def _row_level_route(history: History) -> dict[str, Any]:
    properties = history.state.properties
    dv = properties.get("delta.enableDeletionVectors", "").lower() == "true"
    partitioned = bool(history.state.partition_columns)
    clustered = bool(history.state.clustering_columns)
    engines = Counter(s.engine for s in history.summaries)
    databricks = engines.get(Engine.DATABRICKS, 0) > 0
    if partitioned:
        advice = (
            "Partitioned tables do not get row-level concurrency. With deletion vectors enabled, OPTIMIZE "
            "(without ZORDER BY) no longer conflicts with other writes."
        )
    elif dv or clustered:
        advice = "Row-level concurrency conditions hold for this table (Databricks Runtime 14.2 or above)."
    else:
        advice = (
            "Instead of partitioning, enable deletion vectors on this unpartitioned table "
            "(ALTER TABLE t SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)) or use liquid "
            "clustering (CLUSTER BY): concurrent UPDATE/DELETE/MERGE then conflict only when they modify the "
            "same row, on Databricks Runtime 14.2 or above."
        )
    if not databricks:
        advice += " Note: no writer in this history is a Databricks runtime; other engines may not implement it."
    return {
        "deletion_vectors": dv,
        "clustered": clustered,
        "partitioned": partitioned,
        "advice": advice,
    }


def merge_rewrites(history: History, partition_columns: list[str]) -> list[dict[str, Any]]:
    """MERGE commands whose condition pins no partition column to a literal, rewritten."""
    if not partition_columns:
        return []
    seen: set[str] = set()
    rewrites = []
    for summary in history.summaries:
        if str(summary.operation or "").upper() != Operation.MERGE or summary.predicate is None:
            continue
        condition = summary.predicate.sql or summary.predicate.raw
        if condition in seen or not merge_condition_lacks_partition_literal(
            condition, partition_columns
        ):
            continue
        seen.add(condition)
        values = _single_partition(summary, partition_columns)
        rewritten = rewrite_merge_condition(condition, values, None) if values else None
        rewrites.append(
            {
                "version": summary.version,
                "condition": condition,
                "rewritten": rewritten,
                "partition_values": values,
                "advice": (
                    "The condition does not pin the target's partition columns to literals, so the MERGE may "
                    "scan (and conflict with writes to) every partition. Add explicit partition predicates "
                    "for the partitions this run touches."
                ),
            }
        )
    return rewrites


def _single_partition(summary: CommitSummary, partition_columns: list[str]) -> dict[str, str]:
    """The partition values a MERGE touched, per column, when it touched exactly one value."""
    seen: dict[str, set] = defaultdict(set)
    for key in summary.partitions_touched:
        for column, value in key:
            seen[column].add(value)
    return {
        c: next(iter(seen[c]))
        for c in partition_columns
        if len(seen.get(c, ())) == 1 and next(iter(seen[c])) is not None
    }
