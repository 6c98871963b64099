"""The units of work of the fleet audit on Spark, and what one task does with them.

Django-free; runs in executors (shipped in the job's zip, see archive.py) and on the driver
(planning, decoding). A unit is one of:

- `table`: a whole table audited in the task, exactly as the Python path does
  (`AuditedTable.history` + `.audit`, audit/core/runs/table.py): most tables fit in one task;
- `range`: versions [start, end] of a long history, audited over the window the live tail
  would load for them (`audit.core.runs.split_history.load_range`, the tail's window rules, proven
  equal to the one-shot audit, docs/tail.md) with `audit_history(versions=(start, end))`; out
  come those commits, their commit-level findings (with those it reveals at earlier
  versions: `revealed_findings`), and the range's partial of the whole-history findings,
  which the driver merges (job._table_level, audit.core.runs.range_partials);
- `tablelevel` (only with AUDIT_SPARK_TABLE_LEVEL_UNIT=1, the older way): the whole-history
  findings of a long table, computed by reading and auditing the whole history again.

Units are packed into a few partitions per core (largest first onto the least loaded), so a
job has a handful of tasks whatever the fleet's size: Spark's cost is per task, not per table.
Each unit yields result rows (at most ROW_COMMITS commits each) whose payloads are its
results, pickled.
"""

from __future__ import annotations

import heapq
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from audit.core import serialize
from audit.core.data.dv import DvLimits
from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.summary import History, paused_gc
from audit.core.log import DeltaLog
from audit.core.log.replay import copy_state
from audit.core.model import (
    CommitSummary,
    Finding,
    LogListing,
    TableState,
)
from audit.core.serialize import arrow_schema
from audit.core.storage.stores import open_store
from workers.spark import transport

if TYPE_CHECKING:
    from audit.core.runs.table import AuditedTable, AuditOptions

TABLE, RANGE, TABLE_LEVEL = "table", "range", "tablelevel"
RESULT_SCHEMA = pa.schema(
    [
        *arrow_schema("table_uri:str kind:str start:int end:int part:int parts:int"),
        pa.field("payload", pa.binary()),
    ]
)
# A unit's results travel in rows of at most this many commits: one row of a 1M-commit table
# (~300 MB pickled) took the local driver's JVM (1 GB heap) down; rows of ~15 MB stream.
ROW_COMMITS = 50_000
UNITS_PER_CORE = 2  # two tasks per core: LPT packing balances them; each task costs ~0.1 s
# A split table's whole-history findings: merged on the driver from the ranges' partials, or
# (False, the old way) one more unit that reads and audits the whole history again.
ASSEMBLE_TABLE_LEVEL = os.environ.get("AUDIT_SPARK_TABLE_LEVEL_UNIT", "") in ("", "0")


@dataclass(frozen=True)
class Unit:
    kind: str  # TABLE | RANGE | TABLE_LEVEL
    table_uri: str
    start: int
    end: int
    cost: int  # commits it reads (about)


def table_units(uri: str, versions: list[int], chunk_commits: int) -> list[Unit]:
    """One unit for a table that fits in a chunk; ranges otherwise (+ a table-level unit)."""
    if len(versions) <= max(chunk_commits, 1):
        first, last = (versions[0], versions[-1]) if versions else (0, -1)
        return [Unit(TABLE, uri, first, last, len(versions))]
    step = max(chunk_commits, 1)
    units = []
    if not ASSEMBLE_TABLE_LEVEL:
        units.append(Unit(TABLE_LEVEL, uri, versions[0], versions[-1], len(versions)))
    for i in range(0, len(versions), step):
        part = versions[i : i + step]
        units.append(Unit(RANGE, uri, part[0], part[-1], len(part)))
    return units


def pack(units: list[Unit], partitions: int) -> list[list[Unit]]:
    """Longest-processing-time packing: each unit, largest first, onto the least loaded bin."""
    bins: list[list[Unit]] = [[] for _ in range(max(1, min(partitions, len(units))))]
    heap = [(0, i) for i in range(len(bins))]
    for unit in sorted(units, key=lambda u: -u.cost):
        load, i = heapq.heappop(heap)
        bins[i].append(unit)
        heapq.heappush(heap, (load + unit.cost, i))
    return bins


# --------------------------------------------------------------------------- in the task


class ListedLog(DeltaLog):
    """A DeltaLog over the listing the driver made: tasks neither list again (a 1M-commit log's
    listing costs as much as a range's audit) nor see commits written since the plan."""

    def __init__(self, uri: str, listing: LogListing):
        self.store = open_store(uri)
        self.uri = self.store.uri
        self.listing = listing
        self._snapshots: dict[int, TableState] = {}

    def snapshot(self, version: int | None = None) -> TableState:
        """A range asks for the state before its window up to three times (its window, the
        survivors rule, its integrity base): one checkpoint read, each caller its own copy
        (history_from_log replays onto the state it gets)."""
        if version is None:
            return super().snapshot(version)
        state = self._snapshots.get(version)
        if state is None:
            state = self._snapshots[version] = super().snapshot(version)
        return copy_state(state)


@dataclass(frozen=True)
class DataReads:
    """What a task may read of the data files, as the Python path's audit does: whether at all,
    only inside `roots` (None: each table's own root), or each table inside its own scope
    (`scopes`, by table URI: audit/trust/paths.py read_scope_of; a table missing there reads
    its own root only), and how many matching rows a witness keeps (`sample_rows`; 0: counts
    and file names only; None: the witness's default)."""

    check: bool = True
    roots: tuple[str, ...] | None = None
    sample_rows: int | None = None
    scopes: Mapping[str, Sequence[str]] | None = None
    dv_limits: DvLimits | None = None  # what deletion vectors may cost (None: the defaults)

    def audit_options(self, table_uri: str) -> AuditOptions:
        from audit.core.runs.table import AuditOptions  # noqa: PLC0415  (the audit: in tasks)

        roots = self.roots if self.scopes is None else self.scopes.get(table_uri)
        return AuditOptions(
            check_data=self.check,
            read_roots=roots,
            sample_rows=self.sample_rows,
            dv_limits=self.dv_limits,
        )


def run_units(
    bins: list[list[Unit]],
    listings: dict[str, LogListing],
    reads: DataReads,
    paths: bool,
    before: Callable[[], None],
    row_commits: int = ROW_COMMITS,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function: its input is the partition ids (spark.range), one per task."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        before()
        for batch in batches:
            for pid in batch.column(0).to_pylist():
                for unit in bins[pid]:
                    for row in unit_rows(unit, listings[unit.table_uri], reads, paths, row_commits):
                        yield pa.RecordBatch.from_pylist([row], schema=RESULT_SCHEMA)

    return task


def unit_rows(
    unit: Unit, listing: LogListing, reads: DataReads, paths: bool, row_commits: int = ROW_COMMITS
) -> Iterator[dict[str, Any]]:
    """One unit's result rows (part 0 of `parts`; each row's payload pickled apart); a table's
    failure is its row's one-line error, never the job's."""
    row = {"table_uri": unit.table_uri, "kind": unit.kind, "start": unit.start, "end": unit.end}
    try:
        with paused_gc():  # as the Python path's load and audit do
            payload = _run(unit, listing, reads, paths)
    except DeltaAuditError as err:
        payload = {"error": one_line(str(err))}
    except Exception as err:  # a core bug on a hostile log must fail this table, not the job
        payload = {"error": internal_error(err)}
    pieces = _pieces(payload, row_commits)
    for part, piece in enumerate(pieces):
        with paused_gc():
            data = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
        yield {**row, "part": part, "parts": len(pieces), "payload": data}


def _pieces(payload: dict[str, Any], row_commits: int) -> list[dict[str, Any]]:
    """The payload cut into rows of at most `row_commits` summaries (and as many audits)."""
    summaries, audits = payload.get("summaries"), payload.get("audits")
    sizes = [transport.count(c) for c in (summaries, audits) if c]
    count = max(1, -(-max(sizes, default=0) // max(row_commits, 1)))
    if count == 1:
        return [payload]
    pieces = []
    for i in range(count):
        piece: dict[str, Any] = {"paths": payload.get("paths", True)}  # decoded on its own
        for key, columns in (("summaries", summaries), ("audits", audits)):
            step = -(-transport.count(columns) // count) if columns else 0
            piece[key] = transport.slice_columns(columns, i * step, (i + 1) * step) if step else []
        pieces.append(piece)
    pieces[0] = {**payload, **pieces[0]}
    return pieces


def merge_pieces(pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """The driver's side of _pieces: one unit's payload from its rows' (in part order)."""
    payload = pieces[0]
    for piece in pieces[1:]:
        payload["summaries"] += piece["summaries"]
        payload["audits"] += piece["audits"]
    return payload


def _run(unit: Unit, listing: LogListing, reads: DataReads, paths: bool) -> dict[str, Any]:
    from audit.core.runs.table import AuditedTable  # noqa: PLC0415
    from audit.core.vocab import TABLE_LEVEL_KINDS  # noqa: PLC0415

    # The options by the URI as the driver planned it (DataReads.scopes is keyed by it).
    table = AuditedTable(ListedLog(unit.table_uri, listing), reads.audit_options(unit.table_uri))
    if unit.kind == RANGE and ASSEMBLE_TABLE_LEVEL:
        return _range_with_part(table, unit, paths)
    if unit.kind == RANGE:
        history = table.window(unit.start, unit.end)
        result = table.audit(history, versions=(unit.start, unit.end))
        payload = _payload(history, result, lambda f: False, (unit.start, unit.end), paths)
        return {**payload, **revealed_findings(table, unit, result)}
    history = table.history(end=listing.latest_version)
    result = table.audit(history)
    if unit.kind == TABLE_LEVEL:
        payload = _payload(history, result, lambda f: f.kind in TABLE_LEVEL_KINDS, None, paths)
        return {**payload, "summaries": [], "audits": []}
    return _payload(history, result, lambda f: True, None, paths)


def _range_with_part(table: AuditedTable, unit: Unit, paths: bool) -> dict[str, Any]:
    """A range's commits and commit-level findings, plus its partial of the whole-history
    findings (audit.core.runs.range_partials: tallies of its own commits and its
    log-integrity findings checked from the checkpointed state): small, merged on the driver
    without a second audit. The last range also sends the table's settings."""
    from audit.core.runs.range_partials import range_partial  # noqa: PLC0415
    from audit.core.runs.split_history import load_range_checked  # noqa: PLC0415

    history, integrity = load_range_checked(table.log, unit.start, unit.end)
    result = table.audit(history, versions=(unit.start, unit.end))
    payload = _payload(history, result, lambda f: False, (unit.start, unit.end), paths)
    payload["partial"] = range_partial(history, result, unit.start, unit.end, integrity)
    if unit.end == table.log.listing.latest_version:
        payload["table"] = table_payload(history)
    payload.update(revealed_findings(table, unit, result))
    return payload


def revealed_findings(table: AuditedTable, unit: Unit, result: Any) -> dict[str, Any]:
    """The range's commit-level findings and the first version they replace (`from`).

    The tail's rule (tailwindow.audit_tail_chunk, audit.ingest.findings.findings_in): a commit
    can reveal a finding at an EARLIER version (a metadata change a later overwrite without a
    read version ran across), which an earlier range, not holding that commit, got without
    it. So [from, end] is audited again over its own window and its findings replace what
    earlier ranges found from `from` on (job._merge_findings): kept by the range holding the
    revealing commit, never twice, never lost."""
    from audit.core.runs.tailwindow import first_revealed  # noqa: PLC0415
    from audit.core.vocab import TABLE_LEVEL_KINDS  # noqa: PLC0415

    lo = first_revealed(result.findings, unit.start)
    if lo < unit.start:
        history = table.window(lo, unit.end)
        result = table.audit(history, versions=(lo, unit.end))
    kept = [
        f
        for f in result.findings
        if lo <= f.version <= unit.end and f.kind not in TABLE_LEVEL_KINDS
    ]
    return {"findings": kept, "from": lo}


def _payload(
    history: History,
    result: Any,
    keep: Callable[[Finding], bool],
    versions: tuple[int, int] | None,
    paths: bool,
) -> dict[str, Any]:
    """What the driver gets back: the commits' summaries and audits by column (transport.py),
    the findings as objects (pickled: exact, and several times cheaper than JSON rows)."""
    lo, hi = versions if versions is not None else (None, None)
    kept = [s for s in history.summaries if lo is None or lo <= s.version <= hi]
    return {
        "table": None if versions is not None else table_payload(history),
        "summaries": transport.summary_columns(kept, paths),
        "paths": paths,
        "audits": transport.audit_columns(result.commits, lo, hi),
        "findings": [f for f in result.findings if keep(f)],
    }


def decode_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The driver's side of _payload, in place, as each row arrives (summaries as
    CommitSummary, audits as serialize.AuditedCommit): so a split table's objects are built
    while its other ranges still run, not all at once when the last one is in."""
    summaries, audits = payload.get("summaries"), payload.get("audits")
    payload["summaries"] = transport.summaries_from_columns(summaries) if summaries else []
    payload["audits"] = transport.audits_from_columns(audits) if audits else []
    return payload


def decode_results(payload: dict[str, Any]) -> tuple[list[CommitSummary], dict[int, Any]]:
    """A decoded payload's (summaries, {version: AuditedCommit})."""
    return payload["summaries"], {a.version: a for a in payload["audits"]}


def table_payload(history: History) -> dict[str, Any]:
    """The table's settings as storage needs them (no live files: they are not shipped back)."""
    return table_state_payload(history.state)


def table_state_payload(state: Any) -> dict[str, Any]:
    """`table_payload` of a TableState."""
    return {
        "state_version": state.version,
        "metadata": serialize.metadata_to_json(state.metadata),
        "protocol": serialize.protocol_to_json(state.protocol),
        "clustering_columns": list(state.clustering_columns),
        "identity_columns": [asdict(c) for c in state.identity_columns],
        "num_files": len(state.files),
    }


def internal_error(err: Exception) -> str:
    return f"internal error while auditing: {type(err).__name__}: {one_line(str(err), limit=300)}"
