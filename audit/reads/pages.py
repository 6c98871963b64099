"""What the dashboard's pages read, declared once here (the views only ask): the findings
list's rows and count, a finding with what its page shows, the overview's tables in their
sorts; and of incidents (audit/incidents/models.py): the overview's "why" (each table's worst
unresolved incident), the table page's paginated open findings, the incident page (an
incident of a table the one 404 gate, `visible.visible_table_or_404`, let through, looked up
inside that table only; its head finding's witness; the versions it recurred at) and the
incident a finding belongs to. Each is compiled once per shape (`audit.reads.prepared`): building and compiling the
ORM queries was most of a cold page's CPU.

`tests/app/test_findings_page_rows.py` and `tests/app/overview_reference.py` hold the ORM
references the pages equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import F, Q, QuerySet
from django.http import Http404

from audit.core.vocab import (
    SEVERITY_ORDER,
    SEVERITY_RANK,
    FindingKind,
    IncidentCause,
    IncidentStatus,
)
from audit.models import Finding, Incident, Table
from audit.reads import queries
from audit.reads.incidents import _worst_first, fold
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


# --------------------------------------------------------------------------- incidents

NO_INCIDENT = "No Incident matches the given query."
OPEN_FINDINGS_PER_PAGE = 50  # open findings per page of the table page's list
MAX_OCCURRENCES = 2000  # versions drawn on the incident page's strip (the rest are counted)

# The finding that names the cause itself, where the cause is a table-level fact: it heads
# the incident (audit/core/incidents/grouping.py) and its witness is the incident's.
_HEAD_KINDS = {
    IncidentCause.ISOLATION_SETTING_IGNORED: FindingKind.ISOLATION_SETTING_IGNORED,
    IncidentCause.CONTENTION: FindingKind.CONFLICT_HOTSPOT,
}
# A retry storm occurs at the commits it names too (audit/core/incidents/model.py).
_OCCURS_AT_RELATED = frozenset({FindingKind.RETRY_STORM})


def worst_open_incidents(table_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """For each table of `table_ids` that has one, its worst unresolved incident (severity,
    then first version, then id: the table page's order) as {pk, headline, severity, status}.
    One query over the page's tables (the overview's "why" column)."""
    ids = sorted(set(table_ids))
    if not ids:
        return {}
    rows = (
        Incident.objects.filter(table_id__in=ids)
        .exclude(status=IncidentStatus.RESOLVED)
        .order_by("table_id", "-severity_rank", "first_version", "incident_id")
        .values("table_id", "pk", "headline", "severity", "status")
    )
    worst: dict[int, dict[str, Any]] = {}
    for row in rows:
        worst.setdefault(row.pop("table_id"), row)
    return worst


# What the table page shows of an incident and of each finding folded under it.
INCIDENT_ROW = ("pk", "headline", "severity", "status", "first_version", "last_version")
TABLE_INCIDENTS_PER_PAGE = 50


def table_incidents(table_id: int, page: Any) -> Page:
    """One page of a table's incidents as the table page lists them (unresolved first, then
    worst first: `incidents.incidents_for_table`'s order), as `.values(*INCIDENT_ROW)` rows,
    each with `folded`: its findings as `.values(*ROW_VALUES)` rows (open ones, else those it
    had; worst first, then newest). Two queries and no model instance: the stored statements,
    damage and witnesses are the incident page's, not read here."""
    rows = _worst_first(Incident.objects.filter(table_id=table_id)).values(*INCIDENT_ROW)
    found = Paginator(rows, TABLE_INCIDENTS_PER_PAGE).get_page(page)
    incidents = list(found.object_list)
    members: dict[int, list[dict[str, Any]]] = {i["pk"]: [] for i in incidents}
    folded = Finding.objects.filter(incident_id__in=list(members))
    for row in folded.values(*ROW_VALUES, "incident_id"):
        members[row.pop("incident_id")].append(row)
    for incident in incidents:
        shown = [f for f in members[incident["pk"]] if f["status"] == Finding.Status.OPEN]
        shown = shown or members[incident["pk"]]
        shown.sort(key=lambda f: (-SEVERITY_RANK.get(f["severity"], 0), -f["version"], -f["id"]))
        incident["folded"] = shown
    found.object_list = incidents
    return found


def incident_of_table_or_404(table_id: int, pk: int | str) -> Incident:
    """The incident `pk` of the table `table_id` (which the caller's gate let through), with
    its acknowledger and its findings folded (`incident.folded`), else Http404."""
    try:
        number = int(pk)
    except (TypeError, ValueError):
        raise Http404(NO_INCIDENT) from None
    found = (
        Incident.objects.filter(table_id=table_id, pk=number)
        .select_related("acknowledged_by")
        .first()
    )
    if found is None:
        raise Http404(NO_INCIDENT)
    fold([found])
    return found


def head_finding(incident: Incident) -> Finding | None:
    """The finding whose witness the incident page shows: the one naming a table-level cause
    (isolation setting ignored, a hotspot), else its worst finding with a witness, else its
    worst. Read whole (the folded rows are the list's)."""
    folded = getattr(incident, "folded", None) or []
    if not folded:
        return None
    head_kind = _HEAD_KINDS.get(incident.cause)
    chosen = next((f for f in folded if f.kind == head_kind), None)
    if chosen is None:
        chosen = next((f for f in folded if f.witness), folded[0])
    return Finding.objects.filter(pk=chosen.pk).first()


def occurrence_versions(incident: Incident) -> list[int]:
    """The versions the incident's findings occurred at (a storm's named commits too),
    sorted, at most MAX_OCCURRENCES (the latest)."""
    versions: set[int] = set()
    for finding in getattr(incident, "folded", None) or []:
        versions.add(finding.version)
        if finding.kind in _OCCURS_AT_RELATED and isinstance(finding.related_versions, list):
            versions.update(v for v in finding.related_versions if isinstance(v, int))
    return sorted(versions)[-MAX_OCCURRENCES:]


def incident_of_finding(finding: Finding) -> dict[str, Any] | None:
    """The incident the finding belongs to as {pk, table_id, headline, severity, status}, or
    None (not grouped yet)."""
    if finding.incident_id is None:
        return None
    return (
        Incident.objects.filter(pk=finding.incident_id)
        .values("pk", "table_id", "headline", "severity", "status")
        .first()
    )


class OpenFindings:
    """A table's findings needing attention, worst first then newest, as `Paginator` reads
    them: the count from the table's stored counts per severity (no COUNT over its findings),
    a page as the slices of each severity's list it overlaps (`queries.table_open_findings`,
    each walking the version index: no sort of every finding by severity)."""

    def __init__(
        self, table_id: int, names: tuple[str, ...], counts: dict[str, int] | None = None
    ) -> None:
        """`counts`: the table's needing-attention counts per severity, when the caller has
        read them already (`queries.finding_counts(...)["attention"]`)."""
        self._table_id, self._names = table_id, names
        self._counts = counts

    def _per_severity(self) -> dict[str, int]:
        if self._counts is None:
            self._counts = queries.finding_counts(self._table_id)["attention"]
        return self._counts

    def count(self) -> int:
        return sum(self._per_severity().values())

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        before = 0  # findings of worse severities, listed before this one's
        for severity in reversed(SEVERITY_ORDER):
            n = self._per_severity().get(str(severity), 0)
            low, high = max(window.start - before, 0), min(window.stop - before, n)
            if low < high:
                rows += queries.table_open_findings(
                    self._table_id, self._names, str(severity), low, high
                )
            before += n
        return rows
