"""What the dashboard's pages read, declared once here (the views only ask): the findings
list's rows and count, a finding with what its page shows, the overview's tables in their
sorts. Each is compiled once per shape (`audit.reads.prepared`): building and compiling the
ORM queries was most of a cold page's CPU.

`tests/app/test_findings_page_rows.py` and `tests/app/overview_reference.py` hold the ORM
references the pages equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q, QuerySet

from audit.models import Finding, Table
from audit.reads import queries
from audit.reads.prepared import PLACEHOLDERS, PreparedModels, PreparedValues
from audit.reads.visible import finding_or_404


@dataclass(frozen=True)
class PageRead:
    """A page listing tables, declared with what it shows of every table (`columns`): its
    cached content's generation (`cache.page_generation`) is a digest of those columns and of
    every table's id and findings generation, so it changes whenever the page could."""

    name: str
    columns: tuple[str, ...]


# --------------------------------------------------------------------------- findings

# Every table's identity, name and findings (the table filter shows names and URIs).
FINDINGS_PAGE = PageRead("findings", ("name", "uri", "project_id"))

# What a row reads: the page loads only these, not the witness, details, explanation or the
# table's settings (a third of a page's CPU went to those).
ROW_FIELDS = (
    "id", "table", "kind", "severity", "version", "confirmed", "summary", "status",
    "acknowledged_at",
)  # fmt: skip
TABLE_ROW_FIELDS = (*ROW_FIELDS, "table__name", "table__uri")
# The same as `.values()` names (FindingRow): the findings page builds no model instances.
ROW_VALUES = ("table_id", *(f for f in ROW_FIELDS if f != "table"))
TABLE_ROW_VALUES = (*ROW_VALUES, "table__name", "table__uri")


def findings_rows(projects: frozenset[int] | None, status: str, filters: dict[str, Any]) -> Any:
    """The findings page's rows (`.values()` dicts, newest first) of the tables of `projects`
    (None: every table) with `status` and `filters` (table, kind, severity), as `Paginator`
    reads them (count, a page's slice)."""
    filters = dict(filters)
    if projects is not None and (not projects or len(projects) > len(PLACEHOLDERS)):
        return _rows_query((False, status, filters), *sorted(projects or ()))
    table = filters.pop("table", None)
    key = (projects is None, status, table is not None, tuple(sorted(filters.items())))
    ids = [*([] if table is None else [table.pk]), *sorted(projects or ())]
    return _PreparedList(key, ids)


def _rows_query(key: tuple, *ids: int) -> Any:
    """The list's `.values()` query: key = (staff, status, filters) or, from `_PreparedList`,
    (staff, status, has a table, kind/severity items, page start, page stop) with the table's
    id first among `ids`."""
    if len(key) == 3:
        staff, status, filters = key
    else:
        staff, status, has_table, items, start, stop = key
        filters = {**({"table": ids[0]} if has_table else {}), **dict(items)}
        ids = ids[1:] if has_table else ids
    visible = Finding.objects.all()
    if not staff:
        visible = visible.filter(table__project_id__in=list(ids))
    fields = ROW_FIELDS if "table" in filters else TABLE_ROW_FIELDS
    rows = queries.filtered_findings(visible, filters, status, fields)
    rows = rows.values(*(ROW_VALUES if "table" in filters else TABLE_ROW_VALUES))
    return rows if len(key) == 3 or start is None else rows[start:stop]


# The list's rows and count compiled once per filter shape, page and number of projects:
# building and compiling both ORM queries was ~1.5 ms of each cold findings page.
_prepared_rows = PreparedValues(_rows_query)


class _PreparedList:
    """What `Paginator` reads of the list (count, a page's slice), by `_prepared_rows`."""

    def __init__(self, key: tuple, ids: list[int]) -> None:
        self._key, self._ids = key, ids

    def count(self) -> int:
        staff, status, has_table, items = self._key
        filters = dict(items)
        if status == "open" and set(filters) <= {"severity"}:
            # Needing attention, by table or severity only: the counts the database keeps.
            table = self._ids[0] if has_table else None
            projects = None if staff else frozenset(self._ids[1 if has_table else 0 :])
            return queries.attention_count(table, projects, filters.get("severity"))
        return _prepared_rows.count((*self._key, None, None), *self._ids)

    def __getitem__(self, window: slice) -> list[dict]:
        if window.stop <= window.start:
            return []  # an empty slice compiles to no SQL at all
        return _prepared_rows((*self._key, window.start, window.stop), *self._ids)


def finding_shown(who: Any, finding_id: int, flips: int) -> tuple[Finding, list]:
    """A finding of the reader's tables with its table and acknowledger, and its `flips`
    latest state changes (Http404 for another project's finding, as for none)."""
    finding = finding_or_404(who, finding_id, "table", "acknowledged_by")
    return finding, list(finding.flips.all()[:flips])


def finding_to_change(who: Any, finding_id: int) -> Finding:
    """A finding of the reader's tables, to acknowledge or re-open (Http404 otherwise)."""
    return finding_or_404(who, finding_id)


# --------------------------------------------------------------------------- overview

# What the overview shows of a table (its id and findings generation are always in the key:
# the open counts and the totals).
OVERVIEW_PAGE = PageRead(
    "overview",
    (
        "name", "uri", "status", "last_error", "risk", "last_seen_version",
        "latest_version_in_log", "first_available_version", "last_commit_at", "last_tail_at",
        "backfill_target_version", "backfill_done", "health__id", "health__small_files",
        "health__vacuumable_bytes", "health__checkpoint_lag", "project_id",
    ),
)  # fmt: skip

TABLE_SORTS: dict[str, list[Any]] = {
    "findings": ["-attention_critical", "-attention_warning", "-attention_info", "name", "id"],
    "name": ["name", "id"],
    "risk": [F("risk").desc(nulls_last=True), "-attention_critical", "-attention_warning", "name"],
    "recent": [F("last_commit_at").desc(nulls_last=True), "name"],
    "version": [F("last_seen_version").desc(nulls_last=True), "name"],
    "lag": [F("lag").desc(nulls_last=True), "name"],
    "status": ["status", "name"],
    # Fleet health: the worst first; tables without stored health last.
    "small_files": [F("health__small_files").desc(nulls_last=True), "name"],
    "vacuumable": [F("health__vacuumable_bytes").desc(nulls_last=True), "name"],
    "checkpoint_lag": [F("health__checkpoint_lag").desc(nulls_last=True), "name"],
}


def overview_tables(projects: list[int] | None, sort: str) -> QuerySet[Table]:
    """The overview's tables of `projects` (None: every project) in the order of `sort`."""
    tables = queries.tables_with_counts().select_related("health")
    # No row shows the JSON columns: decoding them was a tenth of a cold overview's CPU.
    tables = tables.defer("health__data", "settings_snapshot", "key_columns")
    if projects is not None:
        tables = tables.filter(project_id__in=projects)
    return tables.order_by(*TABLE_SORTS[sort])


def overview_search(projects: frozenset[int] | None, sort: str, text: str) -> QuerySet[Table]:
    """The overview's tables whose name or URI contains `text` (case-insensitive)."""
    tables = overview_tables(sorted(projects) if projects is not None else None, sort)
    return tables.filter(Q(name__icontains=text) | Q(uri__icontains=text))


def _page_query(key: tuple, *projects: int) -> QuerySet[Table]:
    """`overview_tables` sliced to a page: key = (staff, sort, start, stop)."""
    staff, sort, start, stop = key
    return overview_tables(None if staff else list(projects), sort)[start:stop]


# Compiled once per (sort, page slice) and number of the reader's projects: building and
# compiling the query with its six correlated counts was a third of a cold overview's CPU.
_prepared_page = PreparedModels(_page_query)


class CountedTables:
    """The tables of a reader's projects with their count already known, as `Paginator`
    reads them (count, slices): each page by its prepared query."""

    def __init__(self, projects: frozenset[int] | None, sort: str, count: int) -> None:
        self._projects, self._sort, self._count = projects, sort, count

    def count(self) -> int:
        return self._count

    def __getitem__(self, window: slice) -> Any:
        if window.stop <= window.start:
            return []  # an empty slice compiles to no SQL at all
        staff = self._projects is None
        ids = [] if staff else sorted(self._projects)
        if not staff and (not ids or len(ids) > len(PLACEHOLDERS)):
            return list(overview_tables(ids, self._sort)[window])
        return _prepared_page((staff, self._sort, window.start, window.stop), *ids)
