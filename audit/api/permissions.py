"""Who may do what. Anonymous users get nothing (401); see the module docstring of views.py.

- Administrators (`is_staff`): everything, including registering and removing tables.
- Other authenticated users: read everything, and acknowledge / re-open findings (an on-call
  action: whoever is paged must be able to silence what they are handling). There is no
  per-table ownership in the models, so an "outsider" is simply a read-only member.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission


class IsAdminOrReadOnly(BasePermission):
    message = "only administrators (is_staff) may change this"

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or bool(user.is_staff)
