"""Elle-style dependency cycles for the anomaly findings (detection only; words: wording/cycles.py).

Jepsen's Elle proves an anomaly by a cycle in the dependency graph of transactions and names it
by Adya's taxonomy. Here the transactions are commits and the items are what Delta's conflict
checker reasons about: partitions (or the whole unpartitioned table) as file sets, and the table
version itself, which every commit writes (a put-if-absent of the next `_delta_log` version).

For a stale commit T (read version r, committed at v) and a commit W with r < W < v whose files
landed in what T read:
- T -rw-> W: T's read of the scope at r did not see W's write (an anti-dependency, predicate
  based: W added files matching T's read scope, or compacted files T read);
- W -ww-> T: both wrote the same partition, or at least the table version, and the log orders W
  first.
One anti-dependency edge makes the cycle G-single (Adya), two or more G2-item; none, G1c.
Every edge keeps the facts that justify it (`evidence`), so a test can re-check it on the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from audit.core.model import CommitSummary, PartitionKey
from audit.core.storage.roots import shown_path
from audit.core.vocab import IsolationLevel, ReadVersionFact

EdgeType = Literal["ww", "wr", "rw"]

# Adya's phenomena -> the weakest level of his hierarchy that proscribes them.
ADYA_LEVEL = {
    "G1c": "PL-2 (Read Committed)",
    "G-single": "PL-2+ (Consistent View)",
    "G2-item": "PL-2.99 (Repeatable Read)",
}
MAX_PARTITIONS_NAMED = 3


class Scope(Protocol):
    kind: str

    def contains(self, key: PartitionKey) -> bool: ...

    def describe(self) -> str: ...


@dataclass(slots=True)
class Edge:
    source: int
    target: int
    type: EdgeType
    item: str  # the partition(s) or "table version"
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self, why: str) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "type": self.type,
            "item": self.item,
            "why": why,
            "evidence": self.evidence,
        }


@dataclass(slots=True)
class Cycle:
    edges: list[Edge]
    anomaly: str  # G1c | G-single | G2-item
    adya_level: str  # the weakest Adya level it violates
    delta_level: IsolationLevel  # the weakest Delta isolation level that forbids it


def render_partitions(keys: Iterable[PartitionKey]) -> str:
    names = sorted("/".join(f"{c}={v}" for c, v in k) if k else "whole table" for k in keys)
    if not names:
        return "the table"
    more = len(names) - MAX_PARTITIONS_NAMED
    return ", ".join(names[:MAX_PARTITIONS_NAMED]) + (f" and {more} more" if more > 0 else "")


def _written(summary: CommitSummary) -> frozenset[PartitionKey]:
    return summary.partitions_touched | summary.compacted_removed_partitions


def _in_scope(scope: Scope, winner: CommitSummary) -> tuple[frozenset[PartitionKey], bool]:
    """The winner's written partitions T's scope covers; and whether it was a compaction."""
    added = frozenset(k for k in winner.added_partitions if scope.contains(k))
    if added:
        return added, False
    compacted = frozenset(k for k in winner.compacted_removed_partitions if scope.contains(k))
    return compacted, bool(compacted)


def anti_dependency(
    txn: CommitSummary,
    read_version: int | None,
    read_fact: ReadVersionFact,
    scope: Scope,
    winner: CommitSummary,
) -> Edge:
    partitions, compaction = _in_scope(scope, winner)
    files = sorted(winner.compacted_paths if compaction else winner.added_paths)
    return Edge(
        txn.version,
        winner.version,
        "rw",
        render_partitions(partitions or winner.added_partitions),
        {
            "read_version": read_version,
            "read_version_fact": read_fact,
            "read_scope": scope.describe(),
            "predicate": txn.predicate.raw if txn.predicate is not None else None,
            "writer_operation": winner.operation,
            "writer_blind_append": winner.blind_append,
            "writer_files": [shown_path(f) for f in files[:5]],
            "writer_file_count": len(files),
            "compaction": compaction,
        },
    )


def write_dependency(winner: CommitSummary, txn: CommitSummary) -> Edge:
    shared = _written(winner) & _written(txn)
    return Edge(
        winner.version,
        txn.version,
        "ww",
        render_partitions(shared) if shared else "table version",
        {"shared_partitions": len(shared), "log_order": [winner.version, txn.version]},
    )


def classify(edges: list[Edge]) -> tuple[str, str]:
    anti = sum(1 for e in edges if e.type == "rw")
    anomaly = "G1c" if anti == 0 else "G-single" if anti == 1 else "G2-item"
    return anomaly, ADYA_LEVEL[anomaly]


def stale_commit_cycle(
    txn: CommitSummary,
    read_version: int | None,
    read_fact: ReadVersionFact,
    scope: Scope,
    winners: list[CommitSummary],
) -> Cycle | None:
    """The cycle(s) through stale commit `txn` and each commit it did not see.

    Each winner contributes a two-edge cycle T -rw-> W -ww-> T; several winners share T. The
    anomaly is named per two-edge cycle (one anti-dependency: G-single).
    """
    edges: list[Edge] = []
    for winner in sorted(winners, key=lambda w: w.version):
        if not winner.version < txn.version:
            continue
        if read_version is not None and winner.version <= read_version:
            continue  # T saw it: no anti-dependency, no cycle
        edges.append(anti_dependency(txn, read_version, read_fact, scope, winner))
        edges.append(write_dependency(winner, txn))
    if not edges:
        return None
    anomaly, adya = classify(edges[:2])
    blind = all(w.blind_append is True for w in winners)
    # WriteSerializable lets a commit ignore blind appends: it then promises only the serial
    # order T-before-W, which this history satisfies; only Serializable forbids it.
    delta = IsolationLevel.SERIALIZABLE if blind else IsolationLevel.WRITE_SERIALIZABLE
    return Cycle(edges, anomaly, adya, delta)
