"""The timeline's queries, each compiled once per process (the cold path).

A timeline request that misses its cache ran up to nine ORM queries; building and compiling
them was about a third of its CPU (profiled at 200k and 1M commits). Each is the queryset it
replaces, compiled with placeholder arguments by `audit.reads.prepared.PreparedRows` (same SQL, same
rows), except where noted. Rows come back as the driver returns them (booleans as 0/1 and JSON
as text on SQLite): `audit.reads.timeline.window` converts them as it did.
"""

from __future__ import annotations

from django.db import connection

from audit.core.vocab import SEVERITY_ORDER
from audit.health.models import TableChange
from audit.models import OPEN, Commit, CommitRollup, Finding
from audit.reads.prepared import PreparedRows, fetch_sql

FINDING_FIELDS = ("id", "version", "kind", "severity", "confirmed", "related_versions")
# The rows-mode findings list is cut here (timeline.TIMELINE_MAX_FINDINGS).
MAX_FINDINGS = 10_000
MAX_CHANGES = 500


def _commits(table_id, lo, hi):
    return Commit.objects.filter(table_id=table_id, version__gte=lo, version__lte=hi)


def _rollups(table_id, first_start, hi):
    return CommitRollup.objects.filter(
        table_id=table_id, bucket_start__gte=first_start, bucket_start__lte=hi
    ).order_by("bucket_start")


def _open_findings(table_id, lo, hi):
    return Finding.objects.filter(OPEN, table_id=table_id, version__gte=lo, version__lte=hi)


def version_span(table_id: int) -> tuple[int | None, int | None]:
    """(first stored version, latest stored version) of a table: two index probes."""
    ((first, latest),) = fetch_sql("version_span", _span_sql, [table_id, table_id])
    return first, latest


def has_more_than(table_id: int, lo: int, hi: int, n: int) -> bool:
    """Whether versions [lo, hi] hold more than `n` commits: one row probed past the n-th."""
    return bool(fetch_sql("has_more_than", _past_sql, [table_id, lo, hi, n]))


def count_commits(table_id: int, lo: int, hi: int) -> int:
    """`Commit.objects.filter(table_id=, version__gte=lo, version__lte=hi).count()`."""
    ((count,),) = fetch_sql("count_commits", _count_sql, [table_id, lo, hi])
    return count


def _span_sql() -> str:
    table, version = _commit_columns()
    return (
        f"SELECT (SELECT MIN({version}) FROM {table} WHERE table_id = %s), "
        f"(SELECT MAX({version}) FROM {table} WHERE table_id = %s)"
    )


def _past_sql() -> str:
    table, version = _commit_columns()
    return (
        f"SELECT {version} FROM {table} WHERE table_id = %s AND {version} >= %s "
        f"AND {version} <= %s ORDER BY {version} LIMIT 1 OFFSET %s"
    )


def _count_sql() -> str:
    table, version = _commit_columns()
    return (
        f"SELECT COUNT(*) FROM {table} WHERE table_id = %s AND {version} >= %s AND {version} <= %s"
    )


def _commit_columns() -> tuple[str, str]:
    """The commits table's name and its quoted version column."""
    return Commit._meta.db_table, connection.ops.quote_name("version")


commit_rows = PreparedRows(
    lambda table_id, lo, hi: (
        _commits(table_id, lo, hi)
        .order_by("version")
        .values_list(
            "version", "read_version", "timestamp", "operation", "blind_append", "concurrent_count"
        )
    ),  # fmt: skip
    3,
)
rollup_rows = PreparedRows(
    lambda table_id, first_start, hi: _rollups(table_id, first_start, hi).values_list(
        "bucket_start", "commits", "rows"
    ),
    3,
)
# Rollups wholly inside [lo, hi]: their aggregates and either their cells or nothing more.
_WHOLE = ("bucket_start", "commits", "max_concurrent", "operations")
whole_rollups = PreparedRows(
    lambda table_id, first_start, hi, lo, last_whole: (
        _rollups(table_id, first_start, hi)
        .filter(bucket_start__gte=lo, bucket_start__lte=last_whole)
        .values_list(*_WHOLE, "id")
    ),
    5,
)
whole_rollup_cells = PreparedRows(
    lambda table_id, first_start, hi, lo, last_whole: (
        _rollups(table_id, first_start, hi)
        .filter(bucket_start__gte=lo, bucket_start__lte=last_whole)
        .values_list(*_WHOLE, "cells")
    ),
    5,
)
# The partly covered rollups at the window's edges.
edge_rollups = PreparedRows(
    lambda table_id, first_start, hi, lo, last_whole: (
        _rollups(table_id, first_start, hi)
        .exclude(bucket_start__gte=lo, bucket_start__lte=last_whole)
        .values_list("bucket_start", "commits", "rows")
    ),
    5,
)
# The same edges with their aggregates and cells (buckets of a stored level: the cells that lie
# inside the window count the edge without decoding its rows).
edge_rollup_cells = PreparedRows(
    lambda table_id, first_start, hi, lo, last_whole: (
        _rollups(table_id, first_start, hi)
        .exclude(bucket_start__gte=lo, bucket_start__lte=last_whole)
        .values_list("bucket_start", "commits", "operations", "cells")
    ),
    5,
)
window_findings = PreparedRows(
    lambda table_id, lo, hi: (
        _open_findings(table_id, lo, hi)
        .order_by("version", "id")
        .values_list(*FINDING_FIELDS)[:MAX_FINDINGS]
    ),
    3,
)
_changes = PreparedRows(
    lambda table_id, lo, hi: TableChange.objects.filter(
        table_id=table_id, version__gte=lo, version__lte=hi
    ).values_list("version", "kind", "summary")[:MAX_CHANGES],
    3,
)


def change_marks(table_id: int, lo: int, hi: int) -> list[dict]:
    """Compact (version, kind, summary) marks for the timeline: the rows and dicts of the ORM
    query it replaced (tests/app/timeline_reference.py)."""
    return [
        {"version": version, "kind": kind, "summary": summary}
        for version, kind, summary in _changes(table_id, lo, hi)
    ]


# The pinning rule (the most severe, then the lowest version; the lowest id among those) as one
# integer per finding, so a grouped MIN finds each bucket's pinned (severity, version) in SQL:
# (ranks above the finding's) * 2**40 + version. Versions are far below 2**40.
_VERSION_BITS = 2**40


def _rank_sql(alias: str) -> str:
    """pin_rank(severity) in SQL: the vocabulary's rank + 1, 0 for an unknown severity."""
    whens = " ".join(
        f"WHEN '{severity.value}' THEN {severity.rank + 1}" for severity in SEVERITY_ORDER
    )
    return f"(CASE {alias}.severity {whens} ELSE 0 END)"


def _bucket_pins_sql() -> str:
    table = connection.ops.quote_name(Finding._meta.db_table)
    version = connection.ops.quote_name("version")
    top = len(SEVERITY_ORDER)
    return (
        f"WITH g AS (SELECT (f.{version} - %s) / %s AS bucket, COUNT(*) AS n, "
        f"MIN(({top} - {_rank_sql('f')}) * {_VERSION_BITS} + f.{version}) AS k "
        f"FROM {table} f WHERE f.table_id = %s AND f.status = %s "
        f"AND f.{version} >= %s AND f.{version} <= %s GROUP BY 1) "
        f"SELECT g.bucket, g.n, p.id, p.{version}, p.kind, p.severity, p.confirmed, "
        f"p.related_versions FROM g JOIN {table} p ON p.table_id = %s AND p.status = %s "
        f"{_pins_window(version)}"
        f"AND p.{version} = g.k %% {_VERSION_BITS} "
        f"AND {_rank_sql('p')} = {top} - g.k / {_VERSION_BITS}"
    )  # "%%": the modulo, not a placeholder


def _pins_window(version: str) -> str:
    """The window again on the pins' side, on PostgreSQL only. Without it PostgreSQL hashed
    every open finding of the table to join the pins (their version is computed, so it saw no
    index to probe: 2.5 ms of a 20,000-version window at 5,000 findings). SQLite, given it,
    scanned the window's range for each bucket instead of looking each pin up (360 ms for the
    whole history)."""
    if connection.vendor != "postgresql":
        return ""
    return f"AND p.{version} >= %s AND p.{version} <= %s "


def bucket_pins(table_id: int, lo: int, hi: int, base: int, width: int) -> list[tuple]:
    """Per bucket (version - base) // width of [lo, hi] holding open findings: (bucket, open
    findings, *FINDING_FIELDS) of each candidate for its pin, the findings at its most severe
    rank's lowest version (one row unless several share that version and severity; the caller
    keeps the lowest id). The chart's pins without reading every open finding of the window."""
    status = Finding.Status.OPEN.value
    params = [base, width, table_id, status, lo, hi, table_id, status]
    if connection.vendor == "postgresql":
        params += [lo, hi]  # _pins_window
    return fetch_sql("bucket_pins", _bucket_pins_sql, params)
