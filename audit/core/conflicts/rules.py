"""Delta's commit-time conflict checks, re-run from what the log keeps: one function per check.

A transaction T that read version r and commits after its winners W (the commits in (r, v))
is checked by Delta's `ConflictChecker.checkConflicts` against each W, in this order
(delta-io/delta, spark/.../ConflictChecker.scala):

1. `checkProtocolCompatibility`: W changed the protocol -> ProtocolChangedException;
2. `checkNoMetadataUpdates`: W changed the metadata -> MetadataChangedException;
3. `checkIfDomainMetadataConflict`: both wrote the same domain -> ConcurrentTransactionException
   (the row tracking domain is merged, not failed);
4. `checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn`: both declared the same
   `txn` appId -> ConcurrentTransactionException;
5. row tracking (`reassignOverlappingRowIds`, `reassignRowCommitVersions`, the backfill
   resolvers): reconciled by Delta, never an exception;
6. `checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn` -> ConcurrentAppendException;
7. `checkForDeletedFilesAgainstCurrentTxnReadFiles` -> ConcurrentDeleteReadException;
8. `checkForDeletedFilesAgainstCurrentTxnDeletedFiles` -> ConcurrentDeleteDeleteException.

The first check that fails decides the exception, so `recheck` applies them in this order and
stops at the first. The file checks (6-8) are run under both Serializable and
WriteSerializable, which differ in check 6 only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from audit.core.conflicts.context import TableContext
from audit.core.conflicts.scope import (
    ReadScope,
    is_blind,
    is_compaction,
    read_scope,
    whole_table_scope,
)
from audit.core.conflicts.verdict import NO_CONFLICT, SNAPSHOT_ISOLATION, Recheck
from audit.core.model import CommitSummary
from audit.core.operations import classify_operation, uses_zorder
from audit.core.vocab import ConflictException, OperationClass

# The operation class of a summary (the auditor remembers them across the windows it checks).
Classify = Callable[[CommitSummary], OperationClass | None]


def classify_summary(summary: CommitSummary) -> OperationClass | None:
    return classify_operation(summary.operation, summary.blind_append, summary.operation_parameters)


# Domains Delta resolves itself instead of failing (row tracking high-water mark).
SELF_RESOLVING_DOMAINS = frozenset({"delta.rowTracking"})


def recheck(
    txn: CommitSummary,
    winner: CommitSummary,
    scope: ReadScope | None = None,
    ctx: TableContext | None = None,
    *,
    row_level_concurrency: bool | None = None,
    deletion_vectors: bool | None = None,
    classify: Classify = classify_summary,
) -> Recheck:
    """Delta's conflict checks of `txn` against the concurrent `winner`, under both levels,
    in the order of the module docstring. `classify`: a summary's operation class (the
    auditor passes one that remembers them)."""
    if scope is None:
        scope = (
            read_scope(txn, ctx) if ctx is not None else whole_table_scope(txn, "no table context")
        )
    verdict = (
        check_protocol(winner)
        or check_metadata(winner)
        or check_domain_metadata(txn, winner)
        or check_app_transactions(txn, winner)
        or check_row_tracking(txn, winner)
    )
    if verdict is not None:
        return verdict
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
    return check_files(txn, winner, scope, row_level_concurrency, deletion_vectors, classify)


def _both_levels(exception: ConflictException, rule: str) -> Recheck:
    return Recheck(exception, exception, rule)


def check_protocol(winner: CommitSummary) -> Recheck | None:
    """1. A protocol change fails every transaction running across it."""
    if winner.protocol_changed:
        return _both_levels(ConflictException.PROTOCOL_CHANGED, "protocol")
    return None


def check_metadata(winner: CommitSummary) -> Recheck | None:
    """2. So does a metadata change (schema, properties, partitioning)."""
    if winner.metadata_changed:
        return _both_levels(ConflictException.METADATA_CHANGED, "metadata")
    return None


def check_domain_metadata(txn: CommitSummary, winner: CommitSummary) -> Recheck | None:
    """3. Both wrote the same metadata domain (Delta merges the row tracking one itself)."""
    if (winner.domains & txn.domains) - SELF_RESOLVING_DOMAINS:
        return _both_levels(ConflictException.CONCURRENT_TRANSACTION, "domain")
    return None


def check_app_transactions(txn: CommitSummary, winner: CommitSummary) -> Recheck | None:
    """4. Both declared the same idempotent-writer appId (`txn` action)."""
    if winner.app_ids and txn.app_ids and winner.app_ids.keys() & txn.app_ids.keys():
        return _both_levels(ConflictException.CONCURRENT_TRANSACTION, "txn")
    return None


def check_row_tracking(txn: CommitSummary, winner: CommitSummary) -> Recheck | None:
    """5. Row tracking: Delta re-assigns the loser's row IDs and commit versions past the
    winner's instead of failing, so this step never raises (kept to mirror Delta's order)."""
    return None


# --------------------------------------------------------------------------- file checks 6-8


@dataclass(frozen=True, slots=True)
class _AddedFiles:
    """Check 6 under each level; `exempt`: WriteSerializable let a blind append through."""

    serializable: bool = False
    write_serializable: bool = False
    exempt: bool = False


def check_files(
    txn: CommitSummary,
    winner: CommitSummary,
    scope: ReadScope,
    rlc: bool,
    dv: bool,
    classify: Classify = classify_summary,
) -> Recheck:
    """Checks 6-8 (added, deleted-vs-read, deleted-vs-deleted files) under both levels."""
    same_row = False
    if dv or rlc:  # classifying operations costs; only these two rules need it
        txn_op, winner_op = classify(txn), classify(winner)
        # OPTIMIZE without ZORDER cannot conflict on tables with deletion vectors (reference page).
        if dv and OperationClass.OPTIMIZE in (txn_op, winner_op):
            zorder = uses_zorder(txn.operation_parameters) or uses_zorder(
                winner.operation_parameters
            )
            if not zorder:
                return NO_CONFLICT
        same_row = rlc and txn_op == OperationClass.UDM and winner_op == OperationClass.UDM

    added = check_added_files(txn, winner, scope)
    # Each summary's removed paths unpacked once for checks 7 and 8.
    removed, mine = winner.removed_paths_all, txn.removed_paths_all
    delete_read, read_certain = _deleted_read(txn, winner, scope, removed, mine)
    delete_delete = bool(mine and removed & mine)

    def first(append: bool) -> tuple[ConflictException | None, str | None, bool]:
        if append:
            return ConflictException.CONCURRENT_APPEND, "append", True
        if delete_read:
            return ConflictException.CONCURRENT_DELETE_READ, "delete_read", read_certain
        if delete_delete:
            return ConflictException.CONCURRENT_DELETE_DELETE, "delete_delete", True
        return None, None, True

    ser, rule_ser, certain_ser = first(added.serializable)
    ws, rule_ws, certain_ws = first(added.write_serializable)
    if ser is None and ws is None:
        return NO_CONFLICT
    rule = rule_ws or rule_ser
    certain = certain_ws if ws is not None else certain_ser
    exempt = added.exempt and ser is not None and ws != ser
    return Recheck(ser, ws, rule, certain, same_row, exempt)


def check_added_files(txn: CommitSummary, winner: CommitSummary, scope: ReadScope) -> _AddedFiles:
    """6. Files the winner added that the txn should have read.

    A commit of only dataChange=false actions (OPTIMIZE) runs under SnapshotIsolation in
    Delta, which skips this check. WriteSerializable ignores blind appends, unless the txn
    itself changes metadata.
    """
    if not (
        txn.data_change
        and txn.isolation_level != SNAPSHOT_ISOLATION
        and winner.files_added
        and scope.overlaps(winner.added_partitions)
    ):
        return _AddedFiles()
    exempt = is_blind(winner) and not txn.metadata_changed
    return _AddedFiles(True, not exempt, exempt)


def check_deleted_read_files(
    txn: CommitSummary, winner: CommitSummary, scope: ReadScope
) -> tuple[bool, bool]:
    """7. (conflict, certain): did the winner remove a file the txn read?"""
    return _deleted_read(txn, winner, scope, winner.removed_paths_all, txn.removed_paths_all)


def _deleted_read(
    txn: CommitSummary,
    winner: CommitSummary,
    scope: ReadScope,
    removed: frozenset[str],
    mine: frozenset[str],
) -> tuple[bool, bool]:
    """Check 7 given the paths the winner (`removed`) and the txn (`mine`) removed."""
    if not removed or is_compaction(txn):
        # Compaction does not register the files it rewrites as read: two compactions of the
        # same files fail with ConcurrentDeleteDeleteException (reference page).
        return False, True
    if mine and removed & mine:
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


def check_deleted_deleted_files(txn: CommitSummary, winner: CommitSummary) -> bool:
    """8. Did both remove the same file?"""
    return bool(txn.removed_paths_all and winner.removed_paths_all & txn.removed_paths_all)
