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

from audit.core.audit import audit_history
from audit.core.isolation import isolation_settings
from audit.core.partitioning import recommend_partitioning
from audit.core.summary import History, load_history
from audit.ingest import json_safe
from audit.models import Commit, Finding, Table
from audit.paths import check_registered

CACHE_PREFIX = "audit:analysis:v1"
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
    "hotspots"}. Raises DeltaAuditError when the log cannot be read.
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
    most `max_points` commits, else about max_points/2 equal-width version buckets. Cached
    briefly: stored commits never change, findings change only when the ingest runs.
    """
    findings_at = table.table_findings_at.timestamp() if table.table_findings_at else None
    key = (
        f"audit:timeline:v1:{_table_key(table)}:{table.last_seen_version}:{findings_at}:"
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
        _fill_buckets(out, window, findings, lo, hi, max_points)
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


def _fill_buckets(out: dict[str, Any], window, findings, lo: int, hi: int, max_points: int):
    target = max(max_points // 2, 1)
    width = -(-(hi - lo + 1) // target)  # ceil
    per_bucket = (
        window.order_by()
        .annotate(bucket=_bucket_of(lo, width))
        .values("bucket")
        .annotate(n=Count("version"), mc=Max("concurrent_count"))
        .order_by("bucket")
        .values_list("bucket", "n", "mc")
    )
    finding_counts = dict(
        findings.order_by()
        .annotate(bucket=_bucket_of(lo, width))
        .values("bucket")
        .annotate(n=Count("id"))
        .values_list("bucket", "n")
    )
    out["mode"] = "buckets"
    out["buckets"] = [
        [
            lo + bucket * width,
            min(lo + (bucket + 1) * width - 1, hi),
            n,
            mc or 0,
            finding_counts.get(bucket, 0),
        ]
        for bucket, n, mc in per_bucket
    ]
    out["operations"] = sorted(window.order_by().values_list("operation", flat=True).distinct())
