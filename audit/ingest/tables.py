"""Registering a table and writing its progress row (status, errors).

Every write of a Table row's progress by the ingest goes through the table's lease
(audit.ingest.lease): it applies only while this worker still holds the table, which is how a
worker whose lease expired learns (LockLost) that another one took the table over.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from audit.core import model
from audit.core.data.keys import valid_key_columns
from audit.core.jsonsafe import clean_text
from audit.core.log import open_log
from audit.core.scrub import scrub_error
from audit.core.vocab import StorageCause
from audit.ingest.lease import TableLease
from audit.models import DEFAULT_PROJECT, Project, Table, project_named
from audit.trust.paths import check_registrable

log = logging.getLogger("audit.ingest")


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


def mark_up_to_date(lease: TableLease, listing: model.LogListing) -> None:
    lease.write(
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
    lease: TableLease | None = None,
    cause: str = StorageCause.OTHER,
) -> None:
    """Put the table in error with one line (`lease`: the caller's, if it holds one)."""
    message = scrub_error(clean_text(message))  # stored and shown: no URL path, no secret
    log.warning("table %s (%s): %s", table.id, table.uri, message)
    (lease or TableLease(table.id)).write(
        status=Table.Status.ERROR,
        last_error=message[:2000],
        error_cause=cause,
        last_tail_at=timezone.now(),
    )
