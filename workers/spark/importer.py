"""`manage.py import_audit <root>`: a fleet audit's Delta-table results into the dashboard's DB.

This is how a fleet audited on Databricks/EMR (workers/spark/entry.py --output) reaches the
dashboard. Each table's latest complete run is rebuilt as the TableOutcome the Spark job
produced (workers.spark.output.read_outcomes) and stored by `spark_tasks.store_outcome`, the
writer `spark_audit` uses (audit.ingest underneath): versions already stored are skipped, so
importing the same results twice stores nothing twice. Tables are registered on the way
(allowed roots apply) and locked while stored, like any other writer.
"""

from __future__ import annotations

from django.conf import settings

from audit.core.errors import DeltaAuditError, one_line
from audit.ingest.lease import TableLease
from audit.ingest.plan import TailResult
from audit.ingest.tables import register_table
from workers.spark.output import read_outcomes
from workers.spark.tasks import store_outcome


def import_results(
    root: str, *, storage_options: dict[str, str] | None = None
) -> list[tuple[str, TailResult]]:
    """(table URI, result) per table found under `root`. Raises DeltaAuditError if unreadable."""
    results = []
    for outcome in read_outcomes(root, storage_options=storage_options):
        try:
            table, _ = register_table(outcome.table_uri)
        except DeltaAuditError as err:
            message = one_line(str(err))
            results.append((outcome.table_uri, TailResult(0, "error", message=message)))
            continue
        lease = TableLease.acquire(table.id, ttl=settings.AUDIT_SPARK_LOCK_SECONDS)
        if lease is None:
            busy = TailResult(table.id, "busy", message="locked by another worker")
            results.append((outcome.table_uri, busy))
            continue
        try:
            results.append((outcome.table_uri, store_outcome(table, outcome, lease=lease)))
        finally:
            lease.release()
    return results
