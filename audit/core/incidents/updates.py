"""An UPDATE's assignments, derived from its own rewrite when they are constants.

The log keeps an UPDATE's condition, not its SET. Its commit removed the files it read and
added their rewrite: the rows that did not match, copied, and the rows that matched, changed.
When every changed column took one constant value, and applying those constants to the matched
rows gives exactly the rewrite (as multisets of rows), the assignments are proven: the rows
the UPDATE missed (a stale snapshot) can be given them too. Anything else (an assignment that
depends on the row, a partition column, unreadable files) derives nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from audit.core.history.summary import History
from audit.core.model import AddFile, CommitSummary
from audit.core.vocab import Operation

MAX_ROWS = 1_000_000  # rows of the UPDATE's own files compared at most
_SCALARS = (str, int, float, bool, type(None))


def update_assignments(
    history: History, versions: list[int], roots: Sequence[str] | None
) -> dict[int, dict[str, Any]]:
    """Per stale UPDATE version, its constant assignments (versions without: left out)."""
    out = {}
    for version in versions:
        txn = history.summary(version)
        if txn is None or (txn.operation or "").upper() != Operation.UPDATE:
            continue
        try:
            found = _derive(history, txn, roots)
        except Exception:  # noqa: BLE001  (unreadable or odd files: nothing is derived)
            found = None
        if found:
            out[version] = found
    return out


def _derive(
    history: History, txn: CommitSummary, roots: Sequence[str] | None
) -> dict[str, Any] | None:
    from audit.core.data import rowfilter, witness  # noqa: PLC0415  (pyarrow when needed)
    from audit.core.data.dv import Loader, Unusable  # noqa: PLC0415

    commit = history.get_log().read_commit(txn.version)
    predicate = witness.effective_predicate(txn)
    metadata = history.metadata_at(txn.version - 1)
    names = rowfilter.name_tree(metadata.schema_string if metadata else None)
    from audit.core.conflicts.context import partition_types_of  # noqa: PLC0415

    types = partition_types_of(metadata) if metadata is not None else {}
    files = witness.DataFiles(history.table_uri, roots)
    vectors = Loader(files)
    matched: list[tuple] = []
    copied: list[tuple] = []
    columns: list[str] | None = None
    for remove in commit.removes:
        if not remove.data_change:
            return None
        add = AddFile(
            remove.path, dict(remove.partition_values or {}), deletion_vector=remove.deletion_vector
        )
        deleted = vectors.get(remove.deletion_vector)
        if isinstance(deleted, Unusable):
            return None
        hits, _ = witness.matching_positions(files, add, predicate, types, names, deleted=deleted)
        table = _rows(files, remove.path)
        if columns is None:
            columns = table.column_names
        if table.column_names != columns:
            return None
        if len(matched) + len(copied) + table.num_rows > MAX_ROWS:
            return None
        gone = deleted  # membership in the bitmap itself: never a list of its positions
        hit = set(hits.to_pylist())
        rows = table.to_pylist()
        for position, row in enumerate(rows):
            if position in gone:
                continue
            (matched if position in hit else copied).append(tuple(row[c] for c in columns))
    if not matched or columns is None:
        return None
    written: list[tuple] = []
    for add in commit.adds:
        table = _rows(files, add.path)
        if table.column_names != columns or add.deletion_vector:
            return None
        if len(written) + table.num_rows > MAX_ROWS:
            return None
        written += [tuple(row[c] for c in columns) for row in table.to_pylist()]
    return _assignments(columns, matched, copied, written)


def _rows(files: Any, path: str) -> Any:
    import pyarrow.parquet as pq  # noqa: PLC0415

    return pq.read_table(files.open(path))


def _assignments(
    columns: list[str], matched: list[tuple], copied: list[tuple], written: list[tuple]
) -> dict[str, Any] | None:
    """The constants that turn `matched` into `written` minus `copied`, if there are such."""
    try:
        rest = Counter(written)
        rest.subtract(Counter(copied))
    except TypeError:  # unhashable cells (lists, maps): not compared
        return None
    if any(n < 0 for n in rest.values()):
        return None
    updated = list((+rest).elements())
    if len(updated) != len(matched):
        return None
    assignments: dict[str, Any] = {}
    for index, column in enumerate(columns):
        new = {row[index] for row in updated}
        old = Counter(row[index] for row in matched)
        if Counter(row[index] for row in updated) == old:
            continue  # unchanged, as far as the multisets tell
        if len(new) != 1:
            return None
        value = next(iter(new))
        if not isinstance(value, _SCALARS):
            return None
        assignments[column] = value
    if not assignments:
        return None
    applied = Counter(
        tuple(assignments.get(c, row[i]) for i, c in enumerate(columns)) for row in matched
    )
    return assignments if applied == Counter(updated) else None
