"""The timeline as main computed it before its queries were compiled once (commit efb6b1b,
audit/reads/timeline/window.py, the ORM querysets): the reference the plain-SQL timeline must equal byte
for byte (tests/app/test_timeline_equals_its_orm_reference.py). Pure computation helpers are shared with
audit.reads.timeline.window; only the query code is kept here as it was."""

# ruff: noqa
from __future__ import annotations

import bisect
from typing import Any

from django.db import connection

from audit.reads.timeline import rollups
from audit.health.models import TableChange
from audit.models import OPEN, Commit, CommitRollup, Finding
from audit.reads.timeline.window import (
    FINDING_FIELDS,
    TIMELINE_COLUMNS,
    TIMELINE_MAX_FINDINGS,
    _bucket_grid,
    pin_rank,
    _finding_dicts,
    _json,
)


def _raw(query) -> list[tuple]:
    """The rows of a values_list query through a plain cursor: Django's per-value converters
    cost more than these queries themselves. Callers convert booleans and JSON columns."""
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _timeline(
    table_id: int, from_version: int | None, to_version: int | None, max_points: int
) -> dict[str, Any]:
    versions = Commit.objects.filter(table_id=table_id).values_list("version", flat=True)
    # Two index probes: SQLite answers MIN and MAX from the index only one at a time.
    first = versions.order_by("version").first()
    latest = versions.order_by("-version").first()
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
    window = versions.filter(version__gte=lo, version__lte=hi)
    findings = Finding.objects.filter(OPEN, table_id=table_id, version__gte=lo, version__lte=hi)
    # Versions are (nearly) contiguous: a short span needs no count; else probe one row past
    # max_points instead of counting the whole window.
    few = hi - lo + 1 <= max_points or not window.order_by("version")[max_points : max_points + 1]
    if few:
        _fill_rows(out, window_rows(table_id, lo, hi, expected=window.count()))
        out["findings"] = _finding_dicts(
            findings.order_by("version", "id").values_list(*FINDING_FIELDS)[:TIMELINE_MAX_FINDINGS]
        )
    else:
        base, width = _fill_buckets(out, table_id, lo, hi, max_points)
        _fill_bucket_findings(out, findings, base, width)
    # Schema/protocol/property changes, marked where they happened.
    out["changes"] = change_marks(table_id, lo, hi)
    return out


# --------------------------------------------------------------------------- rows


def window_rows(table_id: int, lo: int, hi: int, *, expected: int | None = None) -> list[list]:
    """The timeline rows (ROW_FIELDS) of versions [lo, hi], ascending, from the rollups.

    With `expected` (the number of Commit rows in the window), rows written without their
    rollups (a bulk load that did not call rebuild_rollups) are read from the commits instead.
    """
    size = rollups.rollup_size()
    packed = (
        CommitRollup.objects.filter(
            table_id=table_id, bucket_start__gte=lo // size * size, bucket_start__lte=hi
        )
        .order_by("bucket_start")
        .values_list("bucket_start", "commits", "rows")
    )
    out: list[list] = []
    for start, commits, text in _raw(packed):
        rows = unpack_rows(text)
        if len(rows) != commits:  # packed before rollups carried rows
            rows = _commit_rows(table_id, start, start + size - 1)
        if lo <= start and start + size - 1 <= hi:
            out.extend(rows)
        else:  # rows are in version order: cut the window's part out
            first = bisect.bisect_left(rows, lo, key=_version)
            out.extend(rows[first : bisect.bisect_right(rows, hi, lo=first, key=_version)])
    if expected is not None and len(out) != expected:
        return _commit_rows(table_id, lo, hi)
    return out


def unpack_rows(text: str) -> list[list]:
    """A rollup's timeline rows, a list per row (either packing), as the reference reads them."""
    return [list(row) for row in zip(*rollups.unpack_columns(text), strict=True)]


def _version(row: list) -> int:
    return row[0]


def _fill_rows(out: dict[str, Any], rows: list[list]) -> None:
    op_index: dict[str, int] = {}
    for row in rows:
        index = op_index.get(row[3])
        if index is None:
            index = op_index[row[3]] = len(op_index)
        row[3] = index
        if row[4] is not None:
            row[4] = bool(row[4])
    out["mode"] = "rows"
    out["operations"] = list(op_index)
    out["rows"] = rows


def _commit_rows(table_id: int, lo: int, hi: int) -> list[list]:
    query = (
        Commit.objects.filter(table_id=table_id, version__gte=lo, version__lte=hi)
        .order_by("version")
        .values_list(*rollups.ROW_FIELDS)
    )
    return [
        [v, rv, ts, op, None if b is None else bool(b), cc] for v, rv, ts, op, b, cc in _raw(query)
    ]


# --------------------------------------------------------------------------- buckets


def _fill_buckets(
    out: dict[str, Any], table_id: int, lo: int, hi: int, max_points: int
) -> tuple[int, int]:
    """About max_points/2 buckets [from_v, to_v, commits, max_concurrent, findings] over
    [lo, hi] (only those holding commits). Returns (base, width): bucket i starts at
    base + i * width."""
    size = rollups.rollup_size()
    unit, base, width = _bucket_grid(lo, hi, max(max_points // 2, 1), size)
    stats: dict[int, list[int]] = {}  # bucket index -> [commits, max_concurrent]
    operations: set[str] = set()
    packed = CommitRollup.objects.filter(
        table_id=table_id, bucket_start__gte=lo // size * size, bucket_start__lte=hi
    ).order_by("bucket_start")
    whole = {"bucket_start__gte": lo, "bucket_start__lte": hi - size + 1}
    edges = packed.exclude(**whole)
    if unit == 1:  # narrow buckets: every row of the window (fewer than 4 * target of them)
        edges = packed
    else:  # rollups wholly inside the window: their aggregates, or their cells
        fields = ["bucket_start", "commits", "max_concurrent", "operations"]
        for row in _raw(
            packed.filter(**whole).values_list(*fields, "cells" if unit < size else "id")
        ):
            operations.update(_json(row[3]))
            if unit == size:
                _add(stats, (row[0] - base) // width, row[1], row[2])
            else:
                _add_cells(stats, row[0], row[4], unit, base, width)
    # The partly covered rollups at the edges, row by row.
    for start, commits, text in _raw(edges.values_list("bucket_start", "commits", "rows")):
        rows = unpack_rows(text)
        if len(rows) != commits:
            rows = _commit_rows(table_id, start, start + size - 1)
        for r in rows:
            if lo <= r[0] <= hi:
                _add(stats, (r[0] - base) // width, 1, r[5])
                operations.add(r[3])
    out["mode"] = "buckets"
    out["buckets"] = [
        [max(base + b * width, lo), min(base + (b + 1) * width - 1, hi), n, most, 0]
        for b, (n, most) in sorted(stats.items())
    ]
    out["operations"] = sorted(operations)
    return base, width


# --------------------------------------------------------------------------- findings


def _fill_bucket_findings(out: dict[str, Any], findings, base: int, width: int) -> None:
    """Per bucket: the count of open findings, and the one the chart pins (the most severe,
    then the lowest version and id); only those are sent, however many the window holds."""
    counts: dict[int, int] = {}
    best: dict[int, tuple[int, int, int]] = {}
    for finding_id, version, severity in _raw(
        findings.order_by().values_list("id", "version", "severity")
    ):
        bucket = (version - base) // width
        counts[bucket] = counts.get(bucket, 0) + 1
        key = (-pin_rank(severity), version, finding_id)
        if bucket not in best or key < best[bucket]:
            best[bucket] = key
    for entry in out["buckets"]:
        entry[4] = counts.get((entry[0] - base) // width, 0)
    if not best:  # an empty IN () compiles to no SQL at all
        out["findings"] = []
        return
    pinned = Finding.objects.filter(id__in=[key[2] for key in best.values()])
    out["findings"] = _finding_dicts(
        _raw(pinned.order_by("version", "id").values_list(*FINDING_FIELDS))
    )


def change_marks(table, lo: int | None = None, hi: int | None = None) -> list[dict]:
    """Compact (version, kind, summary) marks for the timeline (the ORM query the plain SQL of
    audit.reads.timeline.sql.change_marks replaced)."""
    qs = TableChange.objects.filter(table=table)
    if lo is not None:
        qs = qs.filter(version__gte=lo)
    if hi is not None:
        qs = qs.filter(version__lte=hi)
    return list(qs.values("version", "kind", "summary")[:500])


# The bucket helpers as they were (dicts of [commits, max_concurrent] per bucket), before the
# timeline counted its buckets on a NumPy grid (audit/reads/timeline/grid.py).
def _add_cells(
    stats: dict[int, list[int]], start: int, cells: str, unit: int, base: int, width: int
) -> None:
    """Add a rollup's cells of the `unit` level to the buckets: a bucket is `width // unit`
    whole cells (`_bucket_grid`), so each is one slice's sum and max, not a Python step per
    cell (that loop was a third of a cold whole-history timeline)."""
    flat = rollups.unpack_cells(cells, unit)
    counts, maxima = flat[0::2], flat[1::2]
    per = width // unit
    first = (start - base) // unit  # the rollup's first cell, counted from base
    i = 0
    while i < len(counts):
        bucket = (first + i) // per
        j = min((bucket + 1) * per - first, len(counts))
        n = sum(counts[i:j])
        if n:
            _add(stats, bucket, n, max(maxima[i:j]))
        i = j


def _add(stats: dict[int, list[int]], bucket: int, n: int, max_concurrent: int | None) -> None:
    entry = stats.get(bucket)
    if entry is None:
        stats[bucket] = [n, max_concurrent or 0]
    else:
        entry[0] += n
        if max_concurrent and max_concurrent > entry[1]:
            entry[1] = max_concurrent
