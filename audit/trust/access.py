"""Who sees which tables: the one place that decides (projects and their members' roles).

A table belongs to one project. A user sees the tables of the projects they are a member of,
in any role; staff (is_staff or superuser) see every project. Everything that shows a table,
a finding, a commit or a count (the API, its fast path and caches, the pages and their caches,
alerts, /metrics) asks here, so a table outside a user's projects answers 404 everywhere
rather than 403: its existence is not told either.

Roles: viewer reads; member also acknowledges and re-opens findings; owner also manages the
project's tables (register, remove), members, alert rules and channels (and reads the channels'
recipients); staff everything. Alert rules, channels and deliveries are a project's too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet
from django.http import Http404

from audit.core.numbers import log_int
from audit.models import Finding, Membership, Project, Table
from audit.reads import queries
from audit.reads.prepared import fetch_sql

Role = Membership.Role
# Rank of each role: a role allows what every lower one does.
_RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.OWNER: 3}


def is_staff(user: Any) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def visible_project_ids(user: Any) -> frozenset[int] | None:
    """The ids of the projects `user` sees; None means every project (staff). Anonymous
    users see none. Read from the database on every call (a removed member loses access at
    once), by SQL compiled once per process: the cached API reads ask it on every request."""
    if user is None or not user.is_authenticated:
        return frozenset()
    if is_staff(user):
        return None
    rows = fetch_sql("visible_projects", _memberships_sql, [user.pk])
    return frozenset(row[0] for row in rows)


def _memberships_sql() -> str:
    meta = Membership._meta
    project = meta.get_field("project").column
    user = meta.get_field("user").column
    return f'SELECT "{project}" FROM "{meta.db_table}" WHERE "{user}" = %s'


def request_projects(request: Any) -> frozenset[int] | None:
    """`visible_project_ids(request.user)`, asked once per request (a page needs it for its
    cache key and again for its rows)."""
    return projects_of(request, request.user)


def projects_of(request: Any, user: Any) -> frozenset[int] | None:
    """`visible_project_ids(user)`, asked once per request: kept on the request (Django's,
    which DRF's wraps, so the API's fast path and its view share it), never on the user (a
    user object can outlive its request: audit.api.authentication remembers tokens' users),
    and only for the user it was asked for."""
    holder = getattr(request, "_request", request)
    key = user.pk if user is not None and user.is_authenticated else None
    kept = holder.__dict__.get("_audit_visible_projects")
    if kept is None or kept[0] != key:
        kept = holder._audit_visible_projects = (key, visible_project_ids(user))
    return kept[1]


def scope_of(ids: frozenset[int] | None) -> str:
    """A cache-key part naming the projects `ids` a reader sees (visible_project_ids' answer):
    bodies listing several tables are cached per project set, so a body is never served to a
    reader of other projects."""
    return "all" if ids is None else "p" + ",".join(str(i) for i in sorted(ids))


def visible_tables(user: Any) -> QuerySet[Table]:
    """The tables `user` sees."""
    return restrict(Table.objects.all(), user, "project_id")


def visible_findings(user: Any) -> QuerySet[Finding]:
    """The findings of the tables `user` sees."""
    return restrict(Finding.objects.all(), user, "table__project_id")


def visible_channels(user: Any) -> QuerySet:
    """The alert channels of the projects `user` sees."""
    from audit.alerting.models import Channel

    return restrict(Channel.objects.all(), user, "project_id")


def visible_rules(user: Any) -> QuerySet:
    """The alert rules of the projects `user` sees."""
    from audit.alerting.models import AlertRule

    return restrict(AlertRule.objects.all(), user, "project_id")


def visible_deliveries(user: Any) -> QuerySet:
    """Alert deliveries through the channels of the projects `user` sees, of a finding of
    those projects' tables or of none (a test). A rule sends only its own project's findings
    through its own project's channels; the finding is checked too for rows older than that."""
    from audit.alerting.models import Delivery

    ids = visible_project_ids(user)
    rows = Delivery.objects.all()
    if ids is None:
        return rows
    among = sorted(ids)
    return rows.filter(
        Q(finding__isnull=True) | Q(finding__table__project_id__in=among),
        channel__project_id__in=among,
    )


def restrict(queryset: QuerySet, user: Any, project_field: str) -> QuerySet:
    """`queryset` narrowed to rows whose `project_field` is one of `user`'s projects."""
    return restrict_to(queryset, visible_project_ids(user), project_field)


def restrict_to(queryset: QuerySet, ids: frozenset[int] | None, project_field: str) -> QuerySet:
    """`queryset` narrowed to rows whose `project_field` is one of `ids` (visible_project_ids'
    answer, when the caller has it already; None: every project)."""
    if ids is None:
        return queryset
    return queryset.filter(**{f"{project_field}__in": sorted(ids)})


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


def table_project_id(table_id: int) -> int | None:
    """The project of a table (None when there is no such table), by one plain query."""
    rows = fetch_sql("table_project", _table_project_sql, [table_id])
    return rows[0][0] if rows else None


def _table_project_sql() -> str:
    column = Table._meta.get_field("project").column
    return f'SELECT "{column}" FROM "{Table._meta.db_table}" WHERE "id" = %s'


def _among(project_id: int | None, ids: frozenset[int] | None) -> bool:
    """A project exists (not None) and is one of `ids` (None: every project, staff)."""
    return project_id is not None and (ids is None or project_id in ids)


def sees_project(user: Any, project_id: int | None) -> bool:
    return _among(project_id, visible_project_ids(user))


def request_sees_project(request: Any, project_id: int | None) -> bool:
    """`sees_project` for the user of `request`, their projects read once per request."""
    return _among(project_id, request_projects(request))


def request_sees_table(request: Any, user: Any, table_id: int) -> bool:
    """Whether the table exists and `user` (the request's: the fast path authenticates
    before Django does) sees it, their projects read once per request."""
    return _among(table_project_id(table_id), projects_of(request, user))


def check_table(request: Any, table_id: int) -> None:
    """Http404 unless the request's user sees the table (the same answer as for no such
    table), their projects read once per request."""
    if not request_sees_table(request, request.user, int(table_id)):
        raise Http404("No Table matches the given query.")


def role_in(user: Any, project: Project | int) -> str | None:
    """`user`'s role in the project ("owner" for staff), None when not a member."""
    if is_staff(user):
        return Role.OWNER
    if user is None or not user.is_authenticated:
        return None
    project_id = project if isinstance(project, int) else project.pk
    found = Membership.objects.filter(user_id=user.pk, project_id=project_id)
    return found.values_list("role", flat=True).first()


def has_role(user: Any, project: Project | int, role: str) -> bool:
    """Whether `user` holds `role` or a higher one in the project (staff always)."""
    held = role_in(user, project)
    return held is not None and _RANK[Role(held)] >= _RANK[Role(role)]


def may_acknowledge(user: Any, table: Table) -> bool:
    """Acknowledging and re-opening a finding: members and owners of its project, and staff."""
    return has_role(user, table.project_id, Role.MEMBER)


def may_manage(user: Any, project: Project | int) -> bool:
    """Registering and removing the project's tables, managing its members, its alert rules
    and channels (and reading the channels' recipients): owners, staff."""
    return has_role(user, project, Role.OWNER)


def managed_project_ids(user: Any) -> frozenset[int] | None:
    """The ids of the projects `user` may manage (`may_manage`), at once for a list of rows
    of several projects; None means every project (staff)."""
    if is_staff(user):
        return None
    if user is None or not user.is_authenticated:
        return frozenset()
    owned = Membership.objects.filter(user_id=user.pk, role=Role.OWNER)
    return frozenset(owned.values_list("project_id", flat=True))


def named_project(user: Any, name: str, *, create: bool = False) -> Project | None:
    """The project called `name` if `user` sees it, else None (the caller answers as for no
    such project). Staff see every project, and with `create` a missing one is made."""
    found = queries.project_by_name(name)
    if found is None and create and is_staff(user):
        return queries.project_by_name(name, create=True)
    if found is None or not sees_project(user, found.pk):
        return None
    return found


def set_member(project: Project, user: Any, role: str) -> Membership:
    """Make `user` a member of `project` with `role` (changing the role of a member)."""
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": Role(role)}
    )
    return membership


def move_table(table_id: int, project: Project) -> None:
    """Put the table into `project`. Its findings generation moves too: cached lists and
    pages of several tables are keyed on it, and the table leaves or joins their readers'."""
    Table.objects.filter(pk=table_id).exclude(project=project).update(project=project)
    Table.bump_findings(table_id)


def check_visible(user: Any, pk: Any, visible: Callable[[Any], QuerySet], label: str) -> None:
    """Another project's object is a 404 on every route and method, before any role check (a
    403 would tell that it exists). Anonymous users and ids that are no number fall through to
    the permission classes' 401 and the router's 404."""
    if log_int(pk) is None or not (user and user.is_authenticated):
        return
    if not visible(user).filter(pk=pk).exists():
        raise Http404(f"No {label} matches the given query.")
