"""Words for the deletion-vector findings (facts: anomalies/dv_integrity.py, conflicts/dv_recheck.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from audit.core.storage.roots import shown_path
from audit.core.wording import FindingText

DvProblem = Literal[
    "two_live_entries",
    "beyond_records",
    "cardinality",
    "deleted_rows",
    "unusable_vectors",
    "vectors_not_decoded",
]


@dataclass(slots=True)
class DvFacts:
    """One deletion-vector contradiction. `decoded`/`recorded` are the two numbers compared
    (their meaning depends on `problem`); `positions` a sample of the row positions involved."""

    problem: DvProblem
    version: int
    path: str | None
    related_versions: list[int]
    decoded: int | None = None
    recorded: int | None = None
    positions: list[int] = field(default_factory=list)
    entries: int = 0
    rows_counted_twice: int | None = None
    confirmed: bool = True
    vectors: list[dict[str, str]] = field(default_factory=list)  # path, reason (fixed words)

    def witness(self) -> dict[str, Any]:
        path = shown_path(self.path) if self.path is not None else None
        out: dict[str, Any] = {"problem": self.problem, "path": path}
        if self.decoded is not None:
            out["decoded"] = self.decoded
        if self.recorded is not None:
            out["recorded"] = self.recorded
        if self.positions:
            out["row_positions"] = self.positions
        if self.entries:
            out["live_entries"] = self.entries
        if self.rows_counted_twice is not None:
            out["rows_counted_twice"] = self.rows_counted_twice
        if self.vectors:
            out["vectors"] = self.vectors
        return out


def dv_integrity_text(facts: DvFacts) -> FindingText:
    return _TEXTS[facts.problem](facts)


def _file(f: DvFacts) -> str:
    return shown_path(f.path) if f.path is not None else str(f.path)


def _two_entries(f: DvFacts) -> FindingText:
    earlier = ", ".join(f"v{v}" for v in f.related_versions) or "the checkpoint"
    decoded = (
        f" Decoded: {f.rows_counted_twice} row(s) deleted by neither vector are read twice, and "
        f"{f.decoded} row(s) deleted by one vector are live in the other (lost deletes)."
        if f.rows_counted_twice is not None
        else " The rows could not be counted: a vector could not be decoded, or the file's "
        "numRecords is missing or over the positions limit."
    )
    return FindingText(
        f"v{f.version} left {f.entries} live entries of {_file(f)} (each with its own deletion "
        "vector)",
        f"Version {f.version} removed {_file(f)} naming a deletion vector that was not the live "
        f"one (live since {earlier}), so the live entry was not retired, and then added the "
        "path again with a new vector. The protocol keys a file by path and deletion vector: "
        "readers now see two logical files over one Parquet file. Two concurrent DML commits "
        "that both rewrote this file's vector, let through by a checker that skipped "
        f"delete-vs-delete, leave exactly this.{decoded}",
    )


def _beyond(f: DvFacts) -> FindingText:
    return FindingText(
        f"v{f.version}'s deletion vector for {_file(f)} deletes {f.decoded} row position(s) at or "
        f"past the file's {f.recorded} records",
        f"The deletion vector added at version {f.version} for {_file(f)} holds row positions "
        f"{f.positions} that the file, with numRecords = {f.recorded}, does not have. Either the "
        "vector was computed for another file (a rebase onto the wrong file) or the statistics "
        "are wrong; readers that trust numRecords minus cardinality count rows wrongly.",
    )


def _cardinality(f: DvFacts) -> FindingText:
    return FindingText(
        f"v{f.version}'s deletion vector for {_file(f)} holds {f.decoded} positions, its "
        f"descriptor says {f.recorded}",
        f"Decoding the deletion vector added at version {f.version} for {_file(f)} gives "
        f"{f.decoded} deleted row positions, but its descriptor's cardinality is {f.recorded}. "
        "Row counts computed from the log (numRecords minus cardinality) are then wrong.",
    )


def _deleted_rows(f: DvFacts) -> FindingText:
    return FindingText(
        f"v{f.version} (DELETE) reports {f.recorded} deleted rows; its actions delete {f.decoded}",
        f"Version {f.version} is a DELETE whose operationMetrics.numDeletedRows is {f.recorded}, "
        f"but the live rows of the entries it retired minus those of the entries it added "
        f"(numRecords minus the deletion vectors' cardinality) are {f.decoded}.",
    )


def _unusable(f: DvFacts) -> FindingText:
    shown = "; ".join(f"{v['path']}: {v['reason']}" for v in f.vectors)
    more = f" (and {f.decoded - len(f.vectors)} more)" if (f.decoded or 0) > len(f.vectors) else ""
    return FindingText(
        f"v{f.version} adds {f.decoded} deletion vector(s) that cannot be decoded",
        f"Version {f.version} adds files whose deletion vectors are malformed: {shown}{more}. "
        "Readers fail on such a file, or read rows the vector was meant to delete; the "
        "vector's descriptor (size, offset, path) or its bytes were written wrongly, or the "
        "descriptor points at a file that is not a deletion vector.",
    )


def _not_decoded(f: DvFacts) -> FindingText:
    shown = "; ".join(f"{v['path']}: {v['reason']}" for v in f.vectors)
    more = f" (and {f.decoded - len(f.vectors)} more)" if (f.decoded or 0) > len(f.vectors) else ""
    return FindingText(
        f"v{f.version} adds {f.decoded} deletion vector(s) over the audit's limits: not checked",
        f"The deletion vectors that version {f.version} adds were not decoded, so this audit "
        f"did not check them: {shown}{more}. The limits (AUDIT_DV_MAX_VECTOR_BYTES, "
        "AUDIT_DV_MAX_POSITIONS, AUDIT_DV_MAX_PASS_BYTES) keep a hostile vector from "
        "exhausting the audit's memory; raise them if such vectors are expected.",
    )


_TEXTS = {
    "two_live_entries": _two_entries,
    "beyond_records": _beyond,
    "cardinality": _cardinality,
    "deleted_rows": _deleted_rows,
    "unusable_vectors": _unusable,
    "vectors_not_decoded": _not_decoded,
}


def resurrection_text(
    version: int, winner: int, paths: list[str], rows: int, operation: str | None
) -> FindingText:
    """A DML commit's rebased deletion vector dropped rows a concurrent commit deleted."""
    op = operation or "an unnamed operation"
    return FindingText(
        f"v{version} ({op}) brought back {rows} row(s) that concurrent v{winner} deleted, by "
        f"writing a deletion vector that is not a superset of v{winner}'s",
        f"Versions {winner} and {version} both rewrote the deletion vector of "
        f"{', '.join(shown_path(p) for p in paths[:3])} while they ran concurrently. Rebased "
        "correctly, the later "
        f"vector is the union of both; v{version}'s vector lacks {rows} row position(s) that "
        f"v{winner}'s deletes, so after v{version} the table holds rows v{winner} removed: a "
        "snapshot no serial order of the two commits produces. The rows are listed by position.",
    )
