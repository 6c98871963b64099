"""What a commit read, as far as the log lets us tell, and the facts of a commit that decide it.

Files a commit read are not in the log, so its read scope is inferred from its predicate (the
partitions its partition part selects) and the files it removed (it read those).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from audit.core.conflicts.matchers import PartitionMatcher
from audit.core.model import CommitSummary, PartitionKey
from audit.core.vocab import Operation

if TYPE_CHECKING:
    from audit.core.conflicts.context import TableContext

ScopeKind = Literal["none", "partitions", "table"]

# Operations whose predicate says which rows they rewrote or deleted.
_DESTRUCTIVE = (Operation.DELETE, Operation.UPDATE, Operation.MERGE)
_REPLACE_OPERATIONS = (
    Operation.CREATE_OR_REPLACE_TABLE_AS_SELECT,
    Operation.REPLACE_TABLE_AS_SELECT,
)
_OVERWRITE_OPERATIONS = frozenset(
    {Operation.WRITE, *_REPLACE_OPERATIONS, Operation.STREAMING_UPDATE}
)
_TRUE_PREDICATES = frozenset({"", "true", "(true)", "1=1", "1 = 1"})


@dataclass(slots=True, eq=False)
class ReadScope:
    """What a commit read, as far as the log lets us tell.

    kind "none": a blind append, read nothing. "table": the whole table (unpartitioned, or a
    predicate naming no partition column, or no predicate). "partitions": the partitions its
    predicate's partition part selects (`matcher`), plus those of the files it removed.
    """

    kind: ScopeKind
    predicate: str | None = None
    partitions: frozenset[PartitionKey] = frozenset()
    matcher: PartitionMatcher | None = None
    reason: str = ""
    _seen: dict[PartitionKey, bool] = field(default_factory=dict, repr=False)

    def contains(self, key: PartitionKey) -> bool:
        if self.kind == "table":
            return True
        if self.kind == "none":
            return False
        if key in self.partitions:
            return True
        if self.matcher is None:
            return False
        hit = self._seen.get(key)
        if hit is None:
            try:
                hit = bool(self.matcher(dict(key)))
            except Exception:  # a matcher that cannot decide must not hide a conflict
                hit = True
            self._seen[key] = hit
        return hit

    def overlaps(self, keys: Iterable[PartitionKey]) -> bool:
        return any(self.contains(k) for k in keys)

    def describe(self) -> str:
        if self.kind == "none":
            return "nothing (blind append)"
        if self.kind == "table":
            return f"the whole table ({self.reason})" if self.reason else "the whole table"
        parts = [render_partition(k) for k in sorted(self.partitions, key=key_sort)[:5]]
        text = f"partitions matching {self.predicate}" if self.predicate else "partitions"
        if parts:
            more = "" if len(self.partitions) <= 5 else f" and {len(self.partitions) - 5} more"
            text += f" (removed files in {', '.join(parts)}{more})"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "predicate": self.predicate, "description": self.describe()}


SCOPE_NONE = ReadScope("none", reason="blind append")


def render_partition(key: PartitionKey) -> str:
    if not key:
        return "whole table"
    return "/".join(f"{c}={'null' if v is None else v}" for c, v in key)


def key_sort(key: PartitionKey) -> tuple:
    """A total order on partition keys (None sorts apart from every text value)."""
    return tuple((c, "" if v is None else v, v is None) for c, v in key)


# --------------------------------------------------------------------------- facts of a commit


def is_blind(txn: CommitSummary) -> bool:
    return bool(txn.blind_append)


def has_condition(txn: CommitSummary) -> bool:
    """Did the commit record a predicate that narrows what it touched (not `true`, `1=1`)?"""
    predicate = txn.predicate
    return predicate is not None and predicate.raw.strip().lower() not in _TRUE_PREDICATES


def is_unconditional(txn: CommitSummary) -> bool:
    """A DELETE without condition, or an overwrite without predicate / replaceWhere."""
    if has_condition(txn):
        return False
    if (txn.operation or "").upper() == Operation.DELETE:
        return True
    return is_overwrite(txn)


def is_overwrite(txn: CommitSummary) -> bool:
    op = (txn.operation or "").upper()
    params = txn.operation_parameters
    mode = str(params.get("mode", "")).lower()
    if _dynamic_overwrite(params):
        return False  # replaces only the partitions it writes: not a full overwrite
    if op in _OVERWRITE_OPERATIONS and mode == "overwrite":
        return True
    return op in _REPLACE_OPERATIONS


def _dynamic_overwrite(params: dict[str, Any]) -> bool:
    for key, value in params.items():
        if "dynamic" in str(key).lower() and str(value).lower() in ("true", "dynamic"):
            return True
        if str(key).lower() == "partitionoverwritemode" and str(value).lower() == "dynamic":
            return True
    return False


def is_destructive(txn: CommitSummary) -> bool:
    """A commit whose predicate (or lack of one) says which existing rows it deleted/rewrote."""
    if is_blind(txn):
        return False
    op = (txn.operation or "").upper()
    if op in _DESTRUCTIVE:
        return True
    return is_overwrite(txn) or (op in _OVERWRITE_OPERATIONS and txn.predicate is not None)


def is_compaction(txn: CommitSummary) -> bool:
    return not txn.data_change and txn.has_removes


# --------------------------------------------------------------------------- inferring the scope


def read_scope(txn: CommitSummary, ctx: TableContext, read_version: int | None = None) -> ReadScope:
    """Infer what `txn` read: see ReadScope. Partition config is the one at its read version."""
    if is_blind(txn):
        return SCOPE_NONE
    at = read_version if read_version is not None else txn.version - 1
    partition_columns = ctx.partition_columns_at(at)
    # The summary's own set when nothing was compacted: a union would copy it into every
    # scope that keeps it (the windowed commits' scopes live as long as the audit).
    removed = txn.removed_partitions
    if txn.compacted_removed_partitions:
        removed = removed | txn.compacted_removed_partitions
    predicate = txn.predicate
    has_predicate = has_condition(txn)
    if not txn.files_added and not txn.has_removes and not has_predicate:
        return ReadScope("none", reason="changes no files")
    if not partition_columns:
        return ReadScope(
            "table", predicate.raw if has_predicate else None, reason="unpartitioned table"
        )
    if has_predicate:
        names = {c.lower() for c in partition_columns}
        if not (predicate.columns & names):
            return ReadScope("table", predicate.raw, reason="predicate names no partition column")
        matcher = ctx.matcher(predicate, at)
        if matcher is None:
            return ReadScope(
                "table", predicate.raw, reason="its partition conditions do not narrow the read"
            )
        return ReadScope("partitions", predicate.raw, frozenset(removed), matcher)
    if is_compaction(txn) and removed:
        return ReadScope("partitions", None, frozenset(removed), reason="files it compacted")
    return ReadScope("table", None, reason="no predicate")


def whole_table_scope(txn: CommitSummary, reason: str) -> ReadScope:
    """The scope assumed without looking at partitions: nothing for a blind append, else the
    whole table (`reason` says why the audit did not infer more)."""
    if is_blind(txn):
        return SCOPE_NONE
    return ReadScope("table", txn.predicate.raw if txn.predicate else None, reason=reason)
