"""Which table URIs users may register, and where each table's reads may go.

`check_allowed(uri)` is the one gate the CLI, the API and the workers call before touching a
path a user typed; `check_registered(uri)` repeats it right before a stored table's log is
read. `check_registrable(uri, project)` adds the projects: a table may not be registered
inside another project's table, nor around one (its folders would be that table's files),
and the refusal reads exactly as a path outside the roots does. The rule itself (resolution
of symlinks, `..`, `file:` URIs, remote URI checks) is pure and lives in
audit/core/storage/roots.py, with the same rule for the data files a log names; this module
supplies the configured roots and what the database knows of projects.

`read_scope_of(uri)` is where a registered table's log may steer reads (the witness, key
columns, deletion vectors): its own location and its project's granted read roots
(`Project.read_roots`, each still under AUDIT_ALLOWED_ROOTS), never inside another project's
table. `manage.py audit <uri>` is a local user's tool with no project: it reads inside the
audited table's own location, plus the roots its `--read-root` options name.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from audit.core.storage.roots import (
    REMOTE_SCHEMES,
    ReadScope,
    UriNotAllowed,
    ancestors,
    not_under_roots,
    table_scope,
    within,
)
from audit.core.storage.roots import check_allowed as _check_allowed

__all__ = [
    "REMOTE_SCHEMES",
    "UriNotAllowed",
    "allowed_roots",
    "check_allowed",
    "check_grantable",
    "check_registered",
    "check_registrable",
    "read_scope_of",
]


def allowed_roots() -> list[str]:
    """settings.AUDIT_ALLOWED_ROOTS, read at each call (tests and reloads may change it)."""
    from django.conf import settings

    return list(settings.AUDIT_ALLOWED_ROOTS)


def check_allowed(uri: str, roots: list[str] | None = None) -> str:
    """The normalised form of `uri` if it lies under one of `roots`; else UriNotAllowed.

    `roots` defaults to settings.AUDIT_ALLOWED_ROOTS. Local results are absolute, resolved
    paths; remote results are `scheme://bucket/path` without a trailing slash.
    """
    return _check_allowed(uri, allowed_roots() if roots is None else roots)


def check_registered(uri: str) -> str:
    """Re-check a stored table URI right before its log is read (tail, analyses, pages).

    Registration resolved the path once; a directory swapped for a symlink afterwards, or a
    root removed from AUDIT_ALLOWED_ROOTS since, must stop the reads, not only new sign-ups.
    """
    try:
        return check_allowed(uri)
    except UriNotAllowed as err:
        raise UriNotAllowed(f"registered table refused: {err}") from None


def check_registrable(uri: str, project_id: int) -> str:
    """`check_allowed`, and not inside nor around a table of another project than
    `project_id` (the same refusal, before anything is read: whether such a path exists or
    holds a table must not show)."""
    normalised = check_allowed(uri)
    if _other_tables(project_id, [normalised], exclude_uri=normalised):
        raise not_under_roots(uri)
    return normalised


def check_grantable(uri: str, project_id: int) -> str:
    """A read root for project `project_id`: under AUDIT_ALLOWED_ROOTS and not inside (nor
    equal to) another project's table. Tables of other projects inside it stay unread."""
    normalised = check_allowed(uri)
    nested = _other_tables(project_id, [normalised])
    if any(within(normalised, other) for other in nested):
        raise not_under_roots(uri)
    return normalised


def read_scope_of(uri: str) -> ReadScope:
    """Where the registered table at `uri` may read (its own location alone when `uri` is
    no registered table). Granted roots no longer under AUDIT_ALLOWED_ROOTS are left out."""
    from audit.models import Table

    row = Table.objects.filter(uri=uri).values("project_id", "project__read_roots").first()
    if row is None:
        return table_scope(uri)
    granted = []
    for root in row["project__read_roots"] or []:
        try:
            granted.append(check_allowed(root))
        except UriNotAllowed:
            continue
    others = _other_tables(row["project_id"], [uri, *granted], exclude_uri=uri)
    return table_scope(uri, granted, others)


def _other_tables(
    project_id: int, locations: list[str], exclude_uri: str | None = None
) -> list[str]:
    """URIs of other projects' tables at, under or above any of `locations` (normalised)."""
    from audit.models import Table

    if not locations:
        return []
    near = Q()
    for location in locations:
        near |= Q(uri=location) | Q(uri__startswith=location.rstrip("/") + "/")
        near |= Q(uri__in=ancestors(location))
    rows: Any = Table.objects.filter(near).exclude(project_id=project_id)
    if exclude_uri is not None:
        rows = rows.exclude(uri=exclude_uri)
    return list(rows.values_list("uri", flat=True))
