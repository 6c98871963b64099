"""Isolation settings of a table and the reference page's conflict matrix resolved for it.

For the latest version: the effective isolation level per writer engine seen in the history,
deletion vectors, partitioning, liquid clustering, identity columns, whether row-level
concurrency applies (and why not), and the matrix with how many concurrent commit pairs of the
history fall in each cell and how many of those would conflict under each level.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from audit.core.anomalies.settings import setting_understood
from audit.core.conflicts.context import ROW_LEVEL_RUNTIME, databricks_runtime
from audit.core.conflicts.matrix import OPS, conflict_matrix
from audit.core.conflicts.profiles import PROFILES
from audit.core.history.commit_summary import ISOLATION_PROPERTY, effective_isolation_level
from audit.core.model import CommitSummary
from audit.core.operations import classify_operation, uses_zorder
from audit.core.vocab import Engine, IsolationLevel, ReadVersionFact

if TYPE_CHECKING:
    from audit.core.audit import AuditResult
    from audit.core.history.summary import History

DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
# Row-level concurrency is generally available from this Databricks Runtime on (reference page).
ROW_LEVEL_CONCURRENCY_RUNTIME = ROW_LEVEL_RUNTIME
# Plain-text keys of the per-level counts: orjson refuses the enums as dict keys.
SERIALIZABLE = IsolationLevel.SERIALIZABLE.value
WRITE_SERIALIZABLE = IsolationLevel.WRITE_SERIALIZABLE.value


def isolation_settings(history: History, result: AuditResult | None) -> dict[str, Any]:
    state = history.state
    properties = state.properties
    raw_level = properties.get(ISOLATION_PROPERTY)
    engines = _engines(history.summaries, properties)
    deletion_vectors = properties.get(DELETION_VECTORS_PROPERTY, "").lower() == "true"
    rlc = row_level_concurrency(history, deletion_vectors)
    level = _table_level(raw_level, engines)
    zorder = any(uses_zorder(s.operation_parameters) for s in history.summaries)
    cells = conflict_matrix(level, rlc["applies"], deletion_vectors, zorder)
    observed = observed_pairs(history, result)
    return {
        "profiles": profile_counts(result),
        "isolation_property": raw_level,
        "isolation_level": level,
        "engines": engines,
        "deletion_vectors": deletion_vectors,
        "partition_columns": state.partition_columns,
        "clustering_columns": list(state.clustering_columns),
        "identity_columns": [asdict(c) for c in state.identity_columns],
        "row_level_concurrency": rlc,
        "matrix": {
            "isolation_level": level,
            "row_level_concurrency": rlc["applies"],
            "deletion_vectors": deletion_vectors,
            "zorder": zorder,
            "cells": [_cell_with_counts(asdict(cell), observed) for cell in cells],
        },
    }


def _engines(summaries: list[CommitSummary], properties: dict[str, str]) -> list[dict[str, Any]]:
    by_engine: dict[str, list[CommitSummary]] = defaultdict(list)
    for summary in summaries:
        by_engine[summary.engine].append(summary)
    raw = properties.get(ISOLATION_PROPERTY)
    engines = []
    for engine, commits in sorted(by_engine.items(), key=lambda item: -len(item[1])):
        understood = raw is None or setting_understood(engine, raw)
        engines.append(
            {
                "engine": engine,
                "commits": len(commits),
                "engine_info": [
                    info
                    for info, _ in Counter(
                        c.engine_info for c in commits if c.engine_info
                    ).most_common(3)
                ],
                "recorded_levels": dict(
                    Counter(
                        c.isolation_level
                        for c in commits
                        if c.facts.get("isolation_level") == ReadVersionFact.RECORDED
                    )
                ),
                "effective_level": effective_isolation_level(engine, properties),  # type: ignore[arg-type]
                "setting_understood": understood,
                "note": _engine_note(engine, raw, understood),
            }
        )
    return engines


def _engine_note(engine: str, raw: str | None, understood: bool) -> str:
    if understood:
        return ""
    if engine == Engine.DELTA_RS:
        return (
            f"delta-rs parses only 'serializable', 'writeSerializable' and 'snapshotIsolation'; "
            f"it reads {raw!r} as Serializable."
        )
    return f"{engine} does not recognise delta.isolationLevel={raw!r}."


def _table_level(raw: str | None, engines: list[dict[str, Any]]) -> str:
    """The level the matrix is resolved for: the property, else what writers enforced."""
    canonical = {level.lower(): level for level in (SERIALIZABLE, WRITE_SERIALIZABLE)}
    if raw and raw.strip().lower() in canonical:
        return canonical[raw.strip().lower()]
    for engine in engines:
        if engine["effective_level"] in (SERIALIZABLE, WRITE_SERIALIZABLE):
            return engine["effective_level"]
    return WRITE_SERIALIZABLE


def row_level_concurrency(history: History, deletion_vectors: bool) -> dict[str, Any]:
    """Whether row-level concurrency applies, per the reference page's conditions, and why not."""
    state = history.state
    clustered = bool(state.clustering_columns)
    table_qualifies = (deletion_vectors and not state.partition_columns) or (
        clustered and deletion_vectors is not False
    )
    engines = {s.engine_info for s in history.summaries if s.engine == Engine.DATABRICKS}
    engine_supports = any(
        databricks_runtime(info) >= ROW_LEVEL_CONCURRENCY_RUNTIME for info in engines if info
    )
    if not table_qualifies:
        if state.partition_columns:
            reason = "partitioned tables do not support row-level concurrency"
        elif not deletion_vectors:
            reason = "deletion vectors are not enabled (delta.enableDeletionVectors)"
        else:
            reason = (
                "the table has neither deletion vectors without partitions nor liquid clustering"
            )
    elif not engine_supports:
        reason = (
            "no writer in this history has row-level concurrency (Databricks Runtime 14.2 or above)"
        )
    else:
        reason = (
            "deletion vectors on an unpartitioned table" if not clustered else "liquid clustering"
        )
    return {
        "applies": table_qualifies and engine_supports,
        "table_qualifies": table_qualifies,
        "engine_supports": engine_supports,
        "reason": reason,
    }


PairCounts = dict[frozenset[str], dict[str, int]]


def observed_pairs(history: History, result: AuditResult | None) -> PairCounts:
    """For each unordered matrix cell: concurrent pairs seen, and how many conflict per level."""
    counts: PairCounts = defaultdict(lambda: {"pairs": 0, SERIALIZABLE: 0, WRITE_SERIALIZABLE: 0})
    if result is None:
        return counts
    for version, audit in result.commits.items():
        txn = history.summary(version)
        op_txn = _op(txn)
        if op_txn is None:
            continue
        for winner_version, verdicts in audit.verdicts.items():
            op_winner = _op(history.summary(winner_version))
            if op_winner is None:
                continue
            cell = counts[frozenset((op_txn, op_winner))]
            cell["pairs"] += 1
            for level in (SERIALIZABLE, WRITE_SERIALIZABLE):
                if verdicts.get(level):
                    cell[level] += 1
    return counts


def profile_counts(result: AuditResult | None) -> list[dict[str, Any]]:
    """Per engine profile the re-checks used: commits, concurrent pairs, pairs the reference
    rules reject, and those the writers' own rules let through (by reason)."""
    rows: dict[str, dict[str, Any]] = {}
    if result is None:
        return []
    for audit in result.commits.values():
        if not audit.profile:
            continue
        row = rows.setdefault(
            audit.profile,
            {"commits": 0, "pairs": 0, "reference_conflicts": 0, "departures": Counter()},
        )
        row["commits"] += 1
        row["pairs"] += len(audit.concurrent_versions)
        row["reference_conflicts"] += len(audit.conflicts)
        row["departures"].update((audit.departures or {}).values())
    return [
        {
            "profile": name,
            "description": PROFILES[name].description,
            "source": PROFILES[name].source,
            **{k: v for k, v in row.items() if k != "departures"},
            "departures": dict(row["departures"]),
            "disagreeing_pairs": sum(row["departures"].values()),
        }
        for name, row in sorted(rows.items(), key=lambda item: -item[1]["commits"])
    ]


def _op(summary: CommitSummary | None) -> str | None:
    if summary is None:
        return None
    return classify_operation(
        summary.operation or "", summary.blind_append, summary.operation_parameters
    )


def _cell_with_counts(cell: dict[str, Any], observed: PairCounts) -> dict[str, Any]:
    counts = observed.get(frozenset((cell["a"], cell["b"])))
    cell["observed_pairs"] = counts["pairs"] if counts else 0
    cell["conflicting_pairs"] = {
        SERIALIZABLE: counts[SERIALIZABLE] if counts else 0,
        WRITE_SERIALIZABLE: counts[WRITE_SERIALIZABLE] if counts else 0,
    }
    return cell


__all__ = [
    "OPS",
    "isolation_settings",
    "observed_pairs",
    "row_level_concurrency",
    "setting_understood",
]
