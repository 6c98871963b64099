"""Deletion-vector integrity: what the decoded deletion vectors of a log contradict.

The protocol keys a logical file by `(path, deletion vector id)`: a remove retires exactly the
entry whose path and deletion vector it names. Three facts are checked on every commit after
the first available version (the state before comes from its checkpoint):

- `two_live_entries`: after a commit, two entries of one path are live. A remove that names a
  deletion vector other than the live one retires nothing, so the add that follows it makes a
  second logical file of the same Parquet file (a checker that skipped delete-vs-delete let two
  concurrent DML commits do this). Decoded: rows deleted by neither vector are read twice, rows
  deleted by one are live in the other (a lost delete).
- `beyond_records`: a deletion vector deletes a row position at or past the file's
  `numRecords`.
- `cardinality`: the decoded vector's size differs from the descriptor's `cardinality`, or a
  DELETE's `numDeletedRows` differs from the live rows its actions retire (numRecords minus
  cardinality, removed minus added).
- `unusable_vectors`: a commit adds vectors that could not be decoded because they are
  malformed (the size header, checksum or magic number is wrong, the bitmap does not decode:
  readers fail on the file); `vectors_not_decoded` when they are only over the audit's limits
  (not checked). Vectors whose file is missing or outside the
  allowed roots are a storage matter, left to the reads that need them.

Bounded cost: at most MAX_DECODED vector lookups and the loader's `DvLimits` per audit (each
vector decoded once); a file's numRecords above the positions limit is not believed, and no
bitmap is ever built from it. Tables whose log carries no deletion vector are not read again.

The files live after each commit are kept on the history's own read (`History.dv_track`,
integrity/dv_track.py), which also keeps, in order, what is to be decoded here: a history read
whole is not read again; others (windows, the Spark path) are, into the same `DvTrack`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from audit.core import severity as sev
from audit.core.conflicts.dv_recheck import DvPair
from audit.core.data.dv import Loader, Unusable
from audit.core.errors import DeltaAuditError, one_line
from audit.core.integrity.dv_track import (
    MAX_DECODED,
    MAX_FINDINGS,
    DvEntry,
    DvItem,
    DvTrack,
    dv_cardinality,
    two_entries_facts,
)
from audit.core.integrity.refs import refs_of_commit
from audit.core.jsonsafe import cell_value
from audit.core.log import DeltaLog
from audit.core.model import CommitSummary, Finding
from audit.core.scrub import scrub_error
from audit.core.storage.roots import shown_path
from audit.core.vocab import FindingKind
from audit.core.wording.dv import DvFacts, DvProblem, dv_integrity_text, resurrection_text

if TYPE_CHECKING:
    from pyroaring import BitMap64

    from audit.core.history.summary import History

MAX_POSITIONS = 10


def _positions(bitmap: BitMap64, start: int = 0) -> list[int]:
    """The first few positions from `start`: read one by one, never the whole bitmap."""
    return list(islice(bitmap.iter_equal_or_larger(start), MAX_POSITIONS))


def _below(bitmap: BitMap64, records: int) -> int:
    """How many positions are under `records`, counted in the bitmap's containers."""
    return bitmap.rank(records - 1) if records > 0 else 0


_OVER_BOUND = Unusable("over the audit's bound of deletion vectors decoded", "budget")
_SHOWN_VECTORS = 10


@dataclass
class DvChecker:
    """Judge a `DvTrack`'s items in order with `judge`; read `findings` at the end."""

    loader: Loader
    findings: list[Finding] = field(default_factory=list)
    decoded: int = 0
    budget_said: bool = False
    _unusable: list[tuple[str, Unusable]] = field(default_factory=list)

    def records(self, entry: DvEntry) -> int | None:
        """numRecords, unless over the positions limit: then unknown (no check trusts it)."""
        records = entry.records()
        return records if records is None or records <= self.loader.limits.positions else None

    def judge(self, items: Iterable[DvItem]) -> None:
        for item in items:
            what = item[0]
            if what == "vector":
                self._check_vector(*item[1:])
            elif what == "two":
                self._two_entries(*item[1:])
            elif what == "end":
                self._report_unusable(item[1])
            elif what == "rows":
                _, version, decoded, metric, most = item
                # Undecidable when a file's numRecords is over the limit (not believed).
                if most <= self.loader.limits.positions:
                    self._add(
                        DvFacts("deleted_rows", version, None, [], decoded=decoded, recorded=metric)
                    )
            else:
                self._add(item[1])

    def _bitmap(self, dv: dict[str, Any] | None) -> BitMap64 | Unusable:
        if dv and self.decoded >= MAX_DECODED:
            return _OVER_BOUND
        found = self.loader.get(dv)
        self.decoded += 1 if dv else 0
        return found

    def _check_vector(self, version: int, path: str, entry: DvEntry) -> None:
        bitmap = self._bitmap(entry.dv)
        if isinstance(bitmap, Unusable):
            if bitmap.cause != "storage":  # a missing file is a storage matter, not this kind
                self._unusable.append((path, bitmap))
            return
        recorded = dv_cardinality(entry.dv)
        if len(bitmap) != recorded:
            self._add(
                DvFacts("cardinality", version, path, [], decoded=len(bitmap), recorded=recorded)
            )
        records = self.records(entry)
        if records is not None and len(bitmap) and bitmap.max() >= records:
            self._add(
                DvFacts(
                    "beyond_records",
                    version,
                    path,
                    [],
                    decoded=len(bitmap) - _below(bitmap, records),
                    recorded=records,
                    positions=_positions(bitmap, records),
                )
            )

    def _report_unusable(self, version: int) -> None:
        """One finding for the vectors of a commit that could not be decoded; the pass's
        budget running out is said once, at the commit where it ran out."""
        found, self._unusable = self._unusable, []
        if self.budget_said:
            found = [(p, u) for p, u in found if u.cause != "budget"]
        if not found:
            return
        self.budget_said = self.budget_said or any(u.cause == "budget" for _, u in found)
        vectors = [{"path": p, "reason": u.reason} for p, u in found[:_SHOWN_VECTORS]]
        # Malformed vectors are a fact about the table; vectors over the limits only say
        # what this audit did not check.
        invalid = any(u.cause == "invalid" for _, u in found)
        problem: DvProblem = "unusable_vectors" if invalid else "vectors_not_decoded"
        facts = DvFacts(problem, version, None, [], decoded=len(found), vectors=vectors)
        facts.confirmed = invalid
        self._add(facts)

    def _two_entries(
        self, version: int, path: str, earlier: list[int], entries: tuple[DvEntry, ...]
    ) -> None:
        bitmaps = [self._bitmap(e.dv) for e in entries]
        records = self.records(entries[-1])
        facts = two_entries_facts(version, path, earlier, len(entries))
        if records is not None and not any(isinstance(b, Unusable) for b in bitmaps):
            union = bitmaps[0].union(*bitmaps[1:])  # type: ignore[union-attr]
            both = bitmaps[0].intersection(*bitmaps[1:])  # type: ignore[union-attr]
            lost = union.difference(both)
            # Counted in the bitmap, never by building one of `records` positions (the log
            # says numRecords: 2^62 would be 2^46 containers).
            live = records - _below(union, records)
            facts.rows_counted_twice = live * (len(entries) - 1)
            facts.decoded = len(lost)
            facts.positions = _positions(lost)
            facts.confirmed = True
        self._add(facts)

    def _add(self, facts: DvFacts) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(dv_finding(facts))


def dv_finding(facts: DvFacts) -> Finding:
    return dv_integrity_text(facts).finding(
        FindingKind.DV_INTEGRITY,
        sev.dv_integrity_severity(facts.problem),
        facts.version,
        facts.related_versions,
        confirmed=facts.confirmed,
        witness=facts.witness(),
        details={"problem": facts.problem},
    )


def dv_integrity_findings(
    history: History, roots: Sequence[str] | None = None, vectors: Loader | None = None
) -> list[Finding]:
    """The dv_integrity findings of a whole history (none, and no read, without vectors).
    Vectors are decoded through `vectors`, the pass's loader (None: one of its own).

    A history read whole kept what the check needs on that read (`History.dv_track`);
    others (the Spark path, histories made elsewhere) read their commits again here."""
    from audit.core.data.witness import DataFiles  # noqa: PLC0415  (pyarrow only when needed)

    summaries = history.summaries
    if not summaries:
        return []
    state_has = any(a.deletion_vector for a in history.state.files.values())
    if not state_has and not any(s.has_deletion_vectors for s in summaries):
        return []
    try:
        log = history.get_log()
        checker = DvChecker(vectors or Loader(DataFiles(history.table_uri, roots)))
        track = getattr(history, "dv_track", None) or _read_track(log, summaries)
        if not track.usable:
            return []  # the state before the first commit could not be read
        checker.judge(track.items)
    except DeltaAuditError:
        return []  # the log is unreadable again: the rest of the audit says so
    return checker.findings


def _read_track(log: DeltaLog, summaries: Sequence[CommitSummary]) -> DvTrack:
    """The track of the summaries' commits, read again from the log."""
    first, last = summaries[0].version, summaries[-1].version
    start = first
    track = DvTrack(())
    if first > 0:
        track = DvTrack(log.snapshot(first).files.values())
        start = first + 1
    if start <= last:
        for commit in log.iter_commits(start, last):
            track.observe(commit, *refs_of_commit(commit))
    return track


# --------------------------------------------------------------------------- rebased vectors


def resurrection_finding(
    history: History,
    txn: CommitSummary,
    pair: DvPair,
    *,
    roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
) -> Finding:
    """The never-existed snapshot a rebased vector that dropped the winner's deletes leaves.
    Rows are read inside `roots` only and at most `sample_rows` kept, as the witness does."""
    from audit.core.data import witness as data_witness  # noqa: PLC0415

    keep = data_witness.MAX_SAMPLE_ROWS if sample_rows is None else max(sample_rows, 0)
    files = data_witness.DataFiles(history.table_uri, roots)
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for path, positions in pair.resurrected.items():
        if len(rows) >= keep:
            break
        try:
            rows += _rows_at(files, path, positions[: keep - len(rows)])
        except (OSError, ValueError, DeltaAuditError) as err:
            # Scrubbed whole: a data file's URL or its reader's error can carry a token.
            problems.append(scrub_error(f"{path}: {one_line(err, limit=200)}"))
    witness = {
        "files": sorted(shown_path(path) for path in pair.resurrected),
        "row_count": pair.resurrected_count,
        "sample_rows": rows,
        "row_positions": {shown_path(p): at for p, at in pair.resurrected.items()},
        "predicate": txn.predicate.raw if txn.predicate is not None else None,
        "method": "deletion_vectors",
    }
    if problems:
        witness["note"] = "; ".join(problems[:3])
    text = resurrection_text(
        txn.version, pair.winner, sorted(pair.resurrected), pair.resurrected_count, txn.operation
    )
    return text.finding(
        FindingKind.NEVER_EXISTED_SNAPSHOT,
        sev.never_existed_severity(True),
        txn.version,
        [pair.winner],
        confirmed=True,
        witness=witness,
        details={"source": "deletion_vectors", "read_version": txn.read_version},
    )


def _rows_at(files: Any, path: str, positions: list[int]) -> list[dict[str, Any]]:
    """The rows at `positions` of a data file, opened by a `witness.DataFiles`."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    if not positions:
        return []
    source = files.open(path)
    try:
        table = pq.ParquetFile(source).read()
    finally:
        source.close()
    wanted = [p for p in positions if p < table.num_rows]
    return [{k: cell_value(v) for k, v in row.items()} for row in table.take(wanted).to_pylist()]
