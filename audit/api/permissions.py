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

from rest_framework.permissions import SAFE_METHODS, BasePermission

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
