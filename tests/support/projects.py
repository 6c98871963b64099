"""Projects and memberships for tests: who sees which tables (audit/trust/access.py).

The personas bob (`member`) and charlie (`outsider`) are viewers of the default project (where
every table made without a project goes), so they read what they read before projects existed
and still may not change anything; tests of roles and of other projects make their own.
"""

from __future__ import annotations

from typing import Any

from audit.models import DEFAULT_PROJECT, Project, Table, project_named
from audit.trust.access import move_table, set_member


def project(name: str) -> Project:
    return project_named(name)


def join(user: Any, name: str = DEFAULT_PROJECT, role: str = "viewer") -> Any:
    """Make `user` a member of the project `name` (created if missing) with `role`."""
    set_member(project_named(name), user, role)
    return user


def into(table: Table, name: str) -> Table:
    """Move `table` into the project `name` (created if missing)."""
    target = project_named(name)
    move_table(table.pk, target)
    table.refresh_from_db()
    return table
