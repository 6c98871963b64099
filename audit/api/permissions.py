"""Who may do what. Anonymous users get nothing (401); see the module docstring of views.py.

Tables belong to projects (audit/trust/access.py decides who sees what):

- A table outside the projects a user is a member of answers 404 on every endpoint (by id in
  the URL or as a filter value), as if it did not exist; lists and counts leave it out.
- Viewers of a project read its tables, commits and findings.
- Members also acknowledge and re-open its findings (an on-call action: whoever is paged must
  be able to silence what they are handling); viewers get 403.
- Owners also register tables into the project and remove its tables.
- Administrators (`is_staff` or superuser): every project, every action.
- A read-only API token (`manage.py api_token USER --read-only`) gets 403 on any unsafe method,
  whatever its user's roles (audit/api/authentication.py).
"""

from __future__ import annotations

from django.http import Http404
from rest_framework.permissions import SAFE_METHODS, BasePermission

from audit.reads import cache
from audit.reads.visible import ID, KEY, NO_TABLE, ROW, visible_table_or_404
from audit.trust import access


class IsAdminOrReadOnly(BasePermission):
    message = "only administrators (is_staff) may change this"

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or access.is_staff(user)


class ProjectRoles(BasePermission):
    """Reads for every authenticated user (the querysets hold only their projects' rows);
    writes are let through to the view, which checks the role they need in the object's
    project (after the object is found, so another project's object is a 404, not a 403)."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated)


class TableRoutes:
    """A viewset mixin for the routes under /api/tables/{id}/: every one of them passes the one
    gate (`visible_table_or_404`) before any role check, method dispatch or work, and a
    handler reads the gate's table with `table()` (the row, read once per request).

    The routes whose handler reads the table's row (`ROW_ACTIONS`) read it at the gate (its
    project comes in it: one query, not the project's and then the row's); the others check
    the project by one plain query and read what they need of the table afterwards."""

    ROW_ACTIONS = frozenset(
        {"commits", "health", "health_history", "changes", "diff", "orphans", "partial_update"}
    )

    def check_permissions(self, request):
        if "pk" in self.kwargs and access.signed_in(request) is not None:
            columns = ROW if self.action in self.ROW_ACTIONS else ID
            found = visible_table_or_404(request, self.kwargs["pk"], columns=columns)
            self._gate = found
            if columns == ROW:
                self._row = found
        super().check_permissions(request)

    def table(self):
        """The gate's table (every column)."""
        table = self.__dict__.get("_row")
        if table is None:
            table = self._row = visible_table_or_404(self.request, self.kwargs["pk"])
        return table

    def table_key(self):
        """The columns the table's cache keys read (a cheaper read than the whole row)."""
        if self.__dict__.get("_gate") is None:
            return visible_table_or_404(self.request, self.kwargs["pk"], columns=KEY)
        table = cache.table_key_row(int(self.kwargs["pk"]))  # the gate passed this request
        if table is None:
            raise Http404(NO_TABLE)
        return table
