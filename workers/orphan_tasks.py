"""Celery tasks of the orphan scan (beat runs `scan_all_orphans`; see audit/tail/orphan_scans.py)."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from audit.models import Table
from audit.tail import orphan_scans

TRANSIENT_ERRORS = (OperationalError, InterfaceError)


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def scan_all_orphans() -> str:
    due = orphan_scans.queue_due()
    for table_id in due:
        # The lowest priority (Redis serves 0 first, 9 last; brokers without priorities ignore
        # it): thousands of scans ahead of the tail steps held commits back for as long as the
        # scans took. A pass now queues only its share (`scans_per_pass`), still behind the tail.
        scan_table_orphans.apply_async(
            (table_id,), expires=orphan_scans.QUEUED_SCAN_EXPIRES, priority=9
        )
    return f"dispatched {len(due)} orphan scans"


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def scan_table_orphans(table_id: int) -> str:
    table = Table.objects.filter(id=table_id).first()
    if table is None:
        return f"table {table_id}: gone"
    scan = orphan_scans.scan_table(table)
    if scan.error:
        return f"table {table_id}: orphan scan failed: {scan.error}"
    return f"table {table_id}: {scan.files} orphan files, {scan.bytes} bytes"
