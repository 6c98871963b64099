"""Tail on change notifications instead of polling: S3 event notifications delivered to SQS.

Configure `AUDIT_NOTIFY_QUEUES` as `<root-uri>=<sqs-queue-url>` pairs (comma-separated), with
the bucket's event notifications sending `s3:ObjectCreated:*` (suffix `.json`) for that root to
the queue. Beat then runs `workers.tasks.drain_notifications` every tail interval: it receives
the queue's messages, keeps commit files (`.../_delta_log/<20 digits>.json`), records the notice
on each registered table they belong to (`Table.notified_at`), dispatches a tail step for it,
and only then deletes the messages (a drain killed before that leaves them to be received
again). The notice stays on the row until a tail step that listed the log after it succeeds,
so a step that found the table busy (its holder may have listed before the commit), expired in
a backed-up queue or died with its worker is dispatched again by the next tail pass
(polling.tables_due). Tables under a notified root are not probed between notifications; they
still get a full check every AUDIT_IDLE_FULL_CHECK_SECONDS, the safety net for a lost message.

The queue is read with boto3 and the standard AWS variables (AWS_ENDPOINT_URL, credentials,
region). Message bodies are untrusted: anything that is not an S3 event is dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import unquote_plus

import orjson
from django.conf import settings
from django.utils import timezone

from audit.models import Table

log = logging.getLogger(__name__)

_COMMIT_KEY = re.compile(r"^(?:(.*)/)?_delta_log/\d{20}\.json$")


def notify_queues() -> list[tuple[str, str]]:
    """(root uri, queue url) pairs from AUDIT_NOTIFY_QUEUES."""
    pairs = []
    for item in settings.AUDIT_NOTIFY_QUEUES:
        root, sep, queue = item.partition("=")
        if sep and root.strip() and queue.strip():
            pairs.append((root.strip().rstrip("/"), queue.strip()))
    return pairs


def under_notified_root(uri: str, roots: list[str]) -> bool:
    return any(uri == root or uri.startswith(root + "/") for root in roots)


def tables_in_event(body: str) -> set[str]:
    """Table URIs (s3://bucket/prefix) with a new commit file, from one SQS message body."""
    try:
        event = orjson.loads(body)
    except orjson.JSONDecodeError:
        return set()
    if isinstance(event, dict) and isinstance(event.get("Message"), str):
        return tables_in_event(event["Message"])  # delivered through SNS
    records = event.get("Records") if isinstance(event, dict) else None
    out: set[str] = set()
    for record in records if isinstance(records, list) else []:
        uri = _table_of(record)
        if uri is not None:
            out.add(uri)
    return out


def _table_of(record: Any) -> str | None:
    if not isinstance(record, dict) or not str(record.get("eventName", "")).startswith(
        "ObjectCreated"
    ):
        return None
    s3 = record.get("s3")
    bucket = s3.get("bucket", {}).get("name") if isinstance(s3, dict) else None
    key = s3.get("object", {}).get("key") if isinstance(s3, dict) else None
    if not isinstance(bucket, str) or not isinstance(key, str):
        return None
    match = _COMMIT_KEY.match(unquote_plus(key))  # event keys are URL-encoded
    if match is None:
        return None
    prefix = match.group(1)
    return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


def _client() -> Any:
    import boto3  # noqa: PLC0415

    return boto3.client("sqs")


def drain(
    queue_url: str,
    *,
    client: Any = None,
    max_batches: int = 10,
    on_tables: Callable[[set[str]], None] | None = None,
) -> set[str]:
    """Receive and delete up to `max_batches` x 10 messages; the table URIs they name.

    `on_tables` gets each batch's URIs before the batch is deleted: if it raises, the messages
    come back after the queue's visibility timeout instead of being lost."""
    client = client or _client()
    uris: set[str] = set()
    for _ in range(max_batches):
        reply = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        messages = reply.get("Messages") or []
        if not messages:
            break
        batch: set[str] = set()
        for message in messages:
            batch |= tables_in_event(message.get("Body") or "")
        if on_tables is not None and batch:
            on_tables(batch)
        uris |= batch
        client.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
    return uris


def note_commits(uris: set[str]) -> list[int]:
    """Record a notice on the registered, tailed tables at these URIs; their ids."""
    tables = Table.objects.filter(uri__in=uris).exclude(
        status__in=(Table.Status.PAUSED, Table.Status.GONE)
    )
    ids = list(tables.values_list("id", flat=True))
    if ids:
        Table.objects.filter(id__in=ids).update(notified_at=timezone.now())
    return ids


def clear_notice(table_id: int, listed_after: datetime) -> None:
    """A step that listed the log after `listed_after` has seen every commit noticed before it;
    a notice that came later stays (the commit may have landed after the listing)."""
    Table.objects.filter(id=table_id, notified_at__lte=listed_after).update(notified_at=None)
