"""Whole-history analyses of a registered table, for the API and the dashboard.

`table_analysis(table)` reads the table's log up to the version stored in the database,
audits it (without reading data files: the per-commit findings with witnesses are already
stored by the ingest), and returns the isolation settings, the partitioning recommendations
and the hotspots. The result is cached under (table.id, table.last_seen_version): the log
below a stored version never changes, so a cached result is exact until new commits are
stored, and repeated requests cost one cache read.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import BigIntegerField, Count, ExpressionWrapper, F, Max, Value

from audit import models as audit_models
from audit.core.audit import audit_history
from audit.core.isolation import isolation_settings
from audit.core.partitioning import recommend_partitioning
from audit.core.summary import History, load_history
from audit.core.writers import writer_telemetry
from audit.health_queries import change_marks
from audit.ingest import json_safe
from audit.models import Commit, CommitRollup, Finding, Table
from audit.paths import check_registered

CACHE_PREFIX = "audit:analysis:v2"  # v2: + "writers"
# Histories are large; keep only a couple per process for the explain endpoint.
_HISTORIES: OrderedDict[tuple[str, int | None], History] = OrderedDict()
_HISTORIES_MAX = 2
_HISTORIES_LOCK = threading.Lock()


def _table_key(table: Table) -> str:
    # The URI too: a table removed and registered again may get the same id (SQLite).
    return f"{table.id}:{hashlib.sha1(table.uri.encode()).hexdigest()[:12]}"


def analysis_cache_key(table: Table) -> str:
    return f"{CACHE_PREFIX}:{_table_key(table)}:{table.last_seen_version}"


def table_history(table: Table) -> History:
    """The table's history up to its stored version (DeltaAuditError if unreadable)."""
    key = (_table_key(table), table.last_seen_version)
    with _HISTORIES_LOCK:
        if key in _HISTORIES:
            _HISTORIES.move_to_end(key)
            return _HISTORIES[key]
    history = load_history(check_registered(table.uri), end=table.last_seen_version)
    with _HISTORIES_LOCK:
        _HISTORIES[key] = history
        while len(_HISTORIES) > _HISTORIES_MAX:
            _HISTORIES.popitem(last=False)
    return history


def table_analysis(table: Table) -> dict[str, Any]:
    """Isolation settings, partitioning recommendations and hotspots of `table`.

    Returns {"table", "version", "computed_at", "isolation_settings", "recommendations",
    "hotspots", "writers"}. Raises DeltaAuditError when the log cannot be read.
    """
    key = analysis_cache_key(table)
    cached = cache.get(key) if table.last_seen_version is not None else None
    if cached is not None:
        return cached
    history = table_history(table)
    result = audit_history(history, check_data=False)
    analysis = json_safe(
        {
            "table": table.id,
            "version": history.state.version,
            "computed_at": int(time.time() * 1000),
            "isolation_settings": isolation_settings(history, result),
            "recommendations": recommend_partitioning(history, result),
            "hotspots": [h.as_dict() for h in result.hotspots],
            "writers": writer_telemetry(history, result.commits),
        }
    )
    if table.last_seen_version is not None:  # nothing stored yet: the log is still moving
        cache.set(key, analysis, settings.AUDIT_API_ANALYSIS_CACHE_SECONDS)
    return analysis


# --------------------------------------------------------------------------- timeline

TIMELINE_COLUMNS = [
    "version",
    "read_version",
    "timestamp",
    "op",
    "blind_append",
    "concurrent_count",
]
TIMELINE_MAX_FINDINGS = 10_000


def table_timeline(
    table: Table,
    from_version: int | None = None,
    to_version: int | None = None,
    max_points: int = 2000,
) -> dict[str, Any]:
    """The timeline JSON contract (see /api/docs/): rows, or SQL-aggregated buckets.

    Every query is a range scan of a (table, version) index. "rows" when the window holds at
    most `max_points` commits, else about max_points/2 version buckets (zoomed out: whole
    CommitRollup buckets, see `_fill_buckets`). Cached briefly: stored commits never change,
    findings change only when the ingest runs.
    """
    findings_at = table.table_findings_at.timestamp() if table.table_findings_at else None
    key = (
        f"audit:timeline:v2:{_table_key(table)}:{table.last_seen_version}:{findings_at}:"
        f"{from_version}:{to_version}:{max_points}"
    )
    cached = cache.get(key)
    if cached is None:
        cached = _timeline(table, from_version, to_version, max_points)
        cache.set(key, cached, settings.AUDIT_API_TIMELINE_CACHE_SECONDS)
    return cached


def _timeline(
    table: Table, from_version: int | None, to_version: int | None, max_points: int
) -> dict[str, Any]:
    commits = Commit.objects.filter(table_id=table.id)
    versions = commits.values_list("version", flat=True)
    first = versions.order_by("version").first()
    latest = versions.order_by("-version").first()
    out: dict[str, Any] = {
        "table": table.id,
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
    window = commits.filter(version__gte=lo, version__lte=hi)
    findings = Finding.objects.filter(
        table_id=table.id, status=Finding.Status.OPEN, version__gte=lo, version__lte=hi
    )
    # Versions are (nearly) contiguous: a short span needs no count; else probe one row past
    # max_points instead of counting the whole window.
    few = (
        hi - lo + 1 <= max_points
        or not window.order_by("version").values_list("version", flat=True)[
            max_points : max_points + 1
        ]
    )
    if few:
        _fill_rows(out, window)
    else:
        _fill_buckets(out, table.id, findings, lo, hi, max_points)
    out["findings"] = [
        {
            "id": f[0],
            "version": f[1],
            "kind": f[2],
            "severity": f[3],
            "confirmed": f[4],
            "related_versions": f[5],
        }
        for f in findings.order_by("version", "id").values_list(
            "id", "version", "kind", "severity", "confirmed", "related_versions"
        )[:TIMELINE_MAX_FINDINGS]
    ]
    # Schema/protocol/property changes (issue 18), marked where they happened.
    out["changes"] = change_marks(table, lo, hi)
    return out


def _fill_rows(out: dict[str, Any], window) -> None:
    query = window.order_by("version").values_list(
        "version", "read_version", "timestamp", "operation", "blind_append", "concurrent_count"
    )
    # Up to 10,000 rows of plain scalars: a raw cursor skips Django's per-value converters,
    # which cost more than the query itself.
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    op_index: dict[str, int] = {}
    rows = []
    for version, read_version, ts, op, blind, concurrent in fetched:
        index = op_index.get(op)
        if index is None:
            index = op_index[op] = len(op_index)
        rows.append(
            [version, read_version, ts, index, None if blind is None else bool(blind), concurrent]
        )
    out["mode"] = "rows"
    out["operations"] = list(op_index)
    out["rows"] = rows


def _bucket_of(lo: int, width: int) -> ExpressionWrapper:
    # Integer division on both SQLite and PostgreSQL (bigint / bigint).
    return ExpressionWrapper(
        (F("version") - Value(lo)) / Value(width), output_field=BigIntegerField()
    )


def _fill_buckets(
    out: dict[str, Any], table_id: int, findings, lo: int, hi: int, max_points: int
) -> None:
    """About max_points/2 buckets over [lo, hi], each [from_v, to_v, commits, max_concurrent,
    findings]; only buckets holding commits are listed.

    Buckets of at least half a rollup are widened to whole rollups (ROLLUP_SIZE versions,
    aligned to rollup boundaries; the first and last are clipped to the window) and summed from
    CommitRollup rows, plus the Commit rows of the partly covered rollups at the two edges: a
    whole-history view reads ~1,000 rollups instead of every commit. Narrower buckets aggregate
    the window's Commit rows in SQL (at most ROLLUP_SIZE/2 * max_points/2 of them).
    """
    size = audit_models.ROLLUP_SIZE  # read at call time: tests shrink it
    target = max(max_points // 2, 1)
    width = -(-(hi - lo + 1) // target)  # ceil
    if 2 * width >= size:
        # Counted from the rollup boundary at or below lo, so there are at most `target`
        # buckets; a window starting on a rollup keeps the buckets it had before rollups.
        base = lo // size * size
        width = -(-(hi - base + 1) // target)
        width = -(-width // size) * size
    else:
        base = lo
    stats: dict[int, list[int]] = {}  # bucket index -> [commits, max_concurrent]
    operations: set[str] = set()
    covered = _whole_rollups(lo, hi, size) if width % size == 0 else None
    from_commits = [(lo, hi)]  # version ranges aggregated from Commit rows
    if covered is not None:
        for start, n, max_concurrent, ops in _rollups(table_id, covered, size).values_list(
            "bucket_start", "commits", "max_concurrent", "operations"
        ):
            _add(stats, (start - base) // width, n, max_concurrent)
            operations.update(ops)
        # The edges, each under one rollup; two tight ranges (a NOT BETWEEN would scan it all).
        from_commits = [(lo, covered[0] - 1), (covered[1] + 1, hi)]
    for first, last in from_commits:
        if first > last:
            continue
        # Grouped by operation too: the legend's names come with the counts, no second scan.
        per_bucket = (
            Commit.objects.filter(table_id=table_id, version__gte=first, version__lte=last)
            .order_by()
            .annotate(bucket=_bucket_of(base, width))
            .values("bucket", "operation")
            .annotate(n=Count("version"), mc=Max("concurrent_count"))
            .values_list("bucket", "operation", "n", "mc")
        )
        for bucket, operation, n, max_concurrent in per_bucket:
            _add(stats, bucket, n, max_concurrent)
            operations.add(operation)
    finding_counts = dict(
        findings.order_by()
        .annotate(bucket=_bucket_of(base, width))
        .values("bucket")
        .annotate(n=Count("id"))
        .values_list("bucket", "n")
    )
    out["mode"] = "buckets"
    out["buckets"] = [
        [
            max(base + bucket * width, lo),
            min(base + (bucket + 1) * width - 1, hi),
            n,
            max_concurrent,
            finding_counts.get(bucket, 0),
        ]
        for bucket, (n, max_concurrent) in sorted(stats.items())
    ]
    out["operations"] = sorted(operations)


def _add(stats: dict[int, list[int]], bucket: int, n: int, max_concurrent: int | None) -> None:
    entry = stats.setdefault(bucket, [0, 0])
    entry[0] += n
    entry[1] = max(entry[1], max_concurrent or 0)


def _whole_rollups(lo: int, hi: int, size: int) -> tuple[int, int] | None:
    """The versions [a, b] of the rollups lying wholly inside [lo, hi], or None."""
    first = -(-lo // size) * size
    last = (hi + 1) // size * size - 1
    return (first, last) if first <= last else None


def _rollups(table_id: int, covered: tuple[int, int], size: int):
    return CommitRollup.objects.filter(
        table_id=table_id, bucket_start__gte=covered[0], bucket_start__lte=covered[1] - size + 1
    ).order_by()
