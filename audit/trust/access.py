"""Who sees which tables: the one place that decides (projects and their members' roles).

A table belongs to one project. A user sees the tables of the projects they are a member of,
in any role; staff (is_staff or superuser) see every project. Everything that shows a table,
a finding, a commit or a count (the API, its fast path and caches, the pages and their caches,
alerts, /metrics) asks here, so a table outside a user's projects answers 404 everywhere
rather than 403: its existence is not told either. The one gate of a table by its id, which
reads the row, is `audit.reads.visible.visible_table_or_404` (reads sit above trust).

Roles: viewer reads; member also acknowledges and re-opens findings; owner also manages the
project's tables (register, remove), members, alert rules and channels (and reads the channels'
recipients); staff everything. Alert rules, channels and deliveries are a project's too
(`audit.alerting.visibility`).

`who` below is a request (the answer is read once per request and kept on it) or a user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import QuerySet
from django.http import Http404

from audit.core.numbers import log_int
from audit.models import Membership, Project, Table

Role = Membership.Role
# Rank of each role: a role allows what every lower one does.
_RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.OWNER: 3}
Projects = frozenset[int] | None  # project ids; None: every project (staff)


def is_staff(user: Any) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def _is_request(who: Any) -> bool:
    return hasattr(who, "META") or hasattr(who, "_request")


def projects(who: Any, user: Any = None) -> Projects:
    """The ids of the projects the user sees (None: every project, staff); anonymous users
    see none. `who` a request: its user's (or `user`'s: the fast path authenticates before
    Django does), read once per request and kept on the request (Django's, which DRF's
    wraps, so the fast path and the view share it), never on the user (a user object can
    outlive its request: tokens' users are remembered), and only for the user it was asked
    for. `who` a user: read now. Read from the database on every request (a removed member
    loses access at once), by SQL built once per process."""
    if not _is_request(who):
        return _read_projects(who)
    user = who.user if user is None else user
    holder = getattr(who, "_request", who)
    key = user.pk if user is not None and user.is_authenticated else None
    kept = holder.__dict__.get("_audit_visible_projects")
    if kept is None or kept[0] != key:
        kept = holder._audit_visible_projects = (key, _read_projects(user))
    return kept[1]


_MEMBERSHIPS: list[str] = []


def _read_projects(user: Any) -> Projects:
    if user is None or not user.is_authenticated:
        return frozenset()
    if is_staff(user):
        return None
    if not _MEMBERSHIPS:
        meta = Membership._meta
        project, member = meta.get_field("project").column, meta.get_field("user").column
        _MEMBERSHIPS.append(f'SELECT "{project}" FROM "{meta.db_table}" WHERE "{member}" = %s')
    with connections["default"].cursor() as cursor:
        cursor.execute(_MEMBERSHIPS[0], [user.pk])
        return frozenset(row[0] for row in cursor.fetchall())


def scope_of(ids: Projects) -> str:
    """A cache-key part naming the projects `ids` a reader sees (`projects`' answer): bodies
    listing several tables are cached per project set, so a body is never served to a reader
    of other projects."""
    return "all" if ids is None else "p" + ",".join(str(i) for i in sorted(ids))


def sees(who: Any, project_id: int | None, user: Any = None) -> bool:
    """The project exists (not None) and the reader (`projects(who, user)`) sees it."""
    if project_id is None:
        return False
    ids = projects(who, user)
    return ids is None or project_id in ids


def restrict(queryset: QuerySet, who: Any, project_field: str) -> QuerySet:
    """`queryset` narrowed to rows whose `project_field` is one of the reader's projects
    (`who`: a request, a user, None for no one (nothing), or a set of project ids the caller
    has already)."""
    ids = who if isinstance(who, frozenset) else projects(who)
    if ids is None:  # staff
        return queryset
    return queryset.filter(**{f"{project_field}__in": sorted(ids)})


def object_or_404(who: Any, pk: Any, visible: Callable[[Any], QuerySet], label: str) -> None:
    """Another project's object is a 404 on every route and method, before any role check (a
    403 would tell that it exists): `visible(who)` is the reader's rows. Anonymous readers and
    ids that are no number (a list route has none) fall through, with no query, to the
    permission classes' 401 and the router's 404."""
    if log_int(pk) is None or signed_in(who) is None:
        return
    if not visible(who).filter(pk=pk).exists():
        raise Http404(f"No {label} matches the given query.")


def signed_in(who: Any) -> Any:
    """The signed-in user of a request (or a user), else None."""
    user = who.user if _is_request(who) else who
    return user if user is not None and user.is_authenticated else None


# --------------------------------------------------------------------------- roles


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


def managed_project_ids(user: Any) -> Projects:
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
    such project). Staff see every project, and with `create` a missing one is made (its slug
    is its name)."""
    found = Project.objects.filter(name=name).first()
    if found is None and create and is_staff(user):
        return Project.objects.get_or_create(name=name, defaults={"slug": name})[0]
    if found is None or not sees(user, found.pk):
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
