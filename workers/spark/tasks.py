"""Running the Spark fleet audit from Django: pick tables, lock them, run the job, store results.

Results are stored through audit.ingest (`store_history_chunk` + `upsert_findings`), the same
functions the Celery tail uses, so the dashboard and the API cannot tell the paths apart.

Entry points: `run_spark_audit` (used by `manage.py spark_audit`), the Celery task
`spark_audit_tables`, and `should_use_spark`, which the tail task asks before backfilling a
long history itself. Nothing here imports PySpark until a job actually runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.alerting.health_findings import alert_on_health
from audit.core.errors import DeltaAuditError, one_line
from audit.core.runs.table import AuditedTable
from audit.core.vocab import TABLE_LEVEL_KINDS
from audit.ingest.chunk import store_history_chunk
from audit.ingest.findings import upsert_findings
from audit.ingest.lease import LockLost, TableLease
from audit.ingest.plan import TailResult, plan_next_chunk
from audit.ingest.tables import mark_error, mark_up_to_date, register_table
from audit.models import Table
from audit.tail import kept_logs
from audit.tail.incidents import refresh_incidents
from audit.tail.step import tail_options
from audit.trust.limits import dv_limits
from audit.trust.paths import check_registered, read_scope_of

log = logging.getLogger(__name__)


def should_use_spark(table: Table, pending_commits: int) -> bool:
    """True when a backfill of `pending_commits` should go through Spark, not the tail.

    AUDIT_SPARK_BACKFILL_THRESHOLD = 0 (the default) keeps every table on the Python path.
    """
    threshold = int(getattr(settings, "AUDIT_SPARK_BACKFILL_THRESHOLD", 0) or 0)
    if threshold <= 0 or table.status == Table.Status.PAUSED:
        return False
    return pending_commits > threshold


def resolve_tables(refs: Iterable[str] | None, *, all_tables: bool = False) -> list[Table]:
    """Tables by id or URI; a URI not registered yet is registered (validated) first."""
    if all_tables:
        return list(Table.objects.exclude(status=Table.Status.PAUSED).order_by("id"))
    tables: list[Table] = []
    for ref in refs or []:
        ref = ref.strip()
        if ref.isdigit():
            try:
                tables.append(Table.objects.get(id=int(ref)))
            except Table.DoesNotExist:
                raise DeltaAuditError(f"no registered table has id {ref}") from None
        else:
            tables.append(register_table(ref)[0])
    return list({t.id: t for t in tables}.values())


def run_spark_audit(
    tables: list[Table],
    *,
    master: str | None = None,
    spark: Any = None,
    leases: dict[int, TableLease] | None = None,
    check_data: bool | None = None,
) -> list[TailResult]:
    """Audit `tables` in one Spark job and store the results. One TailResult per table.

    Each table is leased for the job (AUDIT_SPARK_LOCK_SECONDS; `leases` hands over those the
    caller already holds); a table another worker holds is reported busy and skipped.
    """
    leases = dict(leases or {})
    results: list[TailResult] = []
    held: dict[int, TableLease] = {}
    ttl = settings.AUDIT_SPARK_LOCK_SECONDS
    try:
        for table in tables:
            lease = leases.get(table.id) or TableLease.acquire(table.id, ttl=ttl)
            if lease is None or not lease.extend(ttl):
                results.append(TailResult(table.id, "busy", message="locked by another worker"))
                continue
            held[table.id] = lease
            try:
                check_registered(table.uri)  # roots may have changed since registration
            except DeltaAuditError as err:
                message = one_line(err)
                mark_error(table, message, lease=lease)
                results.append(TailResult(table.id, "error", message=message))
                held.pop(table.id).release()
        by_uri = {t.uri: t for t in tables if t.id in held}
        if by_uri:
            results += _run(by_uri, held, master=master, spark=spark, check_data=check_data)
    finally:
        for lease in held.values():
            lease.release()
    return results


def _run(
    by_uri: dict[str, Table],
    held: dict[int, TableLease],
    *,
    master: str | None,
    spark: Any,
    check_data: bool | None,
) -> list[TailResult]:
    from workers.spark.job import audit_fleet  # noqa: PLC0415  (PySpark only when needed)

    spark = spark or session(master)
    outcomes = audit_fleet(
        spark,
        list(by_uri),
        chunk_commits=settings.AUDIT_SPARK_CHUNK_COMMITS,
        check_data=settings.AUDIT_CHECK_DATA if check_data is None else check_data,
        read_roots={uri: read_scope_of(uri) for uri in by_uri},  # each table its own
        sample_rows=settings.AUDIT_WITNESS_SAMPLE_ROWS,
        dv_limits=dv_limits(),
    )
    results = []
    for outcome in outcomes:
        table = by_uri.get(outcome.table_uri) or Table.objects.get(uri=outcome.table_uri)
        results.append(store_outcome(table, outcome, lease=held.get(table.id)))
    return results


def session(master: str | None = None) -> Any:
    """The SparkSession of this process (created once; reused by later jobs)."""
    from workers.spark.session import get_spark  # noqa: PLC0415

    return get_spark(
        master or settings.AUDIT_SPARK_MASTER,
        log_level=settings.AUDIT_SPARK_LOG_LEVEL,
        log_file=settings.AUDIT_SPARK_LOG_FILE or None,
        extra_conf=dict(getattr(settings, "AUDIT_SPARK_CONF", {}) or {}),
    )


def store_outcome(table: Table, outcome: Any, *, lease: TableLease | None = None) -> TailResult:
    """Store one table's Spark result exactly as the tail stores a backfill, under `lease`
    (none: the caller writes the table alone)."""
    lease = lease or TableLease(table.id)
    lease.extend(settings.AUDIT_SPARK_LOCK_SECONDS)
    if outcome.error is not None:
        mark_error(table, outcome.error, lease=lease)
        return TailResult(table.id, "error", message=outcome.error)
    history, audit = outcome.history, outcome.audit
    table.refresh_from_db()
    try:
        plan = plan_next_chunk(
            history.listing, table.last_seen_version, max(len(history.listing.commit_versions), 1)
        )
    except DeltaAuditError as err:
        message = one_line(str(err))
        mark_error(table, message, lease=lease)
        return TailResult(table.id, "error", message=message)
    try:
        if plan is None:
            result = TailResult(table.id, "ok", last_seen_version=table.last_seen_version)
            mark_up_to_date(lease, history.listing)
        else:
            result = store_history_chunk(
                table, history, audit, versions=(plan.start, plan.end), lease=lease
            )
            alert_on_health(table, result.health)  # after the chunk's transaction committed
        opened, resolved = store_table_findings(table, audit.findings, lease)
        regroup_incidents(table, lease)
    except LockLost as err:
        return TailResult(table.id, "busy", message=str(err))
    result.opened += opened
    result.resolved += resolved
    return result


def regroup_incidents(table: Table, lease: TableLease) -> None:
    """Group the stored findings into incidents as the tail's whole-table refresh does, so a
    table audited on Spark has its incidents at once. The history is read here, on the driver,
    from the first version the findings name: grouped over the job's own history, a stale
    overwrite's incident counted no damage where the log's history counts its two rows
    (tests/e2e/test_spark.py compares the stored incidents of both paths)."""
    table.refresh_from_db()
    delta_log = kept_logs.refreshed(check_registered(table.uri))
    tailed = AuditedTable(delta_log, tail_options)
    refresh_incidents(table, tailed, table.last_seen_version, lease=lease)


def store_table_findings(table: Table, findings: list[Any], lease: TableLease) -> tuple[int, int]:
    """The table-level findings of a full audit, as refresh_table_findings stores them."""
    now = timezone.now()
    table_level = [f for f in findings if f.kind in TABLE_LEVEL_KINDS]
    with transaction.atomic():
        lease.guard(
            "storing table-level findings", table_findings_dirty=False, table_findings_at=now
        )
        return upsert_findings(table, table_level, scope=None, table_level=True, now=now)


# The name queued messages and AUDIT_SPARK_QUEUE's route (config/settings.py) carry: it stays
# what it was when this module was workers/spark_tasks.py, so a deploy strands no message.
@shared_task(name="workers.spark_tasks.spark_audit_tables", acks_late=True)
def spark_audit_tables(
    table_ids: list[int], master: str | None = None, tokens: dict[str, str] | None = None
) -> str:
    """Celery: audit these tables on Spark. `tokens` ({"<id>": token}) hands over held leases."""
    tables = list(Table.objects.filter(id__in=table_ids))
    handed = {int(k): TableLease(int(k), v) for k, v in (tokens or {}).items()}
    try:
        results = run_spark_audit(tables, master=master, leases=handed)
    except DeltaAuditError as err:  # Java missing, Spark unreachable: one line, nothing stored
        for lease in handed.values():
            lease.release()
        return f"spark audit failed: {one_line(str(err))}"
    return "; ".join(r.line() for r in results) or "no tables"
