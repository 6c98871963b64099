"""A per-table ingest lock: a claim on the Table row, valid until `locked_until`.

Claiming is one conditional UPDATE (healthchecks' `filter(...).update(...)` pattern), so it is
atomic on SQLite and PostgreSQL alike and needs no extra service. A worker that dies keeps the
claim only until it expires; writes made under the lock re-check the token in the same
transaction (audit.ingest), so a worker whose claim expired cannot overwrite a successor.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from audit.models import Table


def new_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def acquire(table_id: int, ttl: float | None = None) -> str | None:
    """Claim the table for `ttl` seconds. Returns the token, or None if someone else holds it."""
    now = timezone.now()
    token = new_token()
    claimed = (
        Table.objects.filter(id=table_id)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .update(
            locked_by=token,
            locked_until=now + timedelta(seconds=ttl or settings.AUDIT_LOCK_SECONDS),
        )
    )
    return token if claimed == 1 else None


def extend(table_id: int, token: str, ttl: float | None = None) -> bool:
    """Push our claim's expiry forward; False when it is no longer ours."""
    until = timezone.now() + timedelta(seconds=ttl or settings.AUDIT_LOCK_SECONDS)
    return Table.objects.filter(id=table_id, locked_by=token).update(locked_until=until) == 1


def release(table_id: int, token: str) -> bool:
    return (
        Table.objects.filter(id=table_id, locked_by=token).update(locked_by="", locked_until=None)
        == 1
    )
