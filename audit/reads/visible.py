"""The reads of who sees what: the one 404 gate of a table by its id, and the rows a reader
sees. The decision is `audit.trust.access`'s (projects and roles); reading the rows it is
about is the query layer's, here.

`visible_table_or_404(who, table_id)` is the gate every view, page and the API's fast path
passes before showing anything of a table (as healthchecks' `_get_check_for_user`): another
project's table and a table that does not exist get the same 404, before any role check (a
403 would tell that it exists) and before any work. `who`: a request (the reader's projects
read once per request) or a user.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from audit.models import Finding, Table
from audit.reads import cache, queries
from audit.reads.prepared import fetch_sql
from audit.trust import access

NO_TABLE = "No Table matches the given query."
# What the gate returns: every column; every column and `has_health`; the columns of the
# table's cache keys; the id.
ROW, WITH_HEALTH, KEY, ID = "row", "with_health", "key", "id"


def visible_table_or_404(who: Any, table_id: int | str, *, columns: str = ROW, user: Any = None):
    """The table `table_id` if the reader sees it, else Http404 (the answer for no such
    table). `columns`: ROW, the table with every column (one query compiled once);
    WITH_HEALTH, the same and whether its health is stored (the table page); KEY, the
    columns its cache keys read (`cache.table_key_row`; after a one-column check); ID, its id
    only (one plain query). `user`: the reader when the request carries none yet (the fast
    path authenticates before Django does)."""
    table_id = int(table_id)
    if columns in (ROW, WITH_HEALTH):
        read = queries.table_by_id if columns == ROW else queries.table_with_health_flag
        table = read(table_id)
        if table is None or not access.sees(who, table.project_id, user):
            raise Http404(NO_TABLE)
        return table
    if not sees_table(who, table_id, user):
        raise Http404(NO_TABLE)
    if columns == ID:
        return table_id
    table = cache.table_key_row(table_id)
    if table is None:
        raise Http404(NO_TABLE)
    return table


def sees_table(who: Any, table_id: int, user: Any = None) -> bool:
    """Whether the table exists and the reader sees it (no row read: one plain query)."""
    return access.sees(who, table_project_id(table_id), user)


def table_project_id(table_id: int) -> int | None:
    """The project of a table (None when there is no such table), by one plain query."""
    rows = fetch_sql("table_project", _table_project_sql, [table_id])
    return rows[0][0] if rows else None


def _table_project_sql() -> str:
    column = Table._meta.get_field("project").column
    return f'SELECT "{column}" FROM "{Table._meta.db_table}" WHERE "id" = %s'


def table_ids_in(project_ids: frozenset[int] | None) -> list[int] | None:
    """The ids of the tables of the projects `project_ids` (None: every table, as for staff)."""
    if project_ids is None:
        return None
    if not project_ids:
        return []
    ids = sorted(project_ids)
    # Plain SQL built once per number of projects: the ORM's compilation was ~1 ms of each
    # cold findings list, more than the query.
    rows = fetch_sql(("table_ids_in", len(ids)), lambda: _table_ids_sql(len(ids)), ids)
    return [table_id for (table_id,) in rows]


def _table_ids_sql(count: int) -> str:
    column = Table._meta.get_field("project").column
    marks = ", ".join(["%s"] * count)
    return f'SELECT "id" FROM "{Table._meta.db_table}" WHERE "{column}" IN ({marks}) ORDER BY "id"'


def visible_tables(who: Any) -> QuerySet[Table]:
    """The tables the reader sees."""
    return access.restrict(Table.objects.all(), who, "project_id")


def visible_findings(who: Any) -> QuerySet[Finding]:
    """The findings of the tables the reader sees."""
    return access.restrict(Finding.objects.all(), who, "table__project_id")


def finding_or_404(who: Any, finding_id: int | str, *related: str) -> Finding:
    """A finding of a table the reader sees (with `related` loaded), else Http404."""
    found = visible_findings(who).select_related(*related).filter(pk=int(finding_id)).first()
    if found is None:
        raise Http404("No Finding matches the given query.")
    return found


def check_finding(who: Any, pk: Any) -> None:
    """Another project's finding is a 404 on every route under /api/findings/{id}/."""
    access.object_or_404(who, pk, visible_findings, "Finding")
