"""The table lease: the right to write one table's rows, held by one worker at a time.

A lease is a claim on the Table row (`locked_by` = its token, valid until `locked_until`).
Taking it is one conditional UPDATE (healthchecks' `filter(...).update(...)` pattern), so it is
atomic on SQLite and PostgreSQL alike and needs no extra service; a worker that dies keeps it
only until it expires. Every write of the table's progress made under it goes through
`write` or `guard`, which re-check the token in the same statement, so a worker whose lease
expired and was taken over learns it (LockLost) and its transaction is rolled back: it cannot
overwrite its successor.

A lease without a token (`TableLease(table_id)`) claims nothing and guards nothing: what a
command or a test that writes a table alone holds.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from audit.ingest.columns import fit_columns
from audit.models import Table


class LockLost(Exception):
    """Another worker took over this table (our lease expired): the write was rolled back."""


class TableLease:
    """One table's lease: `acquire` it, `keep` it between long phases, `release` it, and
    `guard` every write made under it."""

    __slots__ = ("table_id", "token")

    def __init__(self, table_id: int, token: str | None = None) -> None:
        self.table_id = table_id
        self.token = token  # None: no claim (a command or a test writing alone)

    def __repr__(self) -> str:
        return f"TableLease({self.table_id}, {self.token!r})"

    @classmethod
    def acquire(cls, table_id: int, ttl: float | None = None) -> TableLease | None:
        """Claim the table for `ttl` seconds (AUDIT_LOCK_SECONDS); None if another holds it."""
        now = timezone.now()
        token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        claimed = (
            Table.objects.filter(id=table_id)
            .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
            .update(locked_by=token, locked_until=_until(ttl, now))
        )
        return cls(table_id, token) if claimed == 1 else None

    def extend(self, ttl: float | None = None) -> bool:
        """Push the expiry forward; False when the lease is no longer ours."""
        if self.token is None:
            return True
        return self.write(locked_until=_until(ttl))

    def keep(self) -> None:
        """Extend, or stop at once (LockLost) if another worker took the table: between the
        long phases of a step (a huge commit can take longer than AUDIT_LOCK_SECONDS to read)."""
        if not self.extend():
            raise LockLost(f"table {self.table_id}: lock lost while tailing; another worker has it")

    def release(self) -> bool:
        """Give the table back now (not when the lease expires); False if it was not ours."""
        if self.token is None:
            return False
        return self.write(locked_by="", locked_until=None)

    def write(self, **fields: Any) -> bool:
        """UPDATE the table row while the lease holds; True when it applied. Numbers fed by a
        log are clamped into their columns, like every such row (audit.ingest.columns)."""
        rows = Table.objects.filter(id=self.table_id)
        if self.token is not None:
            rows = rows.filter(locked_by=self.token)
        return rows.update(**fit_columns(Table, fields)) == 1

    def guard(self, before: str, **fields: Any) -> None:
        """`write`, or raise LockLost ("lock lost before `before`"). Call it first inside the
        transaction of the rows it guards: on PostgreSQL the UPDATE row-locks the table, so two
        writers of one table serialise there, and a lost lease rolls everything back."""
        if not self.write(**fields):
            raise LockLost(f"table {self.table_id}: lock lost before {before}")


def _until(ttl: float | None, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(seconds=ttl or settings.AUDIT_LOCK_SECONDS)
