"""Celery tasks: thin wrappers over audit.ingest. Each returns a one-line summary.

`tail_all` (run by beat every AUDIT_TAIL_INTERVAL_SECONDS) dispatches `tail_table` for the
tables with news; `tail_table` stores one chunk under the table's lease and, during a backfill,
queues itself again so a long history never starves the other tables.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from audit.ingest.lease import LockLost, TableLease
from audit.ingest.tables import mark_error
from audit.models import Table
from audit.tail import shared
from audit.tail.polling import tables_due
from audit.tail.step import reaudit, tail_once

log = logging.getLogger(__name__)

# Worth retrying: the database or the broker was briefly unavailable or busy.
TRANSIENT_ERRORS = (OperationalError, InterfaceError, BrokerError, ConnectionError, TimeoutError)


@shared_task(
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=8,
    acks_late=True,
)
def tail_table(table_id: int) -> str:
    lease = TableLease.acquire(table_id)
    if lease is None:
        return f"table {table_id}: busy (another worker holds its lock)"
    handed = _hand_to_spark(lease)
    if handed:
        return handed  # the Spark task now holds (and will release) the lease
    try:
        result = tail_once(table_id, lease=lease)
    except Table.DoesNotExist:
        return f"table {table_id}: no longer registered"
    except LockLost as err:
        return str(err)
    except DatabaseError:
        raise  # transient ones are retried by the decorator; the lock expires on its own
    except Exception as err:  # a core bug on a hostile log must not wedge the table silently
        log.exception("tail of table %s failed", table_id)
        # The type only: the exception's text may quote the log ("year 3170843 is out of range").
        message = f"internal error while tailing: {type(err).__name__}"
        mark_error(Table.objects.get(id=table_id), message, lease=lease)
        return f"table {table_id}: error: {message}"
    finally:
        lease.release()
    if result.more:
        tail_table.delay(table_id)
    return result.line()


def enqueue_tail(table_id: int) -> bool:
    """Ask a worker to tail the table now (a table just registered); False when the broker is
    unreachable. A down broker must not lose a registration: the table is stored (status
    "ingesting") and the beat's next `tail_all` pass picks it up."""
    try:
        tail_table.apply_async((table_id,), retry=False)
    except Exception as err:  # kombu/redis connection errors vary by transport
        log.warning("could not queue the tail of table %s: %s", table_id, err)
        return False
    return True


def _hand_to_spark(lease: TableLease) -> str | None:
    """A backfill longer than AUDIT_SPARK_BACKFILL_THRESHOLD commits goes through Spark."""
    from workers.spark.tasks import should_use_spark, spark_audit_tables

    table_id = lease.table_id
    table = Table.objects.filter(id=table_id).first()
    if table is None or table.latest_version_in_log is None:
        return None  # not listed yet: the first chunk tells how far behind it is
    stored = -1 if table.last_seen_version is None else table.last_seen_version
    pending = table.latest_version_in_log - stored
    if not should_use_spark(table, pending):
        return None
    lease.extend(settings.AUDIT_SPARK_LOCK_SECONDS)
    try:
        spark_audit_tables.delay([table_id], tokens={str(table_id): lease.token})
    except BrokerError:
        lease.release()
        raise
    return f"table {table_id}: {pending} commits behind, backfill handed to Spark"


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def tail_all() -> str:
    # One pass at a time in the pool: the next beat tick after a slow pass starts afresh.
    lease = shared.claim_pass("tail-all", ttl=max(settings.AUDIT_TAIL_INTERVAL_SECONDS * 5, 10.0))
    if lease is None:
        return "another tail pass is running"
    try:
        due = tables_due()
        expires = max(settings.AUDIT_TAIL_INTERVAL_SECONDS * 5, 10.0)
        for table_id in due:
            tail_table.apply_async((table_id,), expires=expires)
    finally:
        shared.release_pass("tail-all", lease)
    return f"dispatched {len(due)} tables"


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def drain_notifications() -> str:
    """Tail the tables S3 event notifications name (AUDIT_NOTIFY_QUEUES; notifications.py)."""
    from audit.tail import notifications

    dispatched: set[int] = set()

    def dispatch(uris: set[str]) -> None:
        # No expiry: a notice is not superseded by the next pass the way a probe is. Should
        # the step be lost anyway, the notice recorded on the row has the next pass redo it.
        for table_id in notifications.note_commits(uris):
            if table_id not in dispatched:
                tail_table.delay(table_id)
                dispatched.add(table_id)

    for _root, queue_url in notifications.notify_queues():
        try:
            notifications.drain(queue_url, on_tables=dispatch)
        except Exception as err:  # a queue outage must not stop the other queues
            log.warning("cannot read notifications from %s: %s", queue_url, type(err).__name__)
    return f"notified {len(dispatched)} tables"


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=5, acks_late=True)
def reaudit_table(table_id: int, start: int | None = None, end: int | None = None) -> str:
    lease = TableLease.acquire(table_id)
    if lease is None:
        return f"table {table_id}: busy (another worker holds its lock)"
    try:
        return reaudit(table_id, start=start, end=end).line()
    finally:
        lease.release()


def declare_default_queue() -> None:
    """Create the broker's default queue before a worker and beat start together.

    kombu's SQLAlchemy transport creates queues with a get-or-create that races when two processes
    start at once (UNIQUE constraint failed: kombu_queue.name); declaring it first avoids that.
    """
    from workers import app

    with app.connection_for_write() as conn:
        queue = conn.SimpleQueue(app.conf.task_default_queue)
        queue.close()
