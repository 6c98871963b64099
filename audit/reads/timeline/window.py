"""The timeline of a table's commits for charts (API `/timeline/` and the table page).

Every answer is read from CommitRollup rows (audit/reads/timeline/rollups.py), never by scanning the window's
Commit rows, so its cost does not grow with the zoom level:

- `rows` (the window holds at most max_points commits): the packed rows of the two or three
  rollups that cover the window;
- `buckets` (about max_points/2 of them): the window is cut at the finest stored level whose
  cell is at most twice narrower than the wanted bucket width (whole rollups, then cells of 64
  and 8 versions at the real size); buckets are whole cells of that level, counted from the
  cell boundary at or below the window's start, and the partly covered rollups at the edges
  are counted row by row, so every count is exact.

In buckets mode `findings` lists, per bucket, the open finding the chart pins there (the most
severe, then the lowest version and id); `buckets[i][4]` counts all of them.
"""

from __future__ import annotations

import bisect
from typing import Any

import orjson
from django.conf import settings

from audit.core.vocab import SEVERITY_RANK
from audit.models import Table
from audit.reads.cache import FINDINGS_OF_TABLE, STORED, cached_json, table_generation
from audit.reads.timeline import rollups
from audit.reads.timeline import sql as timeline_sql
from audit.reads.timeline.grid import BucketGrid

TIMELINE_COLUMNS = [
    "version",
    "read_version",
    "timestamp",
    "op",
    "blind_append",
    "concurrent_count",
]
TIMELINE_MAX_FINDINGS = timeline_sql.MAX_FINDINGS
FINDING_FIELDS = timeline_sql.FINDING_FIELDS


def pin_rank(severity: str) -> int:
    """Which finding a bucket pins, highest first: the severity's rank + 1, and 0 for a
    severity the vocabulary does not know (it ranks below info)."""
    return SEVERITY_RANK.get(severity, -1) + 1


def _json(value: Any) -> Any:
    # SQLite hands JSON columns back as text, psycopg as decoded values.
    return orjson.loads(value) if isinstance(value, str | bytes) else value


# What a timeline body depends on (its declaration, audit/reads/declared/routes.py, names these):
# stored commits never change; its findings move the findings generation.
DEPENDS = (STORED, FINDINGS_OF_TABLE)
POINTS = 2000  # the default max_points


def timeline_key(lo: int | None, hi: int | None, points: int) -> str:
    """The request part of a timeline's key (its validated window)."""
    return f"{lo}:{hi}:{points}"


def table_timeline(
    table: Table,
    from_version: int | None = None,
    to_version: int | None = None,
    max_points: int = 2000,
) -> dict[str, Any]:
    """The timeline JSON contract (see /api/docs/)."""
    return orjson.loads(timeline_json(table, from_version, to_version, max_points))


def timeline_json(
    table: Table, from_version: int | None, to_version: int | None, max_points: int
) -> bytes:
    """The timeline as JSON bytes, cached briefly as bytes (no re-serialisation on a hit):
    stored commits never change, and the key holds the stored version and the findings
    generation (moved with every change of the table's findings: a re-audit resolving one, a
    health finding), so a hit is what a fresh computation would answer."""
    return cached_json(
        table_generation("timeline", DEPENDS, table),
        timeline_key(from_version, to_version, max_points),
        lambda: orjson.dumps(_timeline(table.id, from_version, to_version, max_points)),
        settings.AUDIT_API_TIMELINE_CACHE_SECONDS,
    )


def _timeline(
    table_id: int, from_version: int | None, to_version: int | None, max_points: int
) -> dict[str, Any]:
    # Two index probes: SQLite answers MIN and MAX from the index only one at a time.
    first, latest = timeline_sql.version_span(table_id)
    out: dict[str, Any] = {
        "table": table_id,
        "first_version": first,
        "latest_version": latest,
        "from_version": None,
        "to_version": None,
        "mode": "rows",
        "operations": [],
        "columns": TIMELINE_COLUMNS,
        "rows": [],
        "buckets": [],
        "findings": [],
        "changes": [],
    }
    if first is None:
        return out
    lo = first if from_version is None else max(from_version, first)
    hi = latest if to_version is None else min(to_version, latest)
    out["from_version"], out["to_version"] = lo, hi
    if lo > hi:
        return out
    # Versions are (nearly) contiguous: a short span needs no count; else probe one row past
    # max_points instead of counting the whole window.
    few = hi - lo + 1 <= max_points or not timeline_sql.has_more_than(table_id, lo, hi, max_points)
    if few:
        expected = timeline_sql.count_commits(table_id, lo, hi)
        _fill_columns(out, window_columns(table_id, lo, hi, expected=expected))
        out["findings"] = _finding_dicts(timeline_sql.window_findings(table_id, lo, hi))
    else:
        grid = _fill_buckets(out, table_id, lo, hi, max_points)
        pins = timeline_sql.bucket_pins(table_id, lo, hi, grid.base, grid.width)
        _fill_bucket_findings(out, pins, grid)
    # Schema/protocol/property changes, marked where they happened.
    out["changes"] = timeline_sql.change_marks(table_id, lo, hi)
    return out


# --------------------------------------------------------------------------- rows


def window_columns(table_id: int, lo: int, hi: int, *, expected: int | None = None) -> list[list]:
    """The six ROW_FIELDS columns of versions [lo, hi], ascending, from the rollups.

    With `expected` (the number of Commit rows in the window), rows written without their
    rollups (a bulk load that did not call rebuild_rollups) are read from the commits instead.
    """
    size = rollups.rollup_size()
    out: list[list] = [[] for _ in rollups.ROW_FIELDS]
    for start, commits, text in timeline_sql.rollup_rows(table_id, lo // size * size, hi):
        block = rollups.block_columns(text)
        if len(block[0]) != commits:  # packed before rollups carried rows, or damaged
            block = rollups.columns_of(_commit_rows(table_id, start, start + size - 1))
        versions = block[0]
        if lo <= start and start + size - 1 <= hi:
            first, stop = 0, len(versions)
        else:  # versions ascend: cut the window's part out
            first = bisect.bisect_left(versions, lo)
            stop = bisect.bisect_right(versions, hi, lo=first)
        for column, part in zip(out, block, strict=True):
            column += part[first:stop]
    if expected is not None and len(out[0]) != expected:
        return rollups.columns_of(_commit_rows(table_id, lo, hi))
    return out


def _commit_rows(table_id: int, lo: int, hi: int) -> list[list]:
    return [
        [v, rv, ts, op, None if b is None else bool(b), cc]
        for v, rv, ts, op, b, cc in timeline_sql.commit_rows(table_id, lo, hi)
    ]


_BLIND_TYPES = frozenset({bool, type(None)})


def _fill_columns(out: dict[str, Any], columns: list[list]) -> None:
    """The "rows" mode of the rows these columns hold: operations numbered in order of first
    appearance, blind appends as booleans, rows as tuples (JSON arrays; the JSON a list per
    row gave, tests/app/timeline_reference.py)."""
    versions, reads, timestamps, operations, blinds, concurrent = columns
    # dict.fromkeys keeps the first appearance's order; C loops, not Python ones, per row.
    op_index = {op: i for i, op in enumerate(dict.fromkeys(operations))}
    if not set(map(type, blinds)) <= _BLIND_TYPES:  # stored otherwise than by pack_rows
        blinds = [None if b is None else bool(b) for b in blinds]
    numbered = list(map(op_index.__getitem__, operations))
    out["mode"] = "rows"
    out["operations"] = list(op_index)
    out["rows"] = list(zip(versions, reads, timestamps, numbered, blinds, concurrent, strict=True))


# --------------------------------------------------------------------------- buckets


def _fill_buckets(
    out: dict[str, Any], table_id: int, lo: int, hi: int, max_points: int
) -> BucketGrid:
    """About max_points/2 buckets [from_v, to_v, commits, max_concurrent, findings] over
    [lo, hi] (only those holding commits), counted on the returned grid: bucket i starts at
    base + i * width. `_fill_bucket_findings` adds the findings and writes them out."""
    size = rollups.rollup_size()
    unit, base, width = _bucket_grid(lo, hi, max(max_points // 2, 1), size)
    grid = BucketGrid(lo, hi, base, width)
    operations: set[str] = set()
    first_start, last_whole = lo // size * size, hi - size + 1
    if unit == 1:  # narrow buckets: every row of the window (fewer than 4 * target of them)
        edges = timeline_sql.rollup_rows(table_id, first_start, hi)
    else:  # rollups wholly inside the window: their aggregates, or their cells
        whole = timeline_sql.whole_rollup_cells if unit < size else timeline_sql.whole_rollups
        rows = whole(table_id, first_start, hi, lo, last_whole)
        for row in rows:
            operations.update(_json(row[3]))
            if unit < size:
                grid.add_cells(row[0], rollups.unpack_cells(row[4], unit), unit)
        if unit == size:
            grid.add_rollups(row[:3] for row in rows)
        by_rows = _edges_by_cells(grid, operations, table_id, last_whole)
        edges = []
        if by_rows is None or by_rows:
            edges = timeline_sql.edge_rollups(table_id, first_start, hi, lo, last_whole)
            edges = [edge for edge in edges if by_rows is None or edge[0] in by_rows]
    # The partly covered rollups at the edges (those the cells could not count), row by row.
    for start, commits, text in edges:
        columns = rollups.block_columns(text)
        if len(columns[0]) == commits:
            grid.add_rows(zip(*columns, strict=True), operations)  # rows as tuples
        else:
            grid.add_rows(_commit_rows(table_id, start, start + size - 1), operations)
    out["mode"] = "buckets"
    out["operations"] = sorted(operations)
    return grid


def _edges_by_cells(
    grid: BucketGrid, operations: set[str], table_id: int, last_whole: int
) -> set[int] | None:
    """Count the edge rollups of buckets that are whole cells of a stored level from their
    finest cells (every bucket boundary is a boundary of them), and the at most two cells cut
    by the window from their commits; decoding an edge's ~1,000 rows was most of a cold
    bucket window. Returns the starts of the edges this cannot count exactly, to be read row
    by row (None: all of them): those without cells, and those holding an operation the whole rollups did not
    (the window's operations are those of its rows)."""
    lo, hi, base, width = grid.lo, grid.hi, grid.base, grid.width
    size = rollups.rollup_size()
    widths = rollups.cell_widths(size)
    if not widths:  # rollups too small to hold cells (tests): every edge by rows
        return None
    fine = widths[-1]
    first_start = lo // size * size
    rest = set()
    for start, _, ops, cells in timeline_sql.edge_rollup_cells(
        table_id, first_start, hi, lo, last_whole
    ):
        flat = rollups.unpack_cells(cells, fine) if cells else []
        if len(flat) != 2 * (size // fine) or not set(_json(ops)) <= operations:
            rest.add(start)
            continue
        for i in range(0, len(flat), 2):
            cell_lo = start + (i // 2) * fine
            cell_hi = cell_lo + fine - 1
            if not flat[i] or cell_hi < lo or cell_lo > hi:
                continue
            if lo <= cell_lo and cell_hi <= hi:
                grid.add((cell_lo - base) // width, flat[i], flat[i + 1])
            else:  # cut by the window: its commits there
                grid.add_rows(
                    _commit_rows(table_id, max(cell_lo, lo), min(cell_hi, hi)), operations
                )
    return rest


def _bucket_grid(lo: int, hi: int, target: int, size: int) -> tuple[int, int, int]:
    """(level, base, width) of about `target` equal buckets over [lo, hi]: buckets at least
    half a stored level wide are whole cells of it, counted from the cell boundary at or below
    lo (so there are at most `target`); narrower ones start at lo."""
    width = -(-(hi - lo + 1) // target)  # ceil
    unit = _level_for(width, size)
    if unit == 1:
        return 1, lo, width
    base = lo // unit * unit
    width = -(-(hi - base + 1) // target)
    return unit, base, -(-width // unit) * unit


def _level_for(width: int, size: int) -> int:
    """The coarsest stored level (rollup, then cells) at most twice wider than `width`;
    1 (single rows) when the buckets are narrower than half the finest cell."""
    for unit in [size, *rollups.cell_widths(size)]:
        if 2 * width >= unit:
            return unit
    return 1


# --------------------------------------------------------------------------- findings


def _fill_bucket_findings(out: dict[str, Any], pins: list[tuple], grid: BucketGrid) -> None:
    """Per bucket: the count of open findings and the one the chart pins (the most severe,
    then the lowest version and id), from `timeline_sql.bucket_pins` (grouped in SQL: reading
    every open finding of a whole-history window was most of its cold CPU); only the pinned
    are sent, however many the window holds, in (version, id) order."""
    rows: dict[int, tuple] = {}
    for bucket, _, *row in pins:
        if bucket not in rows or row[0] < rows[bucket][0]:  # same version and rank: lowest id
            rows[bucket] = tuple(row)
    grid.set_findings([pin[0] for pin in pins], [pin[1] for pin in pins])
    out["buckets"] = grid.buckets()
    pinned = sorted(rows.values(), key=lambda row: (row[1], row[0]))
    out["findings"] = _finding_dicts(pinned)


def _finding_dicts(rows: list[tuple]) -> list[dict[str, Any]]:
    return [
        {
            "id": f[0],
            "version": f[1],
            "kind": f[2],
            "severity": f[3],
            "confirmed": bool(f[4]),
            "related_versions": _json(f[5]),
        }
        for f in rows
    ]
