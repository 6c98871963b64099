"""The isolation audit: concurrent commits, read scopes, Delta's conflict rules re-run, findings.

For a commit T that read version r and committed at v, the commits in (r, v) committed while T
was in flight; Delta checked T against each of them (the "winners" W) before letting T commit.
We re-run those checks under both Serializable and WriteSerializable, in the order of Delta's
ConflictChecker (protocol, metadata, domain metadata / app transactions, then the file checks:
added files T should have read, removed files T read, files both removed), from the facts the
log keeps. Files T read are not in the log, so T's read scope is inferred from its predicate
and the files it removed (see `read_scope`).

Cost: one pass over the commits, and for each commit one pass over its (r, v) window, so the
work is commits × concurrency, never commits². Partition matchers are cached per
(predicate, partition columns).
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from audit.core import severity as sev
from audit.core.catalog import catalog_feature, catalog_findings
from audit.core.cycle_text import witness_fields
from audit.core.cycles import stale_commit_cycle
from audit.core.integrity import INTEGRITY_KINDS, integrity_findings
from audit.core.matrix import OPTIMIZE, UDM, classify_operation, uses_zorder
from audit.core.model import CommitSummary, Finding, Metadata, PartitionKey, Predicate
from audit.core.summary import History, paused_gc
from audit.core.writers import retry_storm_findings

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)

PROTOCOL_CHANGED = "ProtocolChangedException"
METADATA_CHANGED = "MetadataChangedException"
CONCURRENT_TRANSACTION = "ConcurrentTransactionException"
CONCURRENT_APPEND = "ConcurrentAppendException"
CONCURRENT_DELETE_READ = "ConcurrentDeleteReadException"
CONCURRENT_DELETE_DELETE = "ConcurrentDeleteDeleteException"

# A read version this far behind its commit is still honoured, but only this many concurrent
# commits are re-checked (a hostile or broken readVersion must not make the audit quadratic).
# Kinds computed over the whole history (totals, table settings): a windowed re-audit must not
# create or resolve them; the tail recomputes them with a full audit instead.
TABLE_LEVEL_KINDS = frozenset(
    {
        "conflict_hotspot",
        "isolation_setting_ignored",
        "identity_column_concurrency",
        "missing_read_version",
        "catalog_managed_log",
        "retry_storm",
    }
    | INTEGRITY_KINDS
)

MAX_CONCURRENT_WINDOW = 10_000
# Anomaly kinds whose witness carries a dependency cycle (audit/core/cycles.py).
CYCLE_KINDS = frozenset({"never_existed_snapshot", "write_serializable_reorder"})
# Partitions credited per overlapping pair in the hotspot tally (bounds the work per pair).
MAX_HOTSPOT_PARTITIONS_PER_PAIR = 4
# Domains Delta resolves itself instead of failing (row tracking high-water mark).
_SELF_RESOLVING_DOMAINS = frozenset({"delta.rowTracking"})
_ROW_LEVEL_RUNTIME = (14, 2)
_CLUSTERED_ROW_LEVEL_RUNTIME = (13, 3)
# Operations whose predicate says which rows they rewrote or deleted.
_DESTRUCTIVE = ("DELETE", "UPDATE", "MERGE")
_OVERWRITE_OPERATIONS = frozenset(
    {"WRITE", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT", "STREAMING UPDATE"}
)
_TRUE_PREDICATES = frozenset({"", "true", "(true)", "1=1", "1 = 1"})

ScopeKind = Literal["none", "partitions", "table"]
PartitionMatcher = Callable[[dict[str, Any]], bool]


# --------------------------------------------------------------------------- read scope


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
        parts = [render_partition(k) for k in sorted(self.partitions, key=_key_sort)[:5]]
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


def _key_sort(key: PartitionKey) -> tuple:
    return tuple((c, "" if v is None else v, v is None) for c, v in key)


# --------------------------------------------------------------------------- re-check verdicts


@dataclass(frozen=True, slots=True)
class Recheck:
    """Delta's verdict for one (txn, winner) pair under each isolation level.

    `rule` names the check that fired first (protocol, metadata, domain, txn, append,
    delete_read, delete_delete). `certain` is False when the exception depends on files or rows
    the log does not show (e.g. which files an unpartitioned predicate really read).
    `same_row_only`: row-level concurrency applies, so the exception is raised only if both
    commits touched the same rows, which the log cannot show.
    """

    serializable: str | None
    write_serializable: str | None
    rule: str | None = None
    certain: bool = True
    same_row_only: bool = False
    blind_append_exempt: bool = False

    def at(self, level: str | None) -> str | None:
        if level == WRITE_SERIALIZABLE:
            return self.write_serializable
        if level == SERIALIZABLE:
            return self.serializable
        if level == SNAPSHOT_ISOLATION:
            return self.write_serializable if self.rule != "append" else None
        return None

    def as_dict(self) -> dict[str, str | None]:
        return {SERIALIZABLE: self.serializable, WRITE_SERIALIZABLE: self.write_serializable}

    @property
    def any(self) -> bool:
        return self.serializable is not None or self.write_serializable is not None


NO_CONFLICT = Recheck(None, None)


@dataclass(slots=True)
class CommitAudit:
    """The audit's view of one commit."""

    version: int
    read_version: int | None
    read_version_fact: str  # "recorded" | "derived" | "unknown"
    isolation_level: str | None
    concurrent_versions: range  # (read_version, version), possibly clipped; empty if unknown
    read_scope: ReadScope
    window_truncated: bool = False
    # Only pairs with at least one exception are stored; `verdicts` fills in the rest.
    conflicts: dict[int, Recheck] = field(default_factory=dict)

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
        }


@dataclass(slots=True)
class Hotspot:
    """Concurrent commits overlapping in one partition (or the whole table), per operation pair."""

    partition: str
    operations: tuple[str, str]
    pairs: int = 0
    conflicts: dict[str, int] = field(
        default_factory=lambda: {SERIALIZABLE: 0, WRITE_SERIALIZABLE: 0}
    )
    exceptions: Counter = field(default_factory=Counter)
    first_version: int | None = None
    first_winner: int | None = None
    last_version: int | None = None
    per_day: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "operations": list(self.operations),
            "pairs": self.pairs,
            "conflicts": dict(self.conflicts),
            "exceptions": dict(sorted(self.exceptions.items())),
            "first_version": self.first_version,
            "last_version": self.last_version,
            "per_day": dict(sorted(self.per_day.items())),
        }


@dataclass(slots=True)
class AuditResult:
    findings: list[Finding]
    commits: dict[int, CommitAudit]
    hotspots: list[Hotspot]


# --------------------------------------------------------------------------- table context


class TableContext:
    """Per-history caches: config per version, partition matchers, read scopes."""

    def __init__(self, history: History):
        self.history = history
        self._matchers: dict[tuple[str, tuple[str, ...]], PartitionMatcher | None] = {}
        self._pinned: dict[tuple[tuple[str, str], ...], PartitionMatcher] = {}
        self._types: dict[int, dict[str, str]] = {}
        self._rlc_engine: dict[str | None, bool] = {}
        self.clustered = bool(history.state.clustering_columns)
        summaries = history.summaries
        self._first = summaries[0].version if summaries else 0
        # Index by version offset; gaps (missing commits) stay None.
        last = summaries[-1].version if summaries else -1
        self._by_offset: list[CommitSummary | None] = [None] * (last - self._first + 1)
        for s in summaries:
            self._by_offset[s.version - self._first] = s
        # Versions that can conflict with a commit that read nothing.
        self.special_versions = [
            s.version
            for s in summaries
            if s.protocol_changed or s.metadata_changed or s.app_ids or s.domains
        ]

    def summary(self, version: int) -> CommitSummary | None:
        index = version - self._first
        if 0 <= index < len(self._by_offset):
            return self._by_offset[index]
        return None

    def metadata_at(self, version: int) -> Metadata | None:
        return self.history.metadata_at(version)

    def partition_columns_at(self, version: int) -> list[str]:
        metadata = self.metadata_at(version)
        return list(metadata.partition_columns) if metadata else []

    def properties_at(self, version: int) -> dict[str, str]:
        metadata = self.metadata_at(version)
        return metadata.configuration if metadata else {}

    def partition_types(self, metadata: Metadata | None) -> dict[str, str]:
        if metadata is None:
            return {}
        key = id(metadata)
        if key not in self._types:
            self._types[key] = partition_types_of(metadata)
        return self._types[key]

    def deletion_vectors_at(self, version: int) -> bool:
        value = self.properties_at(version).get("delta.enableDeletionVectors", "")
        return str(value).strip().lower() == "true"

    def matcher(self, predicate: Predicate, read_version: int) -> PartitionMatcher | None:
        metadata = self.metadata_at(read_version)
        columns = tuple(metadata.partition_columns) if metadata else ()
        text = predicate.sql or predicate.raw
        types = self.partition_types(metadata)
        pins = _simple_partition_pins(predicate.sql, columns, types)
        if pins is not None:  # fast path: `p = 'x' AND ...` needs no SQL parsing
            if not pins:
                return None
            pinned = self._pinned.get(pins)
            if pinned is None:
                pinned = self._pinned[pins] = _pins_matcher(pins)
            return pinned
        key = (text, columns)
        if key not in self._matchers:
            self._matchers[key] = _partition_matcher(
                predicate, list(columns), self.partition_types(metadata)
            )
        return self._matchers[key]

    def row_level_concurrency(self, txn: CommitSummary, read_version: int) -> bool:
        """Deletion vectors on an unpartitioned table, or liquid clustering, on Databricks ≥ 14.2."""
        dv = self.deletion_vectors_at(read_version)
        unpartitioned = not self.partition_columns_at(read_version)
        if not ((dv and unpartitioned) or self.clustered):
            return False
        if txn.engine_info not in self._rlc_engine:
            runtime = databricks_runtime(txn.engine_info or "")
            needed = (
                _CLUSTERED_ROW_LEVEL_RUNTIME
                if self.clustered and not unpartitioned
                else _ROW_LEVEL_RUNTIME
            )
            self._rlc_engine[txn.engine_info] = txn.engine == "databricks" and runtime >= needed
        return self._rlc_engine[txn.engine_info]


def partition_types_of(metadata: Metadata) -> dict[str, str]:
    """Partition column -> Delta type name ("string", "date", "decimal(10,2)", ...)."""
    wanted = {c.lower(): c for c in metadata.partition_columns}
    if not wanted or not metadata.schema_string:
        return {}
    try:
        schema = orjson.loads(metadata.schema_string)
    except orjson.JSONDecodeError:
        return {}
    types: dict[str, str] = {}
    for f in schema.get("fields", []) if isinstance(schema, dict) else []:
        if isinstance(f, dict) and str(f.get("name", "")).lower() in wanted:
            kind = f.get("type")
            types[wanted[str(f["name"]).lower()]] = kind if isinstance(kind, str) else "string"
    return types


def databricks_runtime(engine_info: str) -> tuple[int, int]:
    """`Databricks-Runtime/14.3.x-photon-scala2.12` -> (14, 3); anything else -> (0, 0)."""
    marker = "databricks-runtime/"
    lowered = engine_info.lower()
    if marker not in lowered:
        return (0, 0)
    parts = lowered.split(marker, 1)[1].split()[0].split(".") if lowered.split(marker, 1)[1] else []
    try:
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0)
    except (ValueError, IndexError):
        return (0, 0)


# A conjunction of `column <op> literal` terms, as sqlglot prints normalised predicates.
_TERM = re.compile(
    r"""(\w+|"[^"]+"|`[^`]+`) (=|<>|!=|<|<=|>|>=) ('(?:[^']|'')*'|-?\d+(?:\.\d+)?)"""
)
_CANONICAL_TEXT_TYPES = frozenset({"string", "date"})
_INTEGER_TYPES = frozenset({"long", "integer", "short", "byte"})


def _simple_partition_pins(
    sql: str | None, partition_columns: tuple[str, ...], types: dict[str, str]
) -> tuple[tuple[str, str], ...] | None:
    """Partition equalities of a plain `a = 'x' AND b > 3` predicate, without parsing SQL.

    Returns the (column, canonical value) pins, () when no term is on a partition column, or
    None when the text is not of this simple shape (the caller then uses predicates.py).
    """
    if not sql or "(" in sql or " OR " in sql.upper() or len(sql) > 2000:
        return None
    terms = sql.split(" AND ")
    names = {c.lower(): c for c in partition_columns}
    pins = []
    for term in terms:
        match = _TERM.fullmatch(term.strip())
        if match is None:
            return None
        column, op, literal = match.groups()
        column = names.get(column.strip('"`').lower())
        if column is None:
            continue
        kind = types.get(column, "string")
        if op != "=" or (kind not in _CANONICAL_TEXT_TYPES and kind not in _INTEGER_TYPES):
            return None
        value = literal[1:-1].replace("''", "'") if literal.startswith("'") else literal
        if kind in _INTEGER_TYPES:
            if not value.lstrip("-").isdigit():
                return None
            value = str(int(value))
        elif kind == "date" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return None
        pins.append((column, value))
    return tuple(sorted(pins))


def _pins_matcher(pins: tuple[tuple[str, str], ...]) -> PartitionMatcher:
    def may_match(values: dict[str, Any]) -> bool:
        for column, wanted in pins:
            value = values.get(column)
            if value is None:
                return False  # NULL = x is not true
            if value != wanted and not (value.lstrip("-").isdigit() and str(int(value)) == wanted):
                return False
        return True

    return may_match


def _partition_matcher(
    predicate: Predicate, partition_columns: list[str], partition_types: dict[str, str]
) -> PartitionMatcher | None:
    """A callable on partition values; None when the predicate does not narrow the partitions."""
    from audit.core import predicates

    try:
        if predicates.partition_part(predicate, partition_columns) is None:
            return None
        return predicates.partition_matcher(predicate, partition_columns, partition_types)
    except Exception:  # untrusted predicate text: no matcher means "the whole table"
        return None


# --------------------------------------------------------------------------- facts of a commit


def is_blind(txn: CommitSummary) -> bool:
    return bool(txn.blind_append)


def is_unconditional(txn: CommitSummary) -> bool:
    """A DELETE without condition, or an overwrite without predicate / replaceWhere."""
    predicate = txn.predicate
    if predicate is not None and predicate.raw.strip().lower() not in _TRUE_PREDICATES:
        return False
    op = (txn.operation or "").upper()
    if op == "DELETE":
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
    return op in ("CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT")


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


def read_scope(txn: CommitSummary, ctx: TableContext, read_version: int | None = None) -> ReadScope:
    """Infer what `txn` read: see ReadScope. Partition config is the one at its read version."""
    if is_blind(txn):
        return SCOPE_NONE
    at = read_version if read_version is not None else txn.version - 1
    partition_columns = ctx.partition_columns_at(at)
    removed = txn.removed_partitions | txn.compacted_removed_partitions
    predicate = txn.predicate
    has_predicate = predicate is not None and predicate.raw.strip().lower() not in _TRUE_PREDICATES
    if not txn.files_added and not txn.removed_paths_all and not has_predicate:
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
    if _is_compaction(txn) and removed:
        return ReadScope("partitions", None, frozenset(removed), reason="files it compacted")
    return ReadScope("table", None, reason="no predicate")


def _is_compaction(txn: CommitSummary) -> bool:
    return not txn.data_change and bool(txn.removed_paths_all)


# --------------------------------------------------------------------------- the re-check


def recheck(
    txn: CommitSummary,
    winner: CommitSummary,
    scope: ReadScope | None = None,
    ctx: TableContext | None = None,
    *,
    row_level_concurrency: bool | None = None,
    deletion_vectors: bool | None = None,
) -> Recheck:
    """Delta's conflict checks of `txn` against the concurrent `winner`, under both levels.

    Order as in Delta's ConflictChecker.checkConflicts: protocol, metadata, domain metadata,
    application transactions, then added files, deleted-vs-read files, deleted-vs-deleted files.
    """
    if scope is None:
        scope = read_scope(txn, ctx) if ctx is not None else _scope_without_context(txn)
    if winner.protocol_changed:
        return Recheck(PROTOCOL_CHANGED, PROTOCOL_CHANGED, "protocol")
    if winner.metadata_changed:
        return Recheck(METADATA_CHANGED, METADATA_CHANGED, "metadata")
    if (winner.domains & txn.domains) - _SELF_RESOLVING_DOMAINS:
        return Recheck(CONCURRENT_TRANSACTION, CONCURRENT_TRANSACTION, "domain")
    if winner.app_ids and txn.app_ids and winner.app_ids.keys() & txn.app_ids.keys():
        return Recheck(CONCURRENT_TRANSACTION, CONCURRENT_TRANSACTION, "txn")
    if scope.kind == "none":
        return NO_CONFLICT
    # Table facts not given are taken from the context, at the txn's read version.
    read_at = txn.read_version if txn.read_version is not None else txn.version - 1
    if deletion_vectors is None:
        deletion_vectors = ctx.deletion_vectors_at(read_at) if ctx is not None else False
    if row_level_concurrency is None:
        row_level_concurrency = (
            ctx.row_level_concurrency(txn, read_at) if ctx is not None else False
        )
    return _file_checks(txn, winner, scope, row_level_concurrency, deletion_vectors)


def _scope_without_context(txn: CommitSummary) -> ReadScope:
    if is_blind(txn):
        return SCOPE_NONE
    return ReadScope(
        "table", txn.predicate.raw if txn.predicate else None, reason="no table context"
    )


def _file_checks(
    txn: CommitSummary,
    winner: CommitSummary,
    scope: ReadScope,
    rlc: bool,
    dv: bool,
) -> Recheck:
    same_row = False
    if dv or rlc:  # classifying operations costs; only these two rules need it
        txn_op = classify_operation(txn.operation, txn.blind_append, txn.operation_parameters)
        winner_op = classify_operation(
            winner.operation, winner.blind_append, winner.operation_parameters
        )
        # OPTIMIZE without ZORDER cannot conflict on tables with deletion vectors (reference page).
        if dv and OPTIMIZE in (txn_op, winner_op):
            zorder = uses_zorder(txn.operation_parameters) or uses_zorder(
                winner.operation_parameters
            )
            if not zorder:
                return NO_CONFLICT
        same_row = rlc and txn_op == UDM and winner_op == UDM

    # 1. Files the winner added that the txn should have read. A commit of only dataChange=false
    # actions (OPTIMIZE) runs under SnapshotIsolation in Delta, which skips this check.
    append_ser = append_ws = False
    exempt = False
    if (
        txn.data_change
        and txn.isolation_level != SNAPSHOT_ISOLATION
        and winner.files_added
        and scope.overlaps(winner.added_partitions)
    ):
        append_ser = True
        # WriteSerializable ignores blind appends, unless the txn itself changes metadata.
        exempt = is_blind(winner) and not txn.metadata_changed
        append_ws = not exempt

    # 2. Files the winner removed that the txn read; 3. files both removed.
    delete_read, read_certain = _delete_read(txn, winner, scope)
    delete_delete = bool(txn.removed_paths_all and winner.removed_paths_all & txn.removed_paths_all)

    def first(append: bool) -> tuple[str | None, str | None, bool]:
        if append:
            return CONCURRENT_APPEND, "append", True
        if delete_read:
            return CONCURRENT_DELETE_READ, "delete_read", read_certain
        if delete_delete:
            return CONCURRENT_DELETE_DELETE, "delete_delete", True
        return None, None, True

    ser, rule_ser, certain_ser = first(append_ser)
    ws, rule_ws, certain_ws = first(append_ws)
    if ser is None and ws is None:
        return NO_CONFLICT
    rule = rule_ws or rule_ser
    certain = certain_ws if ws is not None else certain_ser
    return Recheck(ser, ws, rule, certain, same_row, exempt and ser is not None and ws != ser)


def _delete_read(txn: CommitSummary, winner: CommitSummary, scope: ReadScope) -> tuple[bool, bool]:
    """(conflict, certain): did the winner remove a file the txn read?"""
    removed = winner.removed_paths_all
    if not removed or _is_compaction(txn):
        # Compaction does not register the files it rewrites as read: two compactions of the
        # same files fail with ConcurrentDeleteDeleteException (reference page).
        return False, True
    if txn.removed_paths_all and removed & txn.removed_paths_all:
        return True, True  # the txn removed it, so it read it
    if scope.kind == "table":
        # Delta fails when the txn read the whole table; with a predicate it read only the
        # files that survived data skipping, which the log does not show.
        return True, scope.predicate is None
    compacted = winner.compacted_removed_partitions
    if len(removed) > winner.files_removed and not compacted:
        # Removes without dataChange whose partitions the summary does not know (a summary
        # stored before it kept them): they may have been files the txn read.
        return True, False
    return scope.overlaps(winner.removed_partitions) or scope.overlaps(compacted), True


# --------------------------------------------------------------------------- concurrency


def read_version_of(txn: CommitSummary, derived: dict[int, int]) -> tuple[int | None, str]:
    if txn.read_version is not None:
        return txn.read_version, "recorded"
    if txn.version in derived:
        return derived[txn.version], "derived"
    return None, "unknown"


def concurrent_window(
    txn: CommitSummary, read_version: int | None, first: int
) -> tuple[range, bool]:
    """Versions strictly between read_version and version, clipped to what the log still has."""
    if read_version is None or read_version >= txn.version - 1 or read_version < -1:
        return range(0), False
    start = max(read_version + 1, first)
    truncated = txn.version - start > MAX_CONCURRENT_WINDOW
    if truncated:
        start = txn.version - MAX_CONCURRENT_WINDOW
    return range(start, txn.version), truncated


def concurrent_pairs(
    history: History, ctx: TableContext | None = None, derived: dict[int, int] | None = None
) -> Iterator[tuple[CommitSummary, CommitSummary, Recheck]]:
    """Every (txn, winner, verdicts) pair of the history, txn in version order."""
    ctx = ctx or TableContext(history)
    derived = derived or {}
    first = history.summaries[0].version if history.summaries else 0
    for txn in history.summaries:
        read_version, _ = read_version_of(txn, derived)
        window, _ = concurrent_window(txn, read_version, first)
        if not window:
            continue
        scope = read_scope(txn, ctx, read_version)
        rlc, dv = (
            ctx.row_level_concurrency(txn, read_version),
            ctx.deletion_vectors_at(read_version),
        )
        for w in window:
            winner = ctx.summary(w)
            if winner is not None:
                yield (
                    txn,
                    winner,
                    recheck(
                        txn,
                        winner,
                        scope,
                        ctx,
                        row_level_concurrency=rlc,
                        deletion_vectors=dv,
                    ),
                )


# --------------------------------------------------------------------------- the audit


def audit_history(
    history: History, *, check_data: bool = True, versions: tuple[int, int] | None = None
) -> AuditResult:
    """Audit a history. `versions=(lo, hi)` keeps only commits whose (read, commit] interval
    overlaps [lo, hi] (the incremental re-audit of a window)."""
    # The audit builds per-commit results for the whole history: see `paused_gc`.
    with paused_gc():
        return _audit_history(history, check_data, versions)


def _audit_history(
    history: History, check_data: bool, versions: tuple[int, int] | None
) -> AuditResult:
    ctx = TableContext(history)
    stale = find_stale_snapshots(history, ctx, versions)
    derived = {c.txn.version: c.read_version for c in stale if c.read_version is not None}
    auditor = _Auditor(history, ctx, derived, versions)
    auditor.run()
    findings = auditor.findings
    findings += never_existed_findings(
        history, ctx, stale + auditor.overlap_candidates, check_data=check_data
    )
    _upgrade_reorders(findings)
    _attach_cycles(findings, ctx, auditor.commits)
    findings += _table_findings(history, ctx, auditor)
    if versions is None:
        # Log integrity replays every available commit's files: whole-table work, done by the
        # full audits only (the kinds are table-level, so windowed audits leave them alone).
        findings += integrity_findings(history)
        findings += retry_storm_findings(history, auditor.commits)
    findings.sort(key=lambda f: (f.version, f.kind, f.related_versions))
    hotspots = sorted(auditor.hotspots.values(), key=lambda h: (h.partition, h.operations))
    return AuditResult(findings=findings, commits=auditor.commits, hotspots=hotspots)


def _in_window(
    txn: CommitSummary, read_version: int | None, versions: tuple[int, int] | None
) -> bool:
    if versions is None:
        return True
    lo, hi = versions
    start = read_version + 1 if read_version is not None else txn.version
    return txn.version >= lo and start <= hi


class _Auditor:
    def __init__(
        self,
        history: History,
        ctx: TableContext,
        derived: dict[int, int],
        versions: tuple[int, int] | None,
    ):
        self.history = history
        self.ctx = ctx
        self.derived = derived
        self.versions = versions
        self.commits: dict[int, CommitAudit] = {}
        self.findings: list[Finding] = []
        self.hotspots: dict[tuple[str, tuple[str, str]], Hotspot] = {}
        self.overlap_candidates: list[Any] = []
        self.metadata_survivors: dict[int, list[CommitSummary]] = defaultdict(list)
        self.concurrent_commits: list[int] = []
        self.first = history.summaries[0].version if history.summaries else 0

    def run(self) -> None:
        for txn in self.history.summaries:
            read_version, fact = read_version_of(txn, self.derived)
            if not _in_window(txn, read_version, self.versions):
                continue
            window, truncated = concurrent_window(txn, read_version, self.first)
            scope = read_scope(txn, self.ctx, read_version) if window else _cheap_scope(txn)
            audit = CommitAudit(
                txn.version, read_version, fact, txn.isolation_level, window, scope, truncated
            )
            self.commits[txn.version] = audit
            if not window:
                continue
            self.concurrent_commits.append(txn.version)
            self._check_window(txn, audit)
            if (
                is_destructive(txn) and fact != "derived"
            ):  # derived ones come from find_stale_snapshots
                candidate = overlap_candidate(txn, audit, self.ctx)
                if candidate is not None:
                    self.overlap_candidates.append(candidate)
        for winner_version, txns in sorted(self.metadata_survivors.items()):
            self.findings.append(_metadata_finding(self.ctx.summary(winner_version), txns))

    def _check_window(self, txn: CommitSummary, audit: CommitAudit) -> None:
        read_version = audit.read_version if audit.read_version is not None else txn.version - 1
        rlc = self.ctx.row_level_concurrency(txn, read_version)
        dv = self.ctx.deletion_vectors_at(read_version)
        reorders: list[int] = []
        exceptions: dict[int, str] = {}
        missed: list[int] = []
        for w in self._winners_to_check(audit):
            winner = self.ctx.summary(w)
            if winner is None:
                continue
            verdict = recheck(
                txn,
                winner,
                audit.read_scope,
                self.ctx,
                row_level_concurrency=rlc,
                deletion_vectors=dv,
            )
            if verdict.any:
                audit.conflicts[w] = verdict
            self._tally(txn, winner, audit.read_scope, verdict)
            if verdict.rule in ("protocol", "metadata"):
                self.metadata_survivors[w].append(txn)
                continue
            level = txn.isolation_level
            if (
                level == WRITE_SERIALIZABLE
                and verdict.blind_append_exempt
                and verdict.write_serializable is None
            ):
                reorders.append(w)
                exceptions[w] = verdict.serializable or CONCURRENT_APPEND
            elif verdict.at(level) and verdict.certain and not verdict.same_row_only:
                missed.append(w)
        if reorders:
            self.findings.append(_reorder_finding(txn, audit, reorders, exceptions))
        if missed:
            self.findings.append(_missed_conflict_finding(txn, audit, missed))

    def _winners_to_check(self, audit: CommitAudit) -> Iterable[int]:
        """A commit that read nothing can only conflict with protocol, metadata, domain and
        app-transaction changes: visit just those (keeps 70%-append histories cheap)."""
        window = audit.concurrent_versions
        if audit.read_scope.kind != "none":
            return window
        specials = self.ctx.special_versions
        lo = bisect.bisect_left(specials, window.start)
        hi = bisect.bisect_left(specials, window.stop)
        return specials[lo:hi]

    def _tally(
        self, txn: CommitSummary, winner: CommitSummary, scope: ReadScope, verdict: Recheck
    ) -> None:
        # Only pairs whose later commit read the table count: an append overlapping anything
        # cannot conflict, and counting it would dilute the conflict rate.
        if scope.kind == "none" or not (txn.data_change and winner.data_change):
            return
        touched = winner.partitions_touched
        if scope.kind == "table" or not self.ctx.partition_columns_at(txn.version - 1):
            shared = [()] if touched else []
        else:
            shared = [k for k in touched if scope.contains(k) or k in txn.partitions_touched]
        if not shared:
            return
        ops = tuple(sorted((txn.operation or "UNKNOWN", winner.operation or "UNKNOWN")))
        day = _day(txn.timestamp)
        for key in sorted(shared, key=_key_sort)[:MAX_HOTSPOT_PARTITIONS_PER_PAIR]:
            label = render_partition(key) if key else "whole table"
            spot = self.hotspots.get((label, ops))
            if spot is None:
                spot = self.hotspots[(label, ops)] = Hotspot(label, ops)
            spot.pairs += 1
            for level in LEVELS:
                exc = verdict.at(level)
                if exc:
                    spot.conflicts[level] += 1
                    spot.exceptions[exc] += 1
            if spot.first_version is None:
                spot.first_version, spot.first_winner = txn.version, winner.version
            spot.last_version = txn.version
            spot.per_day[day] += 1


def _cheap_scope(txn: CommitSummary) -> ReadScope:
    # Commits with no concurrent window are never re-checked; keep their scope description cheap.
    return (
        SCOPE_NONE
        if is_blind(txn)
        else ReadScope(
            "table", txn.predicate.raw if txn.predicate else None, reason="not re-checked"
        )
    )


def _day(timestamp: int | None) -> str:
    if timestamp is None:
        return "unknown"
    try:
        return dt.datetime.fromtimestamp(timestamp / 1000, tz=dt.UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return "unknown"


# --------------------------------------------------------------------------- findings


def _op(summary: CommitSummary | None) -> str:
    return (summary.operation if summary is not None else None) or "an unnamed operation"


def _reorder_finding(
    txn: CommitSummary, audit: CommitAudit, winners: list[int], exceptions: dict[int, str]
) -> Finding:
    names = sorted(set(exceptions.values()))
    listed = ", ".join(str(w) for w in winners)
    fact = (
        ""
        if audit.read_version_fact == "recorded"
        else f" (read version {audit.read_version_fact})"
    )
    return Finding(
        kind="write_serializable_reorder",
        severity=sev.reorder_severity(False),
        version=txn.version,
        related_versions=list(winners),
        confirmed=True,
        summary=(
            f"{_op(txn)} at v{txn.version} is serialized before blind append(s) v{listed} "
            f"that the history shows before it; Serializable would have raised {', '.join(names)}"
        ),
        explanation=(
            f"Version {txn.version} ({_op(txn)}) read version {audit.read_version}{fact} and ran under "
            f"WriteSerializable. While it ran, version(s) {listed} appended files into what it read "
            f"({audit.read_scope.describe()}) without reading the table (blind appends). "
            f"WriteSerializable lets a commit ignore blind appends, so it committed; under Serializable "
            f"it would have failed with {', '.join(names)}. The table therefore behaves as if "
            f"v{txn.version} ran before v{listed}, although the history shows it after them: rows those "
            "appends wrote were not seen by it (not deleted, not updated, not matched). "
            "Set delta.isolationLevel = 'Serializable' to make such commits fail instead."
        ),
        details={
            "exceptions": {str(w): exceptions[w] for w in winners},
            "read_scope": audit.read_scope.as_dict(),
        },
    )


def _missed_conflict_finding(txn: CommitSummary, audit: CommitAudit, winners: list[int]) -> Finding:
    verdicts = {str(w): audit.conflicts[w].at(txn.isolation_level) for w in winners}
    names = sorted({v for v in verdicts.values() if v})
    listed = ", ".join(str(w) for w in winners)
    return Finding(
        kind="missed_conflict",
        severity=sev.missed_conflict_severity(),
        version=txn.version,
        related_versions=list(winners),
        confirmed=audit.read_version_fact == "recorded",
        summary=(
            f"{_op(txn)} at v{txn.version} committed although {txn.isolation_level} should have "
            f"raised {', '.join(names)} against v{listed}"
        ),
        explanation=(
            f"Version {txn.version} ({_op(txn)}, engine {txn.engine}) read version {audit.read_version} "
            f"({audit.read_version_fact}) and ran under {txn.isolation_level} "
            f"({txn.facts.get('isolation_level', 'unknown')}). Delta's conflict rules say it should have "
            f"failed with {', '.join(names)} because of version(s) {listed}, which changed what it read "
            f"({audit.read_scope.describe()}). Its writer let it commit anyway, so the table may not "
            "match any serial order of its history."
        ),
        details={"exceptions": verdicts, "isolation_level": txn.isolation_level},
    )


def _metadata_finding(winner: CommitSummary | None, txns: list[CommitSummary]) -> Finding:
    version = winner.version if winner is not None else txns[0].version
    kind_of_change = "protocol" if winner is not None and winner.protocol_changed else "metadata"
    data_changing = any(t.data_change for t in txns)
    listed = ", ".join(str(t.version) for t in txns)
    return Finding(
        kind="concurrent_metadata_change",
        severity=sev.metadata_change_severity(data_changing),
        version=version,
        related_versions=sorted(t.version for t in txns),
        confirmed=all(t.facts.get("read_version") == "recorded" for t in txns),
        summary=(
            f"{_op(winner)} at v{version} changed the table {kind_of_change} while v{listed} were in "
            "flight, and they committed anyway"
        ),
        explanation=(
            f"Version {version} ({_op(winner)}) changed the table {kind_of_change}. Delta fails every "
            f"transaction that was running at that moment ({'ProtocolChangedException' if kind_of_change == 'protocol' else 'MetadataChangedException'}). "
            f"Version(s) {listed} had read an earlier version and still committed after it, so they "
            "were written against the old schema, properties or protocol."
        ),
        details={"change": kind_of_change, "data_changing": data_changing},
    )


def _upgrade_reorders(findings: list[Finding]) -> None:
    """A reorder whose never-existed snapshot was confirmed in the data becomes critical."""
    confirmed = {f.version for f in findings if f.kind == "never_existed_snapshot" and f.confirmed}
    for f in findings:
        if f.kind == "write_serializable_reorder" and f.version in confirmed:
            f.severity = sev.reorder_severity(True)


def _attach_cycles(
    findings: list[Finding], ctx: TableContext, commits: dict[int, CommitAudit]
) -> None:
    """Give every anomaly finding its dependency cycle (witness.cycle, anomaly class, levels)."""
    for f in findings:
        if f.kind not in CYCLE_KINDS:
            continue
        txn, audit = ctx.summary(f.version), commits.get(f.version)
        if txn is None or audit is None:
            continue
        winners = [w for v in f.related_versions if (w := ctx.summary(v)) is not None]
        cycle = stale_commit_cycle(
            txn, audit.read_version, audit.read_version_fact, audit.read_scope, winners
        )
        if cycle is not None:
            f.witness = {**(f.witness or {}), **witness_fields(cycle)}


def _table_findings(history: History, ctx: TableContext, auditor: _Auditor) -> list[Finding]:
    findings = list(_isolation_setting_findings(history, ctx, auditor))
    identity = _identity_finding(history, auditor)
    if identity is not None:
        findings.append(identity)
    missing = _missing_read_version_finding(history, auditor)
    if missing is not None:
        findings.append(missing)
    findings += _hotspot_findings(auditor.hotspots)
    # Catalog-managed tables: say how far the published log reaches (lists staged commits).
    if catalog_feature(history.state.protocol) is not None:
        findings += catalog_findings(
            history.get_log().store, history.state.protocol, history.latest_version
        )
    return findings


_DELTA_RS_LEVELS = frozenset({"serializable", "writeSerializable", "snapshotIsolation"})
_SPARK_LEVELS = frozenset({"serializable", "writeserializable", "snapshotisolation"})


def setting_understood(engine: str, value: str) -> bool:
    """Does this engine parse this `delta.isolationLevel` value? (delta-rs: camelCase only.)"""
    if engine == "delta-rs":
        return value in _DELTA_RS_LEVELS
    if engine in ("spark", "databricks"):
        return value.strip().lower() in _SPARK_LEVELS
    return True


def _isolation_setting_findings(
    history: History, ctx: TableContext, auditor: _Auditor
) -> Iterator[Finding]:
    seen: dict[tuple[str, str], list[int]] = {}
    for version in auditor.commits:
        txn = ctx.summary(version)
        if txn is None or not txn.data_change:
            continue
        value = ctx.properties_at(version - 1 if version > 0 else 0).get("delta.isolationLevel")
        if value is None or setting_understood(txn.engine, str(value)):
            continue
        seen.setdefault((txn.engine, str(value)), []).append(version)
    for (engine, value), versions in sorted(seen.items(), key=lambda kv: kv[1][0]):
        used = SERIALIZABLE if engine == "delta-rs" else "its default level"
        yield Finding(
            kind="isolation_setting_ignored",
            severity=sev.isolation_setting_ignored_severity(),
            version=versions[0],
            related_versions=[],
            confirmed=True,
            summary=f"{engine} writers do not understand delta.isolationLevel = {value[:60]!r} and use {used}",
            explanation=(
                f"The table property delta.isolationLevel is {value[:200]!r}. {engine} does not parse "
                f"this spelling and silently uses {used} instead"
                + (
                    " (delta-rs accepts only 'serializable', 'writeSerializable' and 'snapshotIsolation')."
                    if engine == "delta-rs"
                    else "."
                )
                + f" {len(versions)} data-changing commit(s) from v{versions[0]} to v{versions[-1]} were written this way."
            ),
            details={
                "engine": engine,
                "value": value,
                "commits": len(versions),
                "last_version": versions[-1],
            },
        )


def _identity_finding(history: History, auditor: _Auditor) -> Finding | None:
    columns = [c.name for c in history.state.identity_columns]
    if not columns or not auditor.concurrent_commits:
        return None
    concurrent = [
        v
        for v in auditor.concurrent_commits
        if (s := auditor.ctx.summary(v)) is not None and s.data_change
    ]
    if not concurrent:
        return None
    return Finding(
        kind="identity_column_concurrency",
        severity=sev.identity_concurrency_severity(),
        version=concurrent[0],
        related_versions=[],
        confirmed=True,
        summary=f"identity column(s) {', '.join(columns)} on a table with {len(concurrent)} concurrent commit(s)",
        explanation=(
            "Tables with identity columns do not support concurrent transactions. "
            f"{len(concurrent)} data-changing commit(s) (first v{concurrent[0]}, last v{concurrent[-1]}) "
            "committed while others were in flight; serialize the writers of this table."
        ),
        details={
            "identity_columns": columns,
            "commits": len(concurrent),
            "last_version": concurrent[-1],
        },
    )


def _missing_read_version_finding(history: History, auditor: _Auditor) -> Finding | None:
    unknown = [
        v
        for v, a in auditor.commits.items()
        if a.read_version_fact == "unknown"
        and v > 0  # version 0 creates the table: there was nothing to read
        and (s := auditor.ctx.summary(v)) is not None
        and s.data_change
        and not is_blind(s)
    ]
    derived = sorted(v for v, a in auditor.commits.items() if a.read_version_fact == "derived")
    if not unknown and not derived:
        return None
    first = min(unknown + derived)
    return Finding(
        kind="missing_read_version",
        severity=sev.derived_fact_severity(),
        version=first,
        related_versions=[],
        confirmed=True,
        summary=(
            f"{len(unknown) + len(derived)} non-append commit(s) recorded no readVersion; "
            f"{len(derived)} derived from the data, {len(unknown)} left unknown"
        ),
        explanation=(
            "Without readVersion the audit cannot tell which commits ran concurrently with a commit "
            "that read the table. For stale overwrites and deletes it derives the read version from the "
            "files they left alive (marked 'derived'); other commits are not re-checked."
        ),
        details={"unknown": len(unknown), "derived": derived[:100]},
    )


def _hotspot_findings(hotspots: dict[tuple[str, tuple[str, str]], Hotspot]) -> list[Finding]:
    findings = []
    for spot in sorted(hotspots.values(), key=lambda h: (h.partition, h.operations)):
        if not sev.hotspot_is_reported(spot.pairs):
            continue
        ser = spot.conflicts[SERIALIZABLE]
        ws = spot.conflicts[WRITE_SERIALIZABLE]
        likely = (
            ", ".join(f"{name} ({count})" for name, count in sorted(spot.exceptions.items()))
            or "none"
        )
        findings.append(
            Finding(
                kind="conflict_hotspot",
                severity=sev.hotspot_severity(spot.pairs, ser),
                version=spot.first_version or 0,
                related_versions=[spot.first_winner] if spot.first_winner is not None else [],
                confirmed=True,
                summary=(
                    f"{spot.pairs} concurrent {' / '.join(spot.operations)} pairs overlapped in "
                    f"{spot.partition}; {ser} would conflict under Serializable, {ws} under WriteSerializable"
                ),
                explanation=(
                    f"Between v{spot.first_version} and v{spot.last_version}, {spot.pairs} pairs of "
                    f"{' and '.join(spot.operations)} commits ran at the same time on {spot.partition}. "
                    f"Re-running Delta's conflict checks: {ser} would fail under Serializable and {ws} under "
                    f"WriteSerializable. Exceptions writers are likely to see: {likely}. Make the commands' "
                    "conditions name disjoint partitions, or partition by the columns they filter on."
                ),
                details=spot.as_dict(),
            )
        )
    return findings


# --------------------------------------------------------------------------- never-existed snapshots


@dataclass(slots=True)
class StaleCandidate:
    """A destructive commit that left alive files it should have deleted or rewritten.

    `files` maps the version that added each surviving file to its paths; a compaction's
    (OPTIMIZE's) outputs count like data files, since they hold the rows of the files it
    compacted. `proven_by_log` is True when the log alone proves the anomaly (an unconditional
    delete / full overwrite left earlier files alive); otherwise rows matching the predicate
    must be found in the data.
    """

    txn: CommitSummary
    read_version: int | None
    read_version_fact: str
    files: dict[int, list[str]]
    source: Literal["concurrent", "survivors"]
    proven_by_log: bool
    scope: ReadScope


def overlap_candidate(
    txn: CommitSummary, audit: CommitAudit, ctx: TableContext
) -> StaleCandidate | None:
    """Files that concurrent commits added into `txn`'s read scope and that are alive after it.

    A concurrent compaction counts too: its outputs hold rows `txn` read (in the files it
    compacted), so if they survive `txn`, so do those rows.
    """
    scope = audit.read_scope
    files: dict[int, list[str]] = {}
    removed_later: set[str] = set(txn.removed_paths_all)
    for w in reversed(audit.concurrent_versions):
        winner = ctx.summary(w)
        if winner is None:
            continue
        added: list[str] = []
        if winner.added_paths and scope.overlaps(winner.added_partitions):
            added += winner.added_paths
        if winner.compacted_paths and _compaction_in_scope(scope, winner):
            added += winner.compacted_paths
        alive = sorted(p for p in added if p not in removed_later)
        if alive:
            files[w] = alive
        removed_later |= winner.removed_paths_all
    if not files:
        return None
    return StaleCandidate(
        txn,
        audit.read_version,
        audit.read_version_fact,
        dict(sorted(files.items())),
        "concurrent",
        is_unconditional(txn),
        scope,
    )


def find_stale_snapshots(
    history: History, ctx: TableContext, versions: tuple[int, int] | None = None
) -> list[StaleCandidate]:
    """Destructive commits without readVersion that left earlier files alive.

    A full overwrite or an unconditional delete removes every live file; if a file added by an
    earlier commit is still live right after it, the commit worked from a stale snapshot taken
    before that file was added. Its read version is derived as just before the earliest
    surviving file's commit.
    """
    targets = [
        s
        for s in history.summaries
        if s.read_version is None and s.data_change and is_destructive(s)
    ]
    if not targets:
        return []
    target_versions = {s.version for s in targets}
    last = max(target_versions)
    live: dict[str, int] = {}
    found: list[StaleCandidate] = []
    for s in history.summaries:
        if s.version > last:
            break
        if s.version in target_versions and (versions is None or s.version >= versions[0]):
            candidate = _survivor_candidate(s, live, ctx)
            if candidate is not None and (versions is None or candidate.read_version < versions[1]):
                found.append(candidate)
        for path in s.removed_paths_all:
            live.pop(path, None)
        for path in s.added_paths:
            live[path] = s.version
        for path in s.compacted_paths:  # OPTIMIZE outputs: earlier rows, in new files
            live[path] = s.version
    return found


def _survivor_candidate(
    txn: CommitSummary, live: dict[str, int], ctx: TableContext
) -> StaleCandidate | None:
    unconditional = is_unconditional(txn)
    scope = read_scope(txn, ctx, txn.version - 1)
    files: dict[int, list[str]] = defaultdict(list)
    for path, added_at in live.items():
        if path in txn.removed_paths_all or path in txn.added_paths:
            continue
        if not unconditional and not _added_into_scope(scope, ctx.summary(added_at), path):
            continue
        files[added_at].append(path)
    if not files:
        return None
    read_version = min(files) - 1
    return StaleCandidate(
        txn,
        read_version,
        "derived",
        {v: sorted(p) for v, p in sorted(files.items())},
        "survivors",
        unconditional,
        scope,
    )


def _added_into_scope(scope: ReadScope, adder: CommitSummary | None, path: str) -> bool:
    """May the file `adder` added at `path` hold rows in `scope`'s partitions?"""
    if adder is None:
        return False
    if path in adder.compacted_paths:
        return _compaction_in_scope(scope, adder)
    return scope.overlaps(adder.added_partitions)


def _compaction_in_scope(scope: ReadScope, compaction: CommitSummary) -> bool:
    """Compaction rewrites files within their partitions, so its outputs lie in the partitions
    of the files it removed; a summary that does not say which (none removed) may overlap."""
    partitions = compaction.compacted_removed_partitions
    if not partitions:
        return scope.kind != "none"
    return scope.overlaps(partitions)


def never_existed_findings(
    history: History, ctx: TableContext, candidates: list[StaleCandidate], *, check_data: bool
) -> list[Finding]:
    from audit.core import witness  # noqa: PLC0415  (pyarrow dataset only when needed)

    findings = []
    for candidate in sorted(candidates, key=lambda c: c.txn.version):
        outcome = witness.confirm_candidate(history, ctx, candidate, check_data=check_data)
        if outcome.status == "no_rows":
            continue  # the predicate matches none of the surviving rows: nothing never-existed
        if (
            not outcome.confirmed
            and not candidate.proven_by_log
            and candidate.source == "survivors"
        ):
            continue  # a predicated stale commit is only reported when rows prove it
        findings.append(_never_existed_finding(candidate, outcome))
    return findings


def _never_existed_finding(candidate: StaleCandidate, outcome: Any) -> Finding:
    txn = candidate.txn
    related = sorted(candidate.files)
    listed = ", ".join(str(v) for v in related)
    op = _op(txn)
    verb = {
        "DELETE": "should have deleted",
        "UPDATE": "should have updated",
        "MERGE": "should have matched",
    }.get((txn.operation or "").upper(), "should have replaced")
    predicate = txn.predicate.raw if txn.predicate is not None else None
    condition = f"matching {predicate!r}" if predicate else "(it had no condition, so every row)"
    rows = (
        f"{outcome.witness['row_count']} such row(s) were found in {len(outcome.witness['files'])} file(s)."
        if outcome.confirmed
        else f"Rows were not confirmed in the data: {outcome.note}"
    )
    how = (
        f"it read version {candidate.read_version} ({candidate.read_version_fact})"
        if candidate.read_version is not None
        else "its read version is unknown"
    )
    return Finding(
        kind="never_existed_snapshot",
        severity=sev.never_existed_severity(outcome.confirmed),
        version=txn.version,
        related_versions=related,
        confirmed=outcome.confirmed,
        summary=(
            f"v{txn.version} ({op}) left alive rows {condition} that v{listed} added; "
            f"by the history's order it {verb} them"
        ),
        explanation=(
            f"Version {txn.version} ({op}) committed after version(s) {listed}, so by the history it "
            f"{verb} the rows they added {condition}. But {how}, before those versions, and their "
            f"files are still live right after v{txn.version}: the table at v{txn.version} holds rows "
            f"that no serial execution of the history produces. {rows}"
        ),
        witness=outcome.witness,
        details={
            "source": candidate.source,
            "read_version": candidate.read_version,
            "read_version_fact": candidate.read_version_fact,
            "surviving_files": sum(len(p) for p in candidate.files.values()),
            "method_note": outcome.note,
        },
    )
