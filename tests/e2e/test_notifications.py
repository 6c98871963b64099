"""Tailing on S3 event notifications (SQS) instead of polling, against moto's S3 + SQS server."""

from __future__ import annotations

import uuid

import orjson
import pytest
from deltalake import write_deltalake

from audit.ingest.lease import TableLease
from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail import notifications
from tests.e2e.s3count import CountingS3
from tests.support.tables import rows
from tests.support.waiting import wait_for


def _record(bucket: str, key: str, name: str = "ObjectCreated:Put") -> dict:
    return {"eventName": name, "s3": {"bucket": {"name": bucket}, "object": {"key": key}}}


def test_commit_files_in_events_name_their_tables():
    body = orjson.dumps(
        {
            "Records": [
                _record("lake", "sales%2Forders%2F_delta_log%2F00000000000000000007.json"),
                _record("lake", "top/_delta_log/00000000000000000000.checkpoint.parquet"),
                _record("lake", "x/_delta_log/_staged_commits/00000000000000000001.u.json"),
                _record("lake", "y/_delta_log/00000000000000000001.json", "ObjectRemoved:Delete"),
                _record("lake", "_delta_log/00000000000000000003.json"),
                "junk",
            ]
        }
    ).decode()
    assert notifications.tables_in_event(body) == {"s3://lake/sales/orders", "s3://lake"}
    via_sns = orjson.dumps({"Type": "Notification", "Message": body}).decode()
    assert notifications.tables_in_event(via_sns) == {"s3://lake/sales/orders", "s3://lake"}
    assert notifications.tables_in_event("not json") == set()
    assert (
        notifications.tables_in_event('{"Service": "Amazon S3", "Event": "s3:TestEvent"}') == set()
    )


def _notified_bucket(s3: CountingS3) -> tuple[str, str]:
    """A bucket sending commit-file events to a new SQS queue: (bucket, queue url)."""
    bucket = f"lake2-n-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(bucket)
    return bucket, s3.notify_queue(bucket)


def test_drain_reads_and_deletes_the_queue(s3, monkeypatch):
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket, queue = _notified_bucket(s3)
    notifications.drain(queue)  # the bucket's test event
    uri = f"s3://{bucket}/sales/orders"
    write_deltalake(uri, rows(), storage_options=s3.options)
    write_deltalake(uri, rows(start=5), mode="append", storage_options=s3.options)
    assert notifications.drain(queue) == {uri}
    assert notifications.drain(queue) == set()


def test_a_batch_is_deleted_only_after_its_tables_are_noted(s3, monkeypatch):
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket, queue = _notified_bucket(s3)
    notifications.drain(queue)  # the bucket's test event
    write_deltalake(f"s3://{bucket}/t", rows(), storage_options=s3.options)

    def fail(uris: set[str]) -> None:
        raise ConnectionError("database away")

    with pytest.raises(ConnectionError):
        notifications.drain(queue, on_tables=fail)
    attributes = s3.boto("sqs").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"  # received, kept


def _queue_empty(s3: CountingS3, queue: str) -> bool:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    got = s3.boto("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=names)
    return all(got["Attributes"][name] == "0" for name in names)


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_worker_tails_many_notified_tables_without_probing(
    s3, monkeypatch, settings, celery_workers
):
    """25 tables (three receive batches) tailed on notice alone, one of them busy (claimed by
    another worker) when its commit lands: a later pass redoes the notice it could not answer."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket, queue = _notified_bucket(s3)
    root = f"s3://{bucket}"
    settings.AUDIT_ALLOWED_ROOTS = [root]
    uris = [f"{root}/t{i:02d}" for i in range(25)]
    for uri in uris:
        write_deltalake(uri, rows(), storage_options=s3.options)
    tables = [register_table(uri)[0] for uri in uris]
    celery_workers.start(
        "w1",
        **s3.env,
        AUDIT_ALLOWED_ROOTS=root,
        AUDIT_NOTIFY_QUEUES=f"{root}={queue}",
        # No polling would find the commits within the test: only the notifications can.
        AUDIT_FULL_CHECK_SECONDS="3600",
        AUDIT_IDLE_FULL_CHECK_SECONDS="3600",
        AUDIT_TABLE_FINDINGS_SECONDS="3600",
    )
    ingested = Table.objects.filter(last_seen_version=0, notified_at__isnull=True)
    wait_for(lambda: ingested.count() == len(tables), 90, message=celery_workers.logs())
    wait_for(lambda: _queue_empty(s3, queue), 30, message="the worker never drained the queue")
    busy = tables[0]
    lease = TableLease.acquire(busy.id, ttl=4)  # another worker's step, listed before the commit
    assert lease is not None
    with s3.counting() as seen:
        for i, uri in enumerate(uris):
            write_deltalake(uri, rows(start=5 + i), mode="append", storage_options=s3.options)
        stored = Commit.objects.filter(table__in=tables, version=1)
        wait_for(lambda: stored.count() == len(tables), 90, message=celery_workers.logs())
    probes = [r for r in seen if r[0] == "HEAD" and "/_delta_log/" in r[1]]
    assert probes == [], probes  # tailed on notice, not by probing the next commit file
    # Each step clears its table's notice after it stored the commit (and refreshed what was
    # due), and a notice that came in after a step listed the log waits for a later pass:
    # every notice is answered, though not in the instant the commit row appears.
    noticed = Table.objects.filter(id__in=[t.id for t in tables], notified_at__isnull=False)
    wait_for(lambda: noticed.count() == 0, 60, message=celery_workers.logs())
