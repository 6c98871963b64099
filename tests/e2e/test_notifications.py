"""Tailing on S3 event notifications (SQS) instead of polling, against moto's S3 + SQS server."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
from deltalake import write_deltalake

from audit.ingest.tables import register_table
from audit.models import Commit
from audit.tail import logs as tailing
from audit.tail import notifications
from audit.tail.step import tail_once
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


@pytest.fixture(scope="module")
def s3():
    server = CountingS3()
    yield server
    server.stop()


def _notified_bucket(s3: CountingS3) -> tuple[str, str]:
    """A bucket sending commit-file events to a new SQS queue: (bucket, queue url)."""
    import boto3

    sqs = boto3.client(
        "sqs",
        endpoint_url=s3.endpoint,
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )
    bucket = f"lake2-n-{uuid.uuid4().hex[:10]}"
    queue = sqs.create_queue(QueueName=bucket)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.create_bucket(bucket)
    s3.boto().put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": arn,
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "suffix", "Value": ".json"}]}},
                }
            ]
        },
    )
    return bucket, queue


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


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_worker_tails_a_notified_root_without_probing(s3, monkeypatch, settings, celery_workers):
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket, queue = _notified_bucket(s3)
    root = f"s3://{bucket}"
    settings.AUDIT_ALLOWED_ROOTS = [root]
    uri = f"{root}/events"
    write_deltalake(uri, rows(), storage_options=s3.options)
    tailing.forget_all()
    table, _ = register_table(uri)
    assert tail_once(table.id).status == "ok"
    celery_workers.start(
        "w1",
        **s3.env,
        AUDIT_ALLOWED_ROOTS=root,
        AUDIT_NOTIFY_QUEUES=f"{root}={queue}",
        # No polling would find the commit within the test: only the notification can.
        AUDIT_FULL_CHECK_SECONDS="3600",
        AUDIT_IDLE_FULL_CHECK_SECONDS="3600",
        AUDIT_TABLE_FINDINGS_SECONDS="3600",
    )
    time.sleep(3)  # worker start-up; it drains the bucket's test event
    with s3.counting() as seen:
        write_deltalake(uri, rows(start=5), mode="append", storage_options=s3.options)
        landed = time.monotonic()
        wait_for(
            lambda: Commit.objects.filter(table=table, version=1).exists(),
            60,
            message=celery_workers.logs(),
        )
        took = time.monotonic() - landed
    assert took < 10, took
    probes = [r for r in seen if r[0] == "HEAD" and "/events/_delta_log/" in r[1]]
    assert probes == [], probes  # tailed on notice, not by probing the next commit file
