"""Words for the dependency cycles of audit/core/cycles.py (kept apart from detection).

Every sentence is built from the edge's evidence only, so what it says is what the log shows.
"""

from __future__ import annotations

from typing import Any

from audit.core.cycles import Cycle, Edge
from audit.core.vocab import ReadVersionFact


def _item(edge: Edge) -> str:
    return "the table" if edge.item in ("whole table", "table version") else edge.item


def _writer(edge: Edge) -> str:
    ev = edge.evidence
    if ev.get("compaction"):
        return f"v{edge.target}'s {ev.get('writer_operation') or 'compaction'} rewrite of {_item(edge)}"
    op = "append" if ev.get("writer_blind_append") else ev.get("writer_operation") or "write"
    return f"v{edge.target}'s {op} to {_item(edge)}"


def edge_why(edge: Edge) -> str:
    ev = edge.evidence
    if edge.type == "rw":
        read = ev.get("read_version")
        fact = ev.get("read_version_fact")
        seen = f"v{read}" if read is not None else "an earlier version"
        derived = f" ({fact})" if fact and fact != ReadVersionFact.RECORDED else ""
        return (
            f"v{edge.source} read {seen}{derived} and did not see {_writer(edge)} "
            f"({ev.get('writer_file_count', 0)} file(s)), which lies in what it read: "
            f"{ev.get('read_scope')}"
        )
    if edge.type == "ww":
        if edge.item == "table version":
            return (
                f"v{edge.source} and v{edge.target} each wrote the table's next version; "
                f"the log orders v{edge.source} first"
            )
        return (
            f"v{edge.source} and v{edge.target} both wrote {_item(edge)}; "
            f"the log orders v{edge.source} first"
        )
    return f"v{edge.target} read what v{edge.source} wrote"


def cycle_sentence(cycle: Cycle) -> str:
    """One sentence for the first two-edge cycle, e.g. 'v12 read v10 and did not see ...'."""
    rw = next((e for e in cycle.edges if e.type == "rw"), None)
    ww = next((e for e in cycle.edges if e.type == "ww"), None)
    if rw is None or ww is None:
        return f"The commits form a {cycle.anomaly} cycle, forbidden under {cycle.delta_level}."
    read = rw.evidence.get("read_version")
    seen = f"v{read}" if read is not None else "an earlier version"
    more = len(cycle.edges) // 2 - 1
    extra = f" (and {more} more such cycle(s) through v{rw.source})" if more > 0 else ""
    return (
        f"v{rw.source} read {seen} and did not see {_writer(rw)}, yet committed after it: "
        f"an rw anti-dependency v{rw.source}\u2192v{rw.target} with v{ww.source} ww\u2192v{ww.target} "
        f"forms a {cycle.anomaly} cycle{extra}, forbidden under {cycle.delta_level} "
        f"(Adya: {cycle.adya_level})."
    )


def witness_fields(cycle: Cycle) -> dict[str, Any]:
    """The keys added to a finding's witness."""
    return {
        "cycle": [e.as_dict(edge_why(e)) for e in cycle.edges],
        "anomaly": cycle.anomaly,
        "weakest_level_violated": cycle.delta_level,
        "adya_level": cycle.adya_level,
        "cycle_sentence": cycle_sentence(cycle),
    }
