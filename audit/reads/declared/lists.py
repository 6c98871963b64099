"""The API's lists, each declared once: its fields, its filters (with their validation), its
ordering column and the tables it is scoped to. Everything else is derived from the
declaration: the SQL (compiled once per process, `audit.reads.declared.list_sql`), the validation of the
query string (`audit.reads.declared.params.ListParams`), the OpenAPI parameters
(`audit.api.schema.list_parameters`), the cache key (`audit.reads.declared.routes`) and the fast
path's route (`audit.api.fast_path`).

A new filter of a list is one `Param` here (its condition included); a new list is one
`ListRead` here and one route in `audit.reads.declared.routes` (docs/architecture.md, "where a new
endpoint goes").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db.models import F, Model, QuerySet

from audit.core.vocab import (
    HEALTH_FINDING_PREFIX,
    SEVERITY_ORDER,
    Engine,
    FindingKind,
    IncidentCause,
    IncidentStatus,
    Severity,
)
from audit.models import Commit, Finding, Incident, Table
from audit.reads import queries
from audit.reads.declared.list_sql import DefaultTablesPage, RowQuery, RowSource, values_source
from audit.reads.declared.params import Condition, ListParams, Param, compare, equal

SEVERITIES = tuple(str(s) for s in SEVERITY_ORDER)
KINDS = tuple(str(k) for k in FindingKind)
TABLE, PROJECTS = "table", "projects"


@dataclass(frozen=True)
class ListRead:
    """A list: `fields` (its rows' `.values()` names, in the JSON's order), `params` (its
    filters, in the order their errors are reported), `ordering` (the cursor's column, unique
    in the rows), `scope` (TABLE: one table's rows, named by the URL; PROJECTS: the rows of the
    reader's tables), `table_field` (the rows' table column), `refine(table_id, cleaned)` (more
    conditions from several cleaned values at once)."""

    name: str
    model: type[Model]
    fields: tuple[str, ...]
    params: tuple[Param, ...]
    ordering: str
    scope: str
    table_field: str
    refine: Callable[[int | None, dict[str, Any]], list[Condition]] | None = None

    @cached_property
    def validation(self) -> ListParams:
        return ListParams(self.params)

    @cached_property
    def source(self) -> RowSource:
        return values_source(self.model, self.fields)

    def clean(self, query_params) -> dict[str, Any]:
        """The cleaned values of the filters given (a 400 for a bad one)."""
        return self.validation.clean(query_params)

    def rows(
        self, query_params, *, table_id: int | None = None, visible: list[int] | None = None
    ) -> RowQuery:
        """The rows the filters of `query_params` select (a 400 for a bad filter): of the
        table `table_id`, and of the tables `visible` (ids; None: every table)."""
        cleaned = self.clean(query_params)
        conditions: list[Condition] = []
        if table_id is not None and self.scope == TABLE:
            conditions.append((self.table_field, "=", table_id))
        by_name = {param.name: param for param in self.params}
        for name, value in cleaned.items():
            where = by_name[name].where
            if where is not None:
                conditions += where(value)
        if self.refine is not None:
            conditions += self.refine(table_id, cleaned)
        if visible is not None:
            conditions.append((self.table_field, "in", visible or [-1]))  # "IN ()" is not SQL
        return self.source.query(conditions)


# --------------------------------------------------------------------------- commits


def _time_window(table_id: int | None, cleaned: dict[str, Any]) -> list[Condition]:
    """since/until also as the versions the window can hold (queries.commit_time_bounds: the
    commits query walks the (table, version) index in page order)."""
    since, until = cleaned.get("since"), cleaned.get("until")
    if table_id is None or (since is None and until is None):
        return []
    bounds = queries.commit_time_bounds(table_id, since, until)
    if bounds is None:
        return []
    return [("version", ">=", bounds[0]), ("version", "<=", bounds[1])]


def _has_concurrent(value: bool) -> list[Condition]:
    # concurrent_count > 0 matches the partial index audit_commit_concurrent.
    return [("concurrent_count", ">" if value else "=", 0)]


COMMITS = ListRead(
    name="commits",
    model=Commit,
    fields=(
        "version",
        "timestamp",
        "operation",
        "read_version",
        "isolation_level",
        "blind_append",
        "concurrent_versions",
        "concurrent_count",
        "files_added",
        "files_removed",
        "engine",
    ),  # fmt: skip
    params=(
        Param(
            "operation",
            "list",
            "Operation name(s), exact, comma-separated.",
            compare("operation", "in"),
        ),
        Param("min_version", "int", "Versions at or above this one.", compare("version", ">=")),
        Param("max_version", "int", "Versions at or below this one.", compare("version", "<=")),
        Param(
            "since",
            "time",
            "Committed at or after (ISO 8601 or ms since the epoch).",
            compare("timestamp", ">="),
        ),
        Param(
            "until", "time", "Committed at or before (ISO 8601 or ms).", compare("timestamp", "<=")
        ),
        Param(
            "has_concurrent",
            "bool",
            "Only commits with (true) or without (false) concurrent commits.",
            _has_concurrent,
        ),
        Param(
            "user",
            "text",
            "Written by this user name or user id (exact).",
            equal("user_name", "user_id"),
        ),
        Param(
            "engine",
            "list",
            "Written by these engine(s), comma-separated.",
            compare("engine", "in"),
            choices=tuple(str(e) for e in Engine),
        ),
        Param("job", "text", "Written by this job (job id, or job name; exact).", equal("job_id")),
        Param(
            "user_metadata",
            "text",
            "Whose userMetadata contains this text (case-insensitive).",
            compare("user_metadata", "icontains"),
        ),
        Param(
            "q",
            "text",
            "Whose metadata contains this text (case-insensitive): the "
            "userMetadata or the operation's parameters.",
            compare(("user_metadata", "operation_parameters"), "icontains"),
        ),
    ),  # fmt: skip
    ordering="version",
    scope=TABLE,
    table_field="table",
    refine=_time_window,
)

# --------------------------------------------------------------------------- findings


def _min_severity(value: str) -> list[Condition]:
    rank = Severity(value).rank
    return [("severity", "in", [str(s) for s in SEVERITY_ORDER if s.rank >= rank])]


FINDINGS = ListRead(
    name="findings",
    model=Finding,
    fields=(
        "id",
        "table_id",
        "kind",
        "severity",
        "version",
        "related_versions",
        "confirmed",
        "summary",
        "status",
        "acknowledged_by__username",
        "acknowledged_at",
        "first_seen",
        "last_seen",
        "resolved_at",
    ),  # fmt: skip
    params=(
        Param("table", "int", "Findings of this table id.", equal("table_id")),
        Param(
            "kind",
            "list",
            "Finding kind(s), comma-separated.",
            compare("kind", "in"),
            choices=KINDS,
            allowed_prefix=HEALTH_FINDING_PREFIX,
        ),
        Param(
            "severity",
            "list",
            "Exact severity(ies).",
            compare("severity", "in"),
            choices=SEVERITIES,
        ),
        Param(
            "min_severity",
            "choice",
            "This severity or worse (info < warning < critical).",
            _min_severity,
            choices=SEVERITIES,
        ),
        Param(
            "confirmed", "bool", "Confirmed on the data files (true) or not.", equal("confirmed")
        ),
        Param(
            "status",
            "choice",
            "open or resolved.",
            equal("status"),
            choices=tuple(Finding.Status.values),
            labels=tuple(Finding.Status.choices),
        ),
        Param(
            "acknowledged",
            "bool",
            "Acknowledged by someone (true) or not (false).",
            lambda value: [("acknowledged_at", "isnull", not value)],
        ),
        Param("min_version", "int", "Findings at or above this version.", compare("version", ">=")),
        Param("max_version", "int", "Findings at or below this version.", compare("version", "<=")),
    ),  # fmt: skip
    ordering="id",
    scope=PROJECTS,
    table_field="table_id",
)

# --------------------------------------------------------------------------- incidents

INCIDENT_FIELDS = (
    "id", "incident_id", "table_id", "cause", "headline", "severity", "status",
    "first_version", "last_version", "occurrences", "finding_count", "damage", "repair",
    "inspect", "prevent", "writer", "operation", "scope", "quiet_since", "resolved_because",
    "explanation", "acknowledged_by__username", "acknowledged_at", "acknowledged_version",
    "first_seen", "last_seen",
)  # fmt: skip
INCIDENTS = ListRead(
    name="incidents",
    model=Incident,
    fields=INCIDENT_FIELDS,
    params=(
        Param("table", "int", "Incidents of this table id.", equal("table_id")),
        Param(
            "status",
            "list",
            "Status(es), comma-separated: open, growing, quiet, resolved.",
            compare("status", "in"),
            choices=tuple(str(s) for s in IncidentStatus),
        ),
        Param(
            "severity",
            "list",
            "Exact severity(ies) (an incident's is its worst finding's).",
            compare("severity", "in"),
            choices=SEVERITIES,
        ),
        Param(
            "min_severity",
            "choice",
            "This severity or worse (info < warning < critical).",
            _min_severity,
            choices=SEVERITIES,
        ),
        Param(
            "cause",
            "list",
            "Root cause(s), comma-separated.",
            compare("cause", "in"),
            choices=tuple(str(c) for c in IncidentCause),
        ),
    ),  # fmt: skip
    ordering="id",
    scope=PROJECTS,
    table_field="table_id",
)

# --------------------------------------------------------------------------- tables

# What the tables list shows of a table (the key of its cached bodies): its model fields, the
# backfill and health columns its computed fields read (lag reads model fields, open counts
# the findings generation). tests/app/test_house.py holds it against TableSerializer.
TABLE_LIST_COLUMNS = (
    "id", "uri", "name", "status", "last_error", "error_cause", "risk", "last_seen_version",
    "latest_version_in_log", "first_available_version", "last_commit_at", "last_tail_at",
    "created_at", "backfill_target_version", "backfill_done", "backfill_started_at",
    "backfill_rate", "health__version", "health__num_files", "health__small_files",
    "health__small_file_ratio", "health__vacuumable_bytes", "health__checkpoint_lag",
)  # fmt: skip
HEALTH_NAMES = (
    "version", "num_files", "small_files", "small_file_ratio", "vacuumable_bytes",
    "checkpoint_lag",
)  # fmt: skip
# What TableSerializer reads of a table, as `.values()` names: its columns and annotations.
TABLE_ROW_VALUES = (
    *(f for f in TABLE_LIST_COLUMNS if not f.startswith("health__")),
    *(f"{prefix}_{severity}" for prefix in ("open", "attention") for severity in SEVERITY_ORDER),
    "health__id",
    *(f"health__{name}" for name in HEALTH_NAMES),
)
TABLES = ListRead(
    name="tables",
    model=Table,
    fields=TABLE_ROW_VALUES,
    params=(
        Param(
            "status",
            "choice",
            "Ingest status.",
            equal("status"),
            choices=tuple(Table.Status.values),
            labels=tuple(Table.Status.choices),
        ),
    ),  # fmt: skip
    ordering="name",
    scope=PROJECTS,
    table_field="project_id",
)
default_tables_page = DefaultTablesPage(TABLE_ROW_VALUES)

# `GET /api/tables/?ordering=<key>`: the fleet view's sorts (worst first; "-" reverses).
FLEET_ORDERINGS = {
    "small_files": "health__small_files",
    "small_file_ratio": "health__small_file_ratio",
    "vacuumable_bytes": "health__vacuumable_bytes",
    "checkpoint_lag": "health__checkpoint_lag",
    "open_findings": "open_total",
}


class BadOrdering(ValueError):
    """An `?ordering=` that names no sort (the API answers 400 with its text)."""


def order_fleet(queryset: QuerySet[Table], raw: str) -> QuerySet[Table]:
    """`queryset` in the order `?ordering=<raw>` names (stripped); BadOrdering for an unknown
    one."""
    if not raw:
        return queryset
    key = raw.lstrip("-")
    if key not in FLEET_ORDERINGS:
        raise BadOrdering(
            f"ordering must be one of {', '.join(sorted(FLEET_ORDERINGS))} (prefix - for ascending)"
        )
    column = FLEET_ORDERINGS[key]
    if key == "open_findings":
        queryset = queryset.annotate(
            open_total=F("open_info") + F("open_warning") + F("open_critical")
        )
    expr = (
        F(column).asc(nulls_last=True) if raw.startswith("-") else F(column).desc(nulls_last=True)
    )
    return queryset.order_by(expr, "name", "id")


def narrowing(ordering: str, status: str) -> Callable[[Any], Any]:
    """What the general path's ordering and status filter do, for `DefaultTablesPage`."""

    def narrow(listed: Any) -> Any:
        listed = order_fleet(listed, ordering)
        return listed.filter(status=status) if status else listed

    return narrow


def default_shape(params: Any) -> tuple[str, str] | None:
    """(ordering, status) of a tables list whose query names at most a valid ordering and a
    valid status (the `default_tables_page` path), None for any other list (the ORM's
    path, which also words the 400 of a bad value)."""
    if not set(params) <= {"ordering", "status"}:
        return None
    if any(len(params.getlist(name)) != 1 for name in params):
        return None
    ordering, status = params.get("ordering", ""), params.get("status", "")
    if "ordering" in params and (ordering != ordering.strip() or not ordering):
        return None
    if ordering and ordering.lstrip("-") not in FLEET_ORDERINGS:
        return None
    if "status" in params and status not in Table.Status.values:
        return None
    return ordering, status


def table_rows(projects: frozenset[int] | None, ordering: str, query_params) -> QuerySet:
    """The tables list's rows (`.values(*TABLE_ROW_VALUES)`, for the paginator to slice) of
    the projects `projects` (None: every project) in the order `ordering` names, with the
    filters of `query_params` (BadOrdering, then the filters' 400)."""
    listed = order_fleet(queries.tables_with_counts().order_by("name", "id"), ordering)
    cleaned = TABLES.clean(query_params)
    if projects is not None:
        listed = listed.filter(project_id__in=sorted(projects))
    if "status" in cleaned:
        listed = listed.filter(status=cleaned["status"])
    return listed.values(*TABLE_ROW_VALUES)


def table_detail(table_id: int) -> Table:
    """A table with its open counts and health, as the detail serializer reads it."""
    return (
        queries.tables_with_counts().select_related("health").defer("health__data").get(pk=table_id)
    )
