"""A table's history as `DESCRIBE HISTORY` shows it: one page of commits, newest first, with
the filters of the commits list (`audit.reads.declared.lists.COMMITS`: the same declaration,
its validation and its SQL; only the columns shown differ) and the findings at each commit.

Paging is by page number, and stays fast at a million commits: an unfiltered page, or one
filtered by operation only, starts from the per-1,024-version rollups (their commit and
operation counts say in which block the page's first row lies: at most 1,023 versions are
skipped by OFFSET, never a million); any other filter skips through the versions it selects
(an index-only scan for the writer filters), then reads the page by version windows from
the version found, as the pages' links (a keyset) do. A time window's versions (from the
rollups' timestamps) bound every read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection

from audit.models import CommitRollup, Finding
from audit.reads import queries
from audit.reads.declared.list_sql import values_source
from audit.reads.declared.lists import COMMITS
from audit.reads.prepared import fetch_sql

PAGE_SIZE = 50
MAX_PAGE = 10**9  # past any table's commits; bounds the offset's arithmetic
# What a row of the page shows (DESCRIBE HISTORY's columns): no more, each JSON column costs
# its decoding per row.
HISTORY_FIELDS = (
    "version",
    "timestamp",
    "operation",
    "read_version",
    "isolation_level",
    "blind_append",
    "engine",
    "user_name",
    "user_id",
    "job_id",
    "engine_info",
    "provenance",
    "operation_parameters",
    "operation_metrics",
    "user_metadata",
    "metadata_changed",
)
# The commits list's declaration (its filters, their validation and conditions), read with
# more columns: one declaration of the filters, two shapes of rows. Its time window's versions
# (the list's `refine`) are applied here (`_version_bounds`): the page's version windows start
# inside them, never below conditions they cannot narrow.
HISTORY = replace(COMMITS, name="history", fields=HISTORY_FIELDS, refine=None)
# The same filters, reading the versions only (a typed page number's offset).
HISTORY_VERSIONS = replace(HISTORY, name="history-versions", fields=("version",))
# Filters the rollups count by: any other one skips through the rows it selects.
_ROLLUP_FILTERS = frozenset({"operation"})


@dataclass
class HistoryPage:
    """One page: `rows` (HISTORY_FIELDS dicts, each with `findings`), its `number`, whether
    a next page exists, and `total` (the rows the filters select; None when counting them
    would read them all)."""

    rows: list[dict[str, Any]]
    number: int
    has_next: bool
    total: int | None = None
    filters: dict[str, Any] = field(default_factory=dict)

    @property
    def pages(self) -> int | None:
        if self.total is None:
            return None
        return max(1, -(-self.total // PAGE_SIZE))


def history_page(
    table_id: int,
    query_params: Any,
    number: int,
    *,
    before: int | None = None,
    after: int | None = None,
    latest: int | None = None,
) -> HistoryPage:
    """Page `number` (1: the newest commits) of the table's commits the filters of
    `query_params` select (a ValidationError, the API's 400, for a bad one). `before` /
    `after`: the page's links' keyset (the versions below the previous page's last row, or
    above the next page's first): read from there, whatever the filter, with no offset.
    `latest`: the table's latest stored version (the first window's top)."""
    number = min(max(number, 1), MAX_PAGE)
    cleaned = HISTORY.clean(query_params)
    rows = HISTORY.rows(query_params, table_id=table_id)
    bounds = _version_bounds(table_id, cleaned)
    by_rollups = set(cleaned) <= _ROLLUP_FILTERS
    keyset = before is not None or after is not None
    if not keyset and number > 1 and not by_rollups and latest is not None:
        # A typed page number: its first row found by an offset over the versions alone (an
        # index-only scan for the writer filters), the page read from there as its link would.
        first = _version_at(query_params, table_id, bounds, (number - 1) * PAGE_SIZE)
        if first is None:
            return HistoryPage([], number, False, None, cleaned)
        before, keyset = first + 1, True
    if keyset or (number == 1 and not by_rollups and latest is not None):
        total = _rollup_total(table_id, cleaned.get("operation")) if by_rollups else None
        if after is not None:
            found = _windows(rows, after + 1, latest, bounds, older=False)[::-1]
            has_next = True  # the row at `after` is older than this page
        else:
            top = before if before is not None else (latest or 0) + 1
            found = _windows(rows, top, latest, bounds, older=True)
            has_next = len(found) > PAGE_SIZE
        page = found[:PAGE_SIZE]
        _add_findings(table_id, page)
        return HistoryPage(page, number, has_next, total, cleaned)
    return _numbered_page(table_id, query_params, cleaned, rows, bounds, number, by_rollups)


def _numbered_page(
    table_id: int,
    query_params: Any,
    cleaned: dict[str, Any],
    rows: Any,
    bounds: tuple[int, int] | None,
    number: int,
    by_rollups: bool,
) -> HistoryPage:
    """Page `number` by an offset: the rollups skip whole blocks (by_rollups), the offset
    left is taken over versions alone (an index-only scan: skipping up to 1,023 whole rows of
    a block was ~1.5 ms of SQLite's CPU), then the page is read from the version found."""
    rows = rows.order_by("-version")
    if bounds is not None:
        rows = rows.filter(version__gt=bounds[0] - 1).filter(version__lt=bounds[1] + 1)
    offset, total, below = (number - 1) * PAGE_SIZE, None, None
    if by_rollups:
        start = _rollup_start(table_id, offset, cleaned.get("operation"))
        if start is None:
            return HistoryPage([], number, False, 0, cleaned)
        below, offset, total = start
    if offset:
        first = _version_at(query_params, table_id, bounds, offset, below)
        if first is None:
            return HistoryPage([], number, False, total, cleaned)
        below = first + 1
    if below is not None:  # one upper bound: SQLite ranges the index on one of them only
        rows = rows.filter(version__lt=below)
    found = rows[: PAGE_SIZE + 1]
    page = found[:PAGE_SIZE]
    _add_findings(table_id, page)
    return HistoryPage(page, number, len(found) > PAGE_SIZE, total, cleaned)


def _version_at(
    query_params: Any,
    table_id: int,
    bounds: tuple[int, int] | None,
    offset: int,
    below: int | None = None,
) -> int | None:
    """The version of the row at `offset` of the filtered rows (below `below`), newest first;
    None past the last. Only versions are read: with the writer filters (user, job) the (table, version,
    user_name, user_id, job_id) index answers alone (16 ms -> 3 ms of SQLite's CPU for page
    20 of a 2% user at 1M commits: the table's rows are ~1 KB each, their index entries ~60 B)."""
    versions = HISTORY_VERSIONS.rows(query_params, table_id=table_id).order_by("-version")
    if bounds is not None:
        versions = versions.filter(version__gt=bounds[0] - 1).filter(version__lt=bounds[1] + 1)
    if below is not None:
        versions = versions.filter(version__lt=below)
    found = versions[offset : offset + 1]
    return found[0]["version"] if found else None


FIRST_WINDOW = 4096  # versions; each next window four times wider


def _version_bounds(table_id: int, cleaned: dict[str, Any]) -> tuple[int, int] | None:
    """The versions [lo, hi] a since/until window can hold (queries.commit_time_bounds), None
    when there is no window or the rollups cannot tell."""
    since, until = cleaned.get("since"), cleaned.get("until")
    if since is None and until is None:
        return None
    return queries.commit_time_bounds(table_id, since, until)


def _windows(
    rows: Any,
    start: int,
    latest: int | None,
    bounds: tuple[int, int] | None,
    *,
    older: bool,
) -> list[dict[str, Any]]:
    """The PAGE_SIZE + 1 rows nearest `start` (below it, newest first, when `older`; from it
    up, oldest first, else), read by version windows growing fourfold: a filter the indexes
    cannot serve (a user, a job, metadata text) then reads about the rows its page needs.
    One query over all versions lets PostgreSQL's planner, expecting few matches, scan and
    sort the whole table for a common value (200 ms at 100,000 commits). `bounds`: the versions
    a time window can hold (inclusive): the windows stay inside them; a window's own version
    conditions are the only ones on the version index (SQLite ranges it on one lower bound
    only: with the time window's too, each window scanned the whole day, 4 ms of CPU each)."""
    found: list[dict[str, Any]] = []
    span, want = FIRST_WINDOW, PAGE_SIZE + 1
    floor, ceiling = bounds if bounds is not None else (0, None)
    if older:
        hi = start if ceiling is None else min(start, ceiling + 1)  # exclusive
        while hi > floor and len(found) < want:
            lo = max(hi - span, floor)
            window = rows.filter(version__lt=hi).filter(version__gt=lo - 1)
            found += window.order_by("-version")[: want - len(found)]
            hi, span = lo, span * 4
        return found
    lo, top = max(start, floor), latest if latest is not None else start  # inclusive
    if ceiling is not None:
        top = min(top, ceiling)
    while lo <= top and len(found) < want:
        hi = lo + span
        window = rows.filter(version__gt=lo - 1).filter(version__lt=hi)
        found += window.order_by("version")[: want - len(found)]
        lo, span = hi, span * 4
    return found[:PAGE_SIZE]


def _rollup_total(table_id: int, operations: list[str] | None) -> int:
    return _rollup_sum(table_id, operations)[0]


def _rollup_sum(table_id: int, operations: list[str] | None) -> tuple[int, int | None]:
    """(rows the filter selects, the oldest block's start: None without rollups)."""
    wanted = _plain_keys(operations)
    if wanted is None:
        counted = _decoded_counts(table_id, operations or [])
        return sum(n for _, n in counted), (counted[-1][0] if counted else None)
    vendor, n_ops = connection.vendor, len(wanted)
    rows = fetch_sql(
        ("history-rollup-sum", vendor, n_ops),
        lambda: _rollup_sql(_ROLLUP_SUM, vendor, n_ops),
        [_json_key(vendor, op) for op in wanted] + [table_id],
    )
    total, oldest = rows[0]
    return int(total or 0), oldest


def _plain_keys(operations: list[str] | None) -> list[str] | None:
    """The distinct operations asked for, None when one is no plain JSON path key (a quote or
    a backslash in its name: its counts are decoded in Python)."""
    wanted = list(dict.fromkeys(operations or ()))
    if any('"' in op or "\\" in op for op in wanted):
        return None
    return wanted


def _decoded_counts(table_id: int, operations: list[str]) -> list[tuple[int, int]]:
    """(block start, rows selected in it) of every rollup block, newest first, decoded here."""
    blocks = CommitRollup.objects.filter(table_id=table_id).order_by("-bucket_start")
    return [
        (start, sum(n for op, n in (ops or {}).items() if op in operations))
        for start, ops in blocks.values_list("bucket_start", "operations")
    ]


def _json_key(vendor: str, op: str) -> str:
    return op if vendor == "postgresql" else f'$."{op}"'


_TABLE = CommitRollup._meta.db_table
_ROLLUP_SUM = f"SELECT SUM({{n}}), MIN(bucket_start) FROM {_TABLE} WHERE table_id = %s"
# Each block's count, newest first (the operations' counts read from the JSON by the database:
# decoding ~1,000 objects in Python was ~4 ms). Window functions finding the block in SQL cost
# SQLite more (0.7-2.7 ms) than this read and a loop in Python (~0.4 ms).
_ROLLUP_COUNTS = (
    f"SELECT bucket_start, {{n}} FROM {_TABLE} WHERE table_id = %s ORDER BY bucket_start DESC"
)


def _rollup_sql(template: str, vendor: str, n_operations: int) -> str:
    """`template` counting the rows of the operations asked for in each block (their counts
    read from the rollup's JSON by the database), or every commit."""
    if not n_operations:
        counted = "commits"
    elif vendor == "postgresql":
        counted = " + ".join(["COALESCE((operations ->> %s)::bigint, 0)"] * n_operations)
    else:
        counted = " + ".join(["COALESCE(json_extract(operations, %s), 0)"] * n_operations)
    return template.format(n=f"({counted})")


def _rollup_start(
    table_id: int, offset: int, operations: list[str] | None
) -> tuple[int | None, int, int] | None:
    """(versions below, rows to skip below them, rows selected in all) for the row at `offset`
    of the newest-first order: the rollup blocks above the one holding it are skipped whole.
    None when there are no rollups (a table with no commits stored)."""
    if offset == 0:  # the first page: from the newest row (none: below every block)
        total, oldest = _rollup_sum(table_id, operations)
        if oldest is None:
            return None
        return (None, 0, total) if total else (oldest, 0, 0)
    wanted = _plain_keys(operations)
    if wanted is None:
        counted = _decoded_counts(table_id, operations or [])
    else:
        vendor, n_ops = connection.vendor, len(wanted)
        rows = fetch_sql(
            ("history-rollup-counts", vendor, n_ops),
            lambda: _rollup_sql(_ROLLUP_COUNTS, vendor, n_ops),
            [_json_key(vendor, op) for op in wanted] + [table_id],
        )
        counted = [(start, int(n or 0)) for start, n in rows]
    if not counted:
        return None
    return _decoded_start(counted, offset, sum(n for _, n in counted))


def _decoded_start(
    counted: list[tuple[int, int]], offset: int, total: int
) -> tuple[int | None, int, int]:
    skipped, below = 0, None
    for start, n in counted:
        if skipped + n > offset:
            break
        skipped += n
        below = start  # every row of this block and above is skipped
    else:
        return (counted[-1][0], 0, total)  # past the last row: an empty page
    return below, offset - skipped, total


def _add_findings(table_id: int, rows: list[dict[str, Any]]) -> None:
    """Each row's findings found at its version (id, kind, severity, status), worst first."""
    for row in rows:
        row["findings"] = []
    if not rows:
        return
    by_version = {row["version"]: row for row in rows}
    # SQL compiled once per process (a queryset built and compiled per page was ~0.5 ms).
    found = _FINDINGS.query([("table", "=", table_id), ("version", "in", list(by_version))])
    for finding in found.order_by("version", "id")[:]:
        by_version[finding["version"]]["findings"].append(finding)


_FINDINGS = values_source(Finding, ("id", "version", "kind", "severity", "status", "summary"))
