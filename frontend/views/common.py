"""What every dashboard page shares: who may change things, JSON shown as text."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import PermissionDenied

from audit.core.vocab import SEVERITY_ORDER

# Worst first, as the pages list them.
SEVERITIES = tuple(str(s) for s in reversed(SEVERITY_ORDER))


def is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_staff)


def require_admin(user: Any, doing: str) -> None:
    """PermissionDenied (403) unless `user` is an administrator: "only administrators <doing>"."""
    if not is_admin(user):
        raise PermissionDenied(f"only administrators {doing}")


def pretty(value: Any) -> str:
    """Indented JSON for a <pre>: stored JSON and log values, whatever their types."""
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
