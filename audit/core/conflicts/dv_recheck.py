"""The deletion-vector-aware re-check of two concurrent DML commits that rewrote one file.

With row-level concurrency Delta does not fail a DML commit because a concurrent one rewrote
the deletion vector of a file it also rewrote: it rebases the loser's vector as the union with
the winner's, and fails only when both changed the same rows. The log keeps both vectors, so
decoding them tells what the log alone could only call "can conflict on the same row":

- the positions each commit deleted or updated (its new vector minus the vector both read)
  overlap: a certain conflict Delta should have raised;
- the later vector is not a superset of the earlier one: rows the winner deleted are live
  again after the later commit (rows resurrected; the anomaly is a never-existed snapshot,
  confirmed by row position).

Vectors and Parquet files are read through dv.Loader and the witness's opener.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from audit.core.data.dv import Loader, Unusable
from audit.core.errors import DeltaAuditError, one_line
from audit.core.model import EMPTY_SET, Commit, CommitSummary

if TYPE_CHECKING:
    from pyroaring import BitMap64

MAX_SAMPLE_POSITIONS = 10


@dataclass(slots=True)
class DvPair:
    """What the decoded vectors of one (txn, winner) pair show, per shared path."""

    txn: int
    winner: int
    paths: list[str]
    overlap: dict[str, list[int]] = field(default_factory=dict)  # path -> sample positions
    overlap_count: int = 0
    resurrected: dict[str, list[int]] = field(default_factory=dict)  # path -> sample positions
    resurrected_count: int = 0
    unreadable: str | None = None

    @property
    def decided(self) -> bool:
        return self.unreadable is None


def shared_dv_rewrites(txn: CommitSummary, winner: CommitSummary) -> frozenset[str]:
    """Paths whose deletion vector both commits rewrote (removed and added again)."""
    if not (txn.has_deletion_vectors and winner.has_deletion_vectors):
        return EMPTY_SET
    both_removed = txn.removed_paths_all & winner.removed_paths_all
    if not both_removed:
        return EMPTY_SET
    return both_removed & txn.added_paths & winner.added_paths


def _vectors(commit: Commit, path: str) -> tuple[dict | None, dict | None]:
    removed = next((r.deletion_vector for r in commit.removes if r.path == path), None)
    added = next((a.deletion_vector for a in commit.adds if a.path == path), None)
    return removed, added


def compare(
    log: Any, loader: Loader, txn: CommitSummary, winner: CommitSummary, paths: frozenset[str]
) -> DvPair:
    """Decode both commits' vectors for `paths` and compare the rows each changed."""
    pair = DvPair(txn.version, winner.version, sorted(paths))
    try:
        t_commit, w_commit = log.read_commit(txn.version), log.read_commit(winner.version)
    except DeltaAuditError as err:
        pair.unreadable = one_line(err, limit=300)
        return pair
    for path in pair.paths:
        # Each commit's own rows are its new vector minus the one it retired. A loser Delta
        # rebased retires the winner's vector, so its own rows exclude the winner's: an
        # overlap is then not visible (Delta checked it); a loser that was not rebased retires
        # the vector both read, and its own rows are what it changed.
        w_old, w_new = _vectors(w_commit, path)
        t_old, t_new = _vectors(t_commit, path)
        bitmaps = [loader.get(d) for d in (w_old, w_new, t_old, t_new)]
        problem = next((b for b in bitmaps if isinstance(b, Unusable)), None)
        if problem is not None:
            pair.unreadable = f"{path}: {problem}"
            return pair
        _judge(pair, path, *bitmaps)  # type: ignore[arg-type]
    return pair


def _judge(
    pair: DvPair, path: str, w_old: BitMap64, w_new: BitMap64, t_old: BitMap64, t_new: BitMap64
) -> None:
    overlap = w_new.difference(w_old).intersection(t_new.difference(t_old))
    if overlap:
        pair.overlap[path] = list(overlap[:MAX_SAMPLE_POSITIONS])
        pair.overlap_count += len(overlap)
    resurrected = w_new.difference(t_new)
    if resurrected:
        pair.resurrected[path] = list(resurrected[:MAX_SAMPLE_POSITIONS])
        pair.resurrected_count += len(resurrected)
