"""The sentences of an explanation: what the exception means, which commit did it, where, and
on what kind of table.
"""

from __future__ import annotations

from audit.core.explain.locate import CommitView, TableFacts
from audit.core.explain.parse import ParsedException
from audit.core.explain.untrusted import clip, iso
from audit.core.vocab import ConflictException, OperationClass

NOT_A_CONFLICT = (
    "This is not a Delta conflict exception: none of the six conflict "
    "exceptions (or delta-rs's commit conflicts) is named or worded in the text."
)

# What the reference page says each exception means.
MEANINGS: dict[ConflictException, str] = {
    ConflictException.CONCURRENT_APPEND: (
        "A concurrent operation added files in the same partition (or anywhere in an "
        "unpartitioned table) that your operation read. The additions can come from INSERT, "
        "DELETE, UPDATE or MERGE; under WriteSerializable files added by blind appends are "
        "exempt, under Serializable they conflict too."
    ),
    ConflictException.CONCURRENT_DELETE_READ: (
        "A concurrent operation deleted a file that your operation read. Common causes are a "
        "DELETE, UPDATE or MERGE that rewrites files, or a compaction (OPTIMIZE)."
    ),
    ConflictException.CONCURRENT_DELETE_DELETE: (
        "A concurrent operation deleted a file that your operation also deletes, typically two "
        "concurrent compactions rewriting the same files."
    ),
    ConflictException.METADATA_CHANGED: (
        "A concurrent transaction updated the table's metadata: an ALTER TABLE, a table "
        "property change or a write that changed the schema. Metadata changes make all "
        "concurrent writes fail."
    ),
    ConflictException.CONCURRENT_TRANSACTION: (
        "Two streaming queries using the same checkpoint location wrote to the table at the "
        "same time. Two streaming queries must never share a running checkpoint location."
    ),
    ConflictException.PROTOCOL_CHANGED: (
        "The table's protocol changed concurrently: it was upgraded (a table feature was "
        "enabled or dropped), or several writers created or replaced the table, or wrote to an "
        "empty path, at the same time."
    ),
    ConflictException.CONCURRENT_WRITE: (
        "A concurrent transaction committed new data after your transaction read the table; "
        "Delta could not tell which of the specific conflicts above it was."
    ),
}

# How the history lookup found the commit, as the sentence says it.
_FOUND_BY = {
    "version": " by its version",
    "txnId": " by its txnId",
    "timestamp": " by its timestamp",
}


def explanation(
    parsed: ParsedException, view: CommitView | None, found_by: str | None, facts: TableFacts | None
) -> str:
    """The explanation paragraph: meaning, conflicting commit, place, detail, table."""
    parts = [f"{parsed.exception}: {MEANINGS[parsed.exception]}"]
    if view is not None:
        parts.append(_describe_commit(view, found_by))
    where = _where(parsed)
    if where:
        parts.append(f"The conflict was in {where}.")
    if parsed.detail:
        parts.append(f"Detail: {parsed.detail}.")
    if facts is not None:
        parts.append(_describe_table(facts))
    return " ".join(parts)


def _describe_commit(view: CommitView, found_by: str | None) -> str:
    what = f"version {view.version}" if view.version is not None else "a commit"
    bits = []
    if view.operation:
        bits.append(clip(view.operation, 80))
    if view.blind_append is True and view.kind == OperationClass.INSERT:
        bits.append("a blind append")
    if view.timestamp is not None:
        bits.append(f"at {iso(view.timestamp)}")
    if view.user_name:
        bits.append(f"by {clip(view.user_name, 120)}")
    if view.read_version is not None:
        bits.append(f"read version {view.read_version}")
    detail = f" ({', '.join(bits)})" if bits else ""
    if view.source == "history":
        how = _FOUND_BY.get(found_by or "", "")
        return f"The conflicting commit is {what}{detail}, found in the table's history{how}."
    return f"The conflicting commit is {what}{detail}, as the exception reports it."


def _where(parsed: ParsedException) -> str | None:
    if parsed.partitions:
        shown = [
            "[" + ", ".join(f"{k}={v}" for k, v in p.items()) + "]" for p in parsed.partitions[:5]
        ]
        return "partition " + "; ".join(shown)
    if parsed.root_of_table:
        return "the root of the table (Delta says so when the table is unpartitioned)"
    return None


def _describe_table(facts: TableFacts) -> str:
    layout = (
        f"partitioned by {', '.join(facts.partition_columns)}"
        if facts.partition_columns
        else "unpartitioned"
    )
    if facts.clustering_columns:
        layout += f", liquid-clustered by {', '.join(facts.clustering_columns)}"
    dvs = "deletion vectors on" if facts.deletion_vectors else "deletion vectors off"
    level = facts.isolation_level or "not recorded"
    rlc = "applies" if facts.row_level_concurrency else "does not apply"
    return (
        f"The table is {layout}, with {dvs}; its isolation level for this writer is {level}"
        f"; row-level concurrency {rlc}."
    )
