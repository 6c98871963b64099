"""Registering a table and writing its progress row (status, errors, the worker's lock).

Every write of a Table row by the ingest goes through `update_table`: with a lock token it
applies only while this worker still holds the table's lock, which is how a worker whose lock
expired learns (LockLost) that another one took the table over.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from audit.core import model
from audit.core.data.keys import valid_key_columns
from audit.core.jsonsafe import clean_text
from audit.core.log import open_log
from audit.core.scrub import scrub_error
from audit.core.vocab import StorageCause
from audit.ingest.columns import fit_columns
from audit.models import DEFAULT_PROJECT, Project, Table, project_named
from audit.trust.paths import check_registrable

log = logging.getLogger("audit.ingest")


class LockLost(Exception):
    """Another worker took over this table (our lock expired): the chunk was rolled back."""


def register_table(
    uri: str,
    name: str | None = None,
    key_columns: list[str] | None = None,
    project: Project | None = None,
) -> tuple[Table, bool]:
    """Validate `uri` (allowed root, not inside nor around another project's table, readable
    Delta log) and register it into `project` (None: the default project). Returns (table,
    created); an existing table keeps its project (callers move it when asked to).

    `key_columns` (None: leave as is) declares the table's key (duplicate_key findings)."""
    keys = valid_key_columns(key_columns) if key_columns is not None else None
    project = project or project_named(DEFAULT_PROJECT)
    normalised = check_registrable(uri, project.pk)  # before any read of the path
    listing = open_log(normalised).listing  # DeltaAuditError if it is not a readable table
    default_name = normalised.rstrip("/").rsplit("/", 1)[-1] or normalised
    table, created = Table.objects.get_or_create(
        uri=normalised,
        defaults={
            "name": (name or default_name)[:200],
            "status": Table.Status.INGESTING,
            "latest_version_in_log": listing.latest_version,
            "first_available_version": listing.first_available_version,
            "key_columns": keys or [],
            "project": project,
        },
    )
    if not created and keys is not None and table.key_columns != keys:
        Table.objects.filter(id=table.id).update(key_columns=keys, table_findings_dirty=True)
        table.key_columns = keys
    if not created and name and table.name != name:
        Table.objects.filter(id=table.id).update(name=name[:200])
        table.name = name
    return table, created


def update_table(table_id: int, lock_token: str | None, **fields: Any) -> bool:
    """UPDATE the table row (only while `lock_token` holds its lock). True when it applied.
    The progress numbers (versions of the listing, counts of stored commits) are clamped into
    their columns like every row fed by a log (audit.ingest.columns)."""
    rows = Table.objects.filter(id=table_id)
    if lock_token is not None:
        rows = rows.filter(locked_by=lock_token)
    return rows.update(**fit_columns(Table, fields)) == 1


def keep_lock(table_id: int, lock_token: str | None) -> None:
    """Push our lock's expiry forward between the long phases of a step (a huge commit can take
    longer than AUDIT_LOCK_SECONDS to read); stop at once if another worker took the table."""
    if lock_token is None:
        return
    until = timezone.now() + timedelta(seconds=settings.AUDIT_LOCK_SECONDS)
    if not update_table(table_id, lock_token, locked_until=until):
        raise LockLost(f"table {table_id}: lock lost while tailing; another worker has it")


def mark_up_to_date(
    table: Table, listing: model.LogListing, *, lock_token: str | None = None
) -> None:
    update_table(
        table.id,
        lock_token,
        status=Table.Status.OK,
        last_error="",
        error_cause="",
        last_tail_at=timezone.now(),
        latest_version_in_log=listing.latest_version,
        first_available_version=listing.first_available_version,
        backfill_target_version=None,
        backfill_started_at=None,
        backfill_rate=None,
    )


def mark_error(
    table: Table,
    message: str,
    *,
    lock_token: str | None = None,
    cause: str = StorageCause.OTHER,
) -> None:
    message = scrub_error(clean_text(message))  # stored and shown: no URL path, no secret
    log.warning("table %s (%s): %s", table.id, table.uri, message)
    update_table(
        table.id,
        lock_token,
        status=Table.Status.ERROR,
        last_error=message[:2000],
        error_cause=cause,
        last_tail_at=timezone.now(),
    )
