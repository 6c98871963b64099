"""The fixes for a conflict exception: specific to the table and the conflicting commit when
they are known, the reference page's generic advice otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from audit.core.explain.locate import CommitView, TableFacts
from audit.core.explain.parse import ParsedException
from audit.core.explain.untrusted import clip, unique
from audit.core.operations import uses_zorder
from audit.core.vocab import ConflictException, Engine, IsolationLevel, Operation, OperationClass

FixBuilder = Callable[[ParsedException, CommitView | None, TableFacts | None], list[str]]


def fixes_for(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    """Specific fixes for this exception on this table (generic ones when no table is given)."""
    fixes = _BUILDERS[parsed.exception](parsed, view, facts)
    if facts is not None and facts.identity_columns:
        fixes.insert(
            0,
            f"This table has identity columns ({', '.join(facts.identity_columns)}): tables with "
            "identity columns do not support concurrent transactions, so run its writers one "
            "at a time.",
        )
    return unique(fixes)


def _fixes_append(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes: list[str] = []
    columns = (
        facts.partition_columns if facts else sorted({k for p in parsed.partitions for k in p})
    )
    values = parsed.partitions[0] if parsed.partitions else {}
    partitioned = _partitioned(parsed, facts)
    if columns:
        fixes.append(
            "Make the separation explicit: put literal predicates on the partition columns into "
            "the operation's condition, so it reads only its own partition and not the ones "
            f"concurrent jobs write, e.g. MERGE INTO target t USING source s ON s.id = t.id AND "
            f"{_partition_example(columns, values)}."
        )
    if partitioned is not True:
        fixes.append(
            "Partition the table by the columns your UPDATE/DELETE/MERGE conditions filter on "
            "(a low-cardinality column such as a date), so concurrent operations touch disjoint "
            "files; avoid high-cardinality partition columns."
        )
    fixes.extend(_row_level_fixes(facts, partitioned))
    fixes.extend(_isolation_fixes(parsed, view, facts))
    fixes.append(
        "If the failing statement is an INSERT whose subquery or condition reads this table, it "
        "is not a blind append (footnote (1)) and conflicts like a MERGE; rewrite it as a plain "
        "append where you can."
    )
    fixes.append(_RETRY)
    return fixes


def _partitioned(parsed: ParsedException, facts: TableFacts | None) -> bool | None:
    """Whether the table is partitioned: from the table, else from the exception's hints."""
    if facts is not None:
        return bool(facts.partition_columns)
    if parsed.partitions:
        return True
    return None


def _row_level_fixes(facts: TableFacts | None, partitioned: bool | None) -> list[str]:
    enable = (
        "enable deletion vectors (ALTER TABLE <table> SET TBLPROPERTIES "
        "('delta.enableDeletionVectors' = true)) or liquid clustering: on Databricks Runtime "
        "14.2+ that gives row-level concurrency, where only changes to the same rows conflict"
    )
    if facts is None:
        if partitioned:
            return []
        return (
            [f"If the table is unpartitioned, {enable}."]
            if partitioned is None
            else [f"The table looks unpartitioned: {enable}."]
        )
    if facts.row_level_concurrency:
        return [
            "Row-level concurrency already applies to this table on Databricks Runtime 14.2+ "
            "(deletion vectors, no partitions or liquid clustering): the operations touched the "
            "same rows, or a condition fell under its limitations (complex types, "
            "non-deterministic expressions, subqueries; in 14.2 MERGE needs an explicit "
            "predicate on the target)."
        ]
    if not facts.partition_columns:
        return [f"This table is unpartitioned and has no row-level concurrency: {enable}."]
    if facts.deletion_vectors:
        return [
            "Partitioned tables get no row-level concurrency, even with deletion vectors; "
            "liquid clustering instead of partitioning would give it (Databricks Runtime 14.2+)."
        ]
    return []


def _isolation_fixes(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes: list[str] = []
    blind = view is not None and view.blind_append is True and view.kind == OperationClass.INSERT
    level = facts.isolation_level if facts else None
    if blind and level != IsolationLevel.WRITE_SERIALIZABLE:
        fixes.append(
            f"The conflicting commit{_at(view)} was a blind append, which conflicts only under "
            "Serializable. WriteSerializable (the Databricks default) exempts blind appends: "
            "ALTER TABLE <table> SET TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable'). "
            "The price: readers may see a table state that never existed in the history's order."
        )
    if blind and level == IsolationLevel.WRITE_SERIALIZABLE:
        fixes.append(
            f"The conflicting commit{_at(view)} was a blind append, which WriteSerializable "
            "exempts: the failing writer enforced Serializable. Check its engine and the "
            "table's delta.isolationLevel value."
        )
    if (
        facts
        and parsed.engine == Engine.DELTA_RS
        and facts.isolation_property == IsolationLevel.WRITE_SERIALIZABLE
    ):
        fixes.append(
            "delta-rs reads the property value 'WriteSerializable' as Serializable (it expects "
            "'writeSerializable'), so this writer checks blind appends too."
        )
    if (
        view is not None
        and view.blind_append is False
        and view.kind == OperationClass.UDM
        and _op(view) == Operation.WRITE
    ):
        fixes.append(
            f"The conflicting WRITE{_at(view)} read the table before appending (isBlindAppend "
            "false), so it counts as a MERGE for conflicts (footnote (1))."
        )
    return fixes


def _fixes_delete_read(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = _compaction_fixes(view, facts)
    values = parsed.partitions[0] if parsed.partitions else {}
    if view is None or view.kind != OperationClass.OPTIMIZE:
        fixes.append(
            f"The commit{_at(view)} rewrote or removed files your transaction had read. Add "
            "partition predicates to both operations' conditions (partition pruning) so each "
            "reads only the partitions it changes"
            + (
                f", e.g. WHERE {_partition_example(facts.partition_columns, values)}."
                if facts and facts.partition_columns
                else "; partition the table by those condition columns if it is not."
            )
        )
    fixes.extend(_row_level_fixes(facts, _partitioned(parsed, facts)))
    fixes.append(_RETRY)
    return fixes


def _fixes_delete_delete(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = [
        "Do not run two compactions (OPTIMIZE, REORG, auto compaction) on the same partitions at "
        "the same time: run one scheduled compaction job per table."
    ]
    fixes.extend(_compaction_fixes(view, facts))
    fixes.append(
        "If both were DELETE/UPDATE/MERGE, give them disjoint partition predicates so they never "
        "remove the same file."
    )
    fixes.append(_RETRY)
    return fixes


def _compaction_fixes(view: CommitView | None, facts: TableFacts | None) -> list[str]:
    if view is None or view.kind != OperationClass.OPTIMIZE:
        if view is None:
            return [
                "If the concurrent commit was OPTIMIZE or REORG, schedule compaction outside write "
                "windows or restrict it to partitions no writer is changing "
                "(OPTIMIZE <table> WHERE <partition predicate>)."
            ]
        return []
    fixes = [
        f"The conflicting commit{_at(view)} was a compaction ({clip(view.operation or '', 40)}). "
        "Schedule compaction outside write windows, or restrict it to partitions no writer is "
        "changing (OPTIMIZE <table> WHERE <partition predicate>)."
    ]
    auto = view.operation_parameters.get("auto")
    if auto is True or str(auto).lower() == "true":
        fixes.append(
            "It was auto compaction (delta.autoOptimize.autoCompact): disable it on this table "
            "or for the busy writer, and run a scheduled OPTIMIZE instead."
        )
    if uses_zorder(view.operation_parameters):
        fixes.append(
            "It used ZORDER BY, which can conflict even with deletion vectors: run Z-ordering "
            "only when no UPDATE/DELETE/MERGE runs."
        )
    elif facts is None or not facts.deletion_vectors:
        fixes.append(
            "Enable deletion vectors (ALTER TABLE <table> SET TBLPROPERTIES "
            "('delta.enableDeletionVectors' = true)): then OPTIMIZE without ZORDER BY does not "
            "conflict with UPDATE/DELETE/MERGE."
        )
    return fixes


def _fixes_metadata(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = []
    if view is not None and view.operation:
        fixes.append(
            f"The metadata change was {clip(view.operation, 80)}{_at(view)}: run such DDL "
            "(ALTER TABLE, SET TBLPROPERTIES) in a maintenance window with writers paused, not "
            "while they run."
        )
    else:
        fixes.append(
            "Do not run ALTER TABLE or table property changes while writers run; do DDL in a "
            "maintenance window with writers paused."
        )
    fixes.append(
        "Schema evolution changes metadata too: evolve the schema once (ALTER TABLE ADD COLUMNS) "
        "before starting concurrent writers instead of writing with mergeSchema/autoMerge on "
        "every batch."
    )
    fixes.append("Streaming reads of this table stop on a metadata change; restart them.")
    fixes.append(_RETRY)
    return fixes


def _fixes_protocol(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = []
    creating = parsed.detail and "empty path" in parsed.detail
    operation = _op(view)
    if creating or "CREATE" in operation or "REPLACE" in operation:
        fixes.append(
            "Create the table once, in a setup step, before starting concurrent writers (CREATE "
            "TABLE IF NOT EXISTS ...); never let several writers create or replace it, or write "
            "to its empty path, at the same time."
        )
    fixes.append(
        "Upgrade the protocol (enabling deletion vectors or other table features, DROP FEATURE, "
        "REORG ... APPLY (UPGRADE UNIFORM ...)) only while no writers run."
    )
    fixes.append(
        "If the new protocol needs newer readers or writers, upgrade the Databricks Runtime, "
        "Delta Lake or delta-rs version of every job that writes this table."
    )
    fixes.append(_RETRY)
    return fixes


def _fixes_transaction(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    return [
        "Two instances of one streaming query ran with the same checkpoint location: stop the "
        "duplicate (look for a second job or cluster running it) and never start a query while "
        "another with that checkpoint is running.",
        "Give every streaming query its own checkpointLocation.",
        "For idempotent foreachBatch writes (txnAppId/txnVersion), give each query its own "
        "txnAppId.",
    ]


def _fixes_write(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = [_RERUN_ON_NEW_STATE]
    if parsed.engine == Engine.DELTA_RS:
        fixes.append(
            "delta-rs retries conflicting commits itself; keep that on "
            "(CommitProperties(max_commit_retries=...)) and make sure every writer uses a log "
            "store with atomic commits (on S3, a locking provider or conditional writes)."
        )
    fixes.append(_RETRY)
    return fixes


_RERUN_ON_NEW_STATE = (
    "Another transaction committed the same version first. Re-run the operation on the new "
    "table state."
)
_RETRY = (
    "Retry with backoff: the conflict is transient, but re-run the whole read-modify-write, not "
    "only the commit."
)


def _partition_example(columns: list[str], values: dict[str, str | None]) -> str:
    predicates = []
    for column in columns[:4]:
        value = values.get(column)
        literal = f"'{clip(value, 60).replace(chr(39), chr(39) * 2)}'" if value else f"'<{column}>'"
        predicates.append(f"t.{clip(column, 60)} = {literal}")
    return " AND ".join(predicates)


def _at(view: CommitView | None) -> str:
    return f" (version {view.version})" if view is not None and view.version is not None else ""


def _op(view: CommitView | None) -> str:
    return (view.operation or "").upper() if view is not None else ""


_BUILDERS: dict[ConflictException, FixBuilder] = {
    ConflictException.CONCURRENT_APPEND: _fixes_append,
    ConflictException.CONCURRENT_DELETE_READ: _fixes_delete_read,
    ConflictException.CONCURRENT_DELETE_DELETE: _fixes_delete_delete,
    ConflictException.METADATA_CHANGED: _fixes_metadata,
    ConflictException.PROTOCOL_CHANGED: _fixes_protocol,
    ConflictException.CONCURRENT_TRANSACTION: _fixes_transaction,
    ConflictException.CONCURRENT_WRITE: _fixes_write,
}
