"""Tail on change notifications instead of polling: S3 event notifications delivered to SQS.

Configure `AUDIT_NOTIFY_QUEUES` as `<root-uri>=<sqs-queue-url>` pairs (comma-separated), with
the bucket's event notifications sending `s3:ObjectCreated:*` (suffix `.json`) for that root to
the queue. Beat then runs `workers.tasks.drain_notifications` every tail interval: it receives
the queue's messages, keeps commit files (`.../_delta_log/<20 digits>.json`), dispatches a tail
step for each registered table they belong to, and deletes the messages. Tables under a
notified root are not probed between notifications; they still get a full check every
AUDIT_IDLE_FULL_CHECK_SECONDS, the safety net for a lost notification.

The queue is read with boto3 and the standard AWS variables (AWS_ENDPOINT_URL, credentials,
region). Message bodies are untrusted: anything that is not an S3 event is dropped.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote_plus

import orjson
from django.conf import settings

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


def drain(queue_url: str, *, client: Any = None, max_batches: int = 10) -> set[str]:
    """Receive and delete up to `max_batches` x 10 messages; the table URIs they name."""
    client = client or _client()
    uris: set[str] = set()
    for _ in range(max_batches):
        reply = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        messages = reply.get("Messages") or []
        if not messages:
            break
        for message in messages:
            uris |= tables_in_event(message.get("Body") or "")
        client.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
    return uris
