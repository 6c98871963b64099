"""The one query layer: what the API, the dashboard and the alerting ask of the database.

Each question has one answer here, so the JSON API and the HTML pages cannot drift apart
(docs/api.md, "One answer"):

- *open* means the audit has not resolved the finding; *needs attention* means open and not
  acknowledged. Tables carry both counts (`open_<severity>`, `attention_<severity>`).
- acknowledging keeps the first acknowledger; members of the table's project (and
  administrators) acknowledge and re-open (audit/trust/access.py decides who sees what).
- "findings involving version V": found on V, or naming V among their related versions,
  answered by the database on both SQLite and PostgreSQL (no text search, no scan).
- one way to queue a table's tail.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, connections
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import RawSQL

from audit.core.vocab import HEALTH_FINDING_PREFIX, SEVERITY_ORDER
from audit.models import (
    NEEDS_ATTENTION,
    OPEN,
    Commit,
    CommitRollup,
    Finding,
    FindingCounts,
    Project,
    Table,
)
from audit.reads.prepared import Prepared, PreparedIn, PreparedRows, PreparedValues, fetch_sql
from audit.reads.timeline import rollups
from audit.reads.timeline import sql as timeline_sql
from audit.reads.timeline.window import timeline_json

__all__ = [
    "NEEDS_ATTENTION",
    "OPEN",
    "acknowledge",
    "all_commits",
    "all_tables",
    "attention_count",
    "attention_totals",
    "commit_at",
    "commit_time_bounds",
    "commits_by_version",
    "commits_in_flight",
    "filtered_findings",
    "finding_counts",
    "findings_by_status",
    "findings_involving",
    "findings_with_acknowledger",
    "health_kinds_seen",
    "open_findings",
    "project_by_name",
    "table_by_id",
    "table_id_by_uri",
    "table_open_findings",
    "table_with_health_flag",
    "tables_with_counts",
    "timeline_window",
    "unacknowledge",
]

# Worst first: the order of every finding list that is not sorted by time.
SEVERITY_FIRST = Case(
    *(When(severity=s, then=Value(-s.rank)) for s in SEVERITY_ORDER),
    default=Value(0),
    output_field=IntegerField(),
)
# Findings of one version are few; the bound keeps a pathological table's page cheap.
MAX_INVOLVING = 1000


# --------------------------------------------------------------------------- tables


def tables_with_counts() -> QuerySet[Table]:
    """Every table with `open_<severity>` and `attention_<severity>` counts and `lag`."""
    return Table.objects.with_open_counts()


def all_tables() -> QuerySet[Table]:
    """Every table (the API narrows it to the reader's projects)."""
    return Table.objects.all()


def table_id_by_uri(uri: str) -> int | None:
    """The id of the table registered with this (normalised) URI, None if there is none."""
    return Table.objects.filter(uri=uri).values_list("id", flat=True).first()


def project_by_name(name: str, *, create: bool = False) -> Project | None:
    """The project called `name` (None if there is none); with `create`, made if missing
    (its slug is its name)."""
    if create:
        return Project.objects.get_or_create(name=name, defaults={"slug": name})[0]
    return Project.objects.filter(name=name).first()


def table_by_id(table_id: int | str) -> Table | None:
    """The table with this id (every column), or None: one query compiled once per process
    (every API sub-resource and cold list reads its table first)."""
    found = _table_by_id(int(table_id))
    return found[0] if found else None


_table_by_id = Prepared(lambda pk: Table.objects.filter(pk=pk))


def table_with_health_flag(table_id: int) -> Table | None:
    """The table (every column) with `has_health`: whether its health is stored. One query
    compiled once per process: a table page and its status poll read it on every request."""
    found = _table_with_health_flag(table_id)
    return found[0] if found else None


def _table_row_query(pk: int) -> QuerySet[Table]:
    from audit.health.models import TableHealth

    stored = TableHealth.objects.filter(table_id=OuterRef("pk"))
    return Table.objects.filter(pk=pk).annotate(has_health=Exists(stored))


_table_with_health_flag = Prepared(_table_row_query)


# FindingCounts' columns, `open_<severity>` then `attention_<severity>`, in SEVERITY_ORDER.
_COUNT_COLUMNS = [f"{part}_{s}" for part in ("open", "attention") for s in SEVERITY_ORDER]


def finding_counts(table_id: int) -> dict[str, dict[str, int]]:
    """One table's `{"open": {severity: n}, "attention": {severity: n}}`: its FindingCounts
    row (kept by triggers), one key lookup. The table page's status poll asks it every few
    seconds per open tab."""
    rows = fetch_sql("finding_counts", _finding_counts_sql, [table_id])
    numbers = [int(n) for n in rows[0]] if rows else [0] * len(_COUNT_COLUMNS)
    per = len(SEVERITY_ORDER)
    return {
        part: {
            str(s): n for s, n in zip(SEVERITY_ORDER, numbers[i * per : (i + 1) * per], strict=True)
        }
        for i, part in enumerate(("open", "attention"))
    }


def _finding_counts_sql() -> str:
    table = FindingCounts._meta.db_table
    return f"SELECT {', '.join(_COUNT_COLUMNS)} FROM {table} WHERE table_id = %s"


def attention_totals(projects: frozenset[int] | None = None) -> dict[str, int]:
    """Findings needing attention over every table (of `projects`, ids; None: of every
    project), per severity (the overview's totals): a sum of the tables' FindingCounts."""
    ids = None if projects is None else sorted(projects)
    if ids is not None and not ids:
        return {str(s): 0 for s in SEVERITY_ORDER}
    name = ("attention_totals", None if ids is None else len(ids))
    (sums,) = fetch_sql(name, lambda: _attention_totals_sql(ids), ids or [])
    return {str(s): int(n or 0) for s, n in zip(SEVERITY_ORDER, sums, strict=True)}


def attention_count(
    table_id: int | None, projects: frozenset[int] | None, severity: str | None = None
) -> int:
    """How many findings need attention (open, not acknowledged; of `severity` if given) in
    one table, or over the tables of `projects` (None: every project): the findings page's
    count from the stored FindingCounts, not a COUNT over the findings (~2 ms at 5,000)."""
    if table_id is not None:
        per_severity = finding_counts(table_id)["attention"]
    else:
        per_severity = attention_totals(projects)
    if severity is not None:
        return per_severity.get(severity, 0)
    return sum(per_severity.values())


def _attention_totals_sql(ids: list[int] | None) -> str:
    counts, table = FindingCounts._meta.db_table, Table._meta.db_table
    sums = ", ".join(f"SUM(c.attention_{s})" for s in SEVERITY_ORDER)
    if ids is None:
        return f"SELECT {sums} FROM {counts} c"
    return (
        f"SELECT {sums} FROM {counts} c JOIN {table} t ON t.id = c.table_id"
        f" WHERE t.project_id IN ({', '.join(['%s'] * len(ids))})"
    )


def table_counts(projects: frozenset[int] | None = None) -> tuple[int, int]:
    """How many tables there are (in `projects`, ids; None: in every project), and how many
    are in error (the overview's head): every table's by one grouped query compiled once."""
    if projects is None:
        rows = dict(_tables_per_status())
    else:
        rows = dict(_tables_per_status_in(sorted(projects)))
    return sum(rows.values()), rows.get(Table.Status.ERROR.value, 0)


_tables_per_status = PreparedRows(
    lambda: Table.objects.order_by().values_list("status").annotate(Count("id")), 0
)
# The same for a reader of some projects (compiled per number of projects).
_tables_per_status_in = PreparedIn(
    lambda *projects: (
        Table.objects.filter(project_id__in=projects)
        .order_by()
        .values_list("status")
        .annotate(Count("id"))
    )
)


def table_choices(projects: frozenset[int] | None) -> list[tuple[int, str, str]]:
    """(id, name, uri) of the tables of `projects` (None: every table), in the tables' order
    (name, then id): the findings page's table filter. Compiled once per number of projects:
    a model choice field's count, rows and validation were three ORM queries a cold page."""
    if projects is None:
        return _table_choices()
    return _table_choices_in(sorted(projects)) if projects else []


_table_choices = PreparedRows(
    lambda: Table.objects.order_by("name", "id").values_list("id", "name", "uri"), 0
)
_table_choices_in = PreparedIn(
    lambda *projects: (
        Table.objects.filter(project_id__in=projects)
        .order_by("name", "id")
        .values_list("id", "name", "uri")
    )
)


# --------------------------------------------------------------------------- findings


def open_findings() -> QuerySet[Finding]:
    """Findings the audit has not resolved (acknowledged or not): risk, metrics, alerts."""
    return Finding.objects.filter(OPEN)


def findings_with_acknowledger(projects: frozenset[int] | None = None) -> QuerySet[Finding]:
    """The findings of the tables of `projects` (None: every table) with their acknowledging
    user in the same query."""
    rows = Finding.objects.select_related("acknowledged_by")
    if projects is None:
        return rows
    return rows.filter(table__project_id__in=sorted(projects))


def filtered_findings(
    rows: QuerySet[Finding], filters: dict[str, Any], status: str, fields: tuple[str, ...]
) -> QuerySet[Finding]:
    """The dashboard's findings list: `rows` (the reader's findings) narrowed by `filters`
    (table, kind, severity: equal to the value) and the status tab, newest first, with
    `fields` only."""
    for field, value in filters.items():
        rows = rows.filter(**{field: value})
    # One table's rows need no join (the view gives them the filter's table): with it, SQLite
    # sorted the table's findings instead of reading them in index order.
    rows = rows if "table" in filters else rows.select_related("table")
    rows = findings_by_status(rows, status)
    return rows.order_by("-last_seen", "-id").only(*fields)


def health_kinds_seen() -> set[str]:
    """The health rules' finding kinds stored so far (the findings page's kind dropdown)."""
    return {kind for (kind,) in _health_kinds()}


# Compiled once (the ORM's compilation cost more than the query, on every render
# of a findings page).
def _health_kinds_query() -> QuerySet[Finding]:
    rows = Finding.objects.filter(kind__startswith=HEALTH_FINDING_PREFIX)
    if connections["default"].vendor == "sqlite":
        # SQLite's LIKE (ASCII case-insensitive) cannot use the kind index: it read every
        # finding, ~1-6 ms of each cold findings page. Its BINARY collation orders kinds byte
        # by byte, so this range holds exactly the kinds the prefix starts (all written
        # lowercase: HEALTH_FINDING_PREFIX + a rule's metric), found in the index.
        # PostgreSQL's collations may not order byte-wise: there, LIKE alone.
        after = HEALTH_FINDING_PREFIX[:-1] + chr(ord(HEALTH_FINDING_PREFIX[-1]) + 1)
        rows = rows.filter(kind__gte=HEALTH_FINDING_PREFIX, kind__lt=after)
    return rows.order_by("kind").values_list("kind").distinct()


_health_kinds = PreparedRows(_health_kinds_query, 0)


def table_open_findings(
    table_id: int, names: tuple[str, ...], severity: str, start: int = 0, stop: int = 50
) -> list[dict[str, Any]]:
    """Rows `start` to `stop` of a table's findings of `severity` needing attention, newest
    first (version, then id), as `.values(*names)` rows: the table page's list is these per
    severity, worst first (its pager, `audit.reads.pages.OpenFindings`, cuts its window by the
    stored counts per severity). Read by the table's needing-attention version index, not a
    sort of all its findings by severity. One query compiled once per name set, severity and
    window (the ORM's building and compiling was a tenth of the page's cold CPU), and no model
    instance built per row (the rows tag reads plain rows, `FindingRow`)."""
    return _open_pages((names, severity, start, stop), table_id)


def _open_page(key: tuple, table_id: int) -> QuerySet[Finding]:
    names, severity, start, stop = key
    rows = findings_by_status(Finding.objects.filter(table_id=table_id), "open")
    rows = rows.filter(severity=severity)
    return rows.order_by("-version", "-id").values(*names)[start:stop]


_open_pages = PreparedValues(_open_page)


def findings_by_status(queryset: QuerySet[Finding], status: str) -> QuerySet[Finding]:
    """The dashboard's finding tabs. "open" is the needs-attention list (the API's
    `?status=open&acknowledged=false`); "acknowledged" is every acknowledged finding (the
    API's `?acknowledged=true`); "resolved" the API's `?status=resolved`; else all."""
    if status == "open":
        return queryset.filter(NEEDS_ATTENTION)
    if status == "acknowledged":
        return queryset.filter(acknowledged_at__isnull=False)
    if status == "resolved":
        return queryset.filter(status=Finding.Status.RESOLVED)
    return queryset


def _names_version(version: int) -> Q:
    """`related_versions` (a JSON list of integers) contains `version`, asked of the database.

    PostgreSQL answers JSON containment from the jsonb value; SQLite has no containment
    lookup, so its JSON1 `json_each` is asked instead. Both are exact, unlike a text search.
    """
    if connection.vendor == "postgresql":
        return Q(related_versions__contains=[version])
    table = Finding._meta.db_table
    names = RawSQL(
        f'EXISTS (SELECT 1 FROM json_each("{table}"."related_versions") '
        "WHERE json_each.type = 'integer' AND json_each.value = %s)",
        (version,),
        output_field=BooleanField(),
    )
    return Q(names)


def findings_involving(
    table_id: int, version: int, fields: tuple[str, ...] | None = None
) -> list[Finding]:
    """Findings of a table found on `version` or naming it among their related versions,
    worst first, then newest, then by id; at most MAX_INVOLVING.

    The commit page and `GET /api/tables/{id}/commits/{version}/` both show this list."""
    rows = Finding.objects.filter(table_id=table_id).filter(
        Q(version=version) | _names_version(version)
    )
    if fields:
        rows = rows.only(*fields)
    return list(rows.order_by(SEVERITY_FIRST, "-version", "id")[:MAX_INVOLVING])


def acknowledge(finding: Finding, user: Any) -> bool:
    """Acknowledge for `user`; the first acknowledgement is kept (see Finding.acknowledge).
    Callers check that `user` may (`audit.trust.access.may_acknowledge`: API view, dashboard view)."""
    return finding.acknowledge(user)


def unacknowledge(finding: Finding) -> bool:
    """Undo an acknowledgement (callers check `access.may_acknowledge`); the finding needs
    attention again."""
    return finding.unacknowledge()


# --------------------------------------------------------------------------- commits


def all_commits() -> QuerySet[Commit]:
    """Every commit (the model the API's commit filters and schema are about)."""
    return Commit.objects.all()


def commit_at(table_id: int, version: int) -> Commit | None:
    """The stored commit of the table at `version`, None if not stored."""
    try:
        return Commit.objects.get(table_id=table_id, version=version)
    except Commit.DoesNotExist:
        return None


def commits_by_version(
    table_id: int, versions: list[int], fields: tuple[str, ...]
) -> dict[int, dict[str, Any]]:
    """The stored commits of the table at `versions`, by version: {"version", *fields}."""
    rows = Commit.objects.filter(table_id=table_id, version__in=versions)
    return {c["version"]: c for c in rows.values("version", *fields)}


def commits_in_flight(table_id: int, version: int, window: int) -> list[dict[str, Any]]:
    """The first 100 commits of the `window` versions after `version` that read a version
    before it (they were in flight when it committed), with their re-check verdicts."""
    return list(
        Commit.objects.filter(
            table_id=table_id,
            version__gt=version,
            version__lte=version + window,
            read_version__lt=version,
        )
        .order_by("version")
        .values("version", "operation", "user_name", "read_version", "recheck")[:100]
    )


# --------------------------------------------------------------------------- timeline


def timeline_window(table: Table, lo: int | None, hi: int | None, max_points: int) -> bytes:
    """A version window of the timeline as JSON bytes (rows or buckets, open findings)."""
    return timeline_json(table, lo, hi, max_points)


_ROLLUP_BOUNDS = (
    f"SELECT SUM(commits), MIN(CASE WHEN max_timestamp >= %s THEN bucket_start END), "
    f"MAX(CASE WHEN min_timestamp <= %s THEN bucket_start END) "
    f"FROM {CommitRollup._meta.db_table} WHERE table_id = %s"
)
_EARLIEST = -(2**63)
_LATEST = 2**63 - 1


def commit_time_bounds(
    table_id: int, since: int | None, until: int | None
) -> tuple[int, int] | None:
    """Versions [lo, hi] holding every commit of the table with since <= timestamp <= until
    (ms; None is open), from the rollups' min/max timestamps; None when they cannot tell.

    Commit timestamps need not grow with the version, so these bounds only narrow the
    scan: the timestamp filter still applies inside them, and the commits query walks the
    (table, version) index in page order instead of reading the whole time window through
    the timestamp index and sorting it (101 ms of CPU for a 150,000-commit window).
    The bounds are exact only if every commit is counted in its rollup (the ingest keeps
    them in one transaction; a bulk load might not): the rollups' commit total must equal
    the version span, which every stored version filling it proves (versions are unique).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            _ROLLUP_BOUNDS,
            [_EARLIEST if since is None else since, _LATEST if until is None else until, table_id],
        )
        counted, first_bucket, last_bucket = cursor.fetchone()
    low, high = timeline_sql.version_span(table_id)
    if low is None or counted != high - low + 1:
        return None  # no commits, or commits outside the rollups: filter by time alone
    if first_bucket is None or last_bucket is None:
        return (1, 0)  # no rollup overlaps the window: no commit can be in it
    return (first_bucket, last_bucket + rollups.rollup_size() - 1)
