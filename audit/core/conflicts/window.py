"""Which commits ran concurrently with a commit: those in (read version, version)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from audit.core.conflicts.context import TableContext
from audit.core.conflicts.rules import recheck
from audit.core.conflicts.scope import read_scope
from audit.core.conflicts.verdict import Recheck
from audit.core.model import CommitSummary
from audit.core.vocab import ReadVersionFact

if TYPE_CHECKING:
    from audit.core.history.summary import History

# A read version this far behind its commit is still honoured, but only this many concurrent
# commits are re-checked (a hostile or broken readVersion must not make the audit quadratic).
MAX_CONCURRENT_WINDOW = 10_000
# Most commits have no concurrent window: one shared empty range (ranges are immutable).
NO_WINDOW = range(0)


def read_version_of(
    txn: CommitSummary, derived: dict[int, int]
) -> tuple[int | None, ReadVersionFact]:
    if txn.read_version is not None:
        return txn.read_version, ReadVersionFact.RECORDED
    if txn.version in derived:
        return derived[txn.version], ReadVersionFact.DERIVED
    return None, ReadVersionFact.UNKNOWN


def concurrent_window(
    txn: CommitSummary, read_version: int | None, first: int
) -> tuple[range, bool]:
    """Versions strictly between read_version and version, clipped to what the log still has."""
    if read_version is None or read_version >= txn.version - 1 or read_version < -1:
        return NO_WINDOW, False
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
        rlc = ctx.row_level_concurrency(txn, read_version)
        dv = ctx.deletion_vectors_at(read_version)
        for w in window:
            winner = ctx.summary(w)
            if winner is not None:
                verdict = recheck(
                    txn, winner, scope, ctx, row_level_concurrency=rlc, deletion_vectors=dv
                )
                yield txn, winner, verdict
