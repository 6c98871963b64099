"""moto's S3 server on a free loopback port, counting the requests it serves.

Requests are counted AT THE SERVER (a WSGI middleware in front of moto's app), so every
client is measured the same way: our obstore/pyarrow reads, deltalake's Rust client, boto3.
Used by the tests of the incremental tail and by bench/bench_objstore.py. The same server
answers SQS (moto dispatches on the request): `notify_queue` makes a bucket send its commit-file
events to a queue, and SQS requests are counted as the kind "SQS".
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

ACCESS_KEY = "lake2-test-key"
SECRET_KEY = "lake2-test-secret"
REGION = "us-east-1"


class CountingS3:
    def __init__(self, uncounted_key: str | None = None) -> None:
        """Requests signed with `uncounted_key` (an access key id: moto accepts any until auth is
        enforced) are served but not counted, so a bench's own writes stay out of its counts."""
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        app = DomainDispatcherApplication(create_backend_app)

        skip = f"Credential={uncounted_key}/" if uncounted_key else None

        def counting(environ: dict[str, Any], start_response: Any) -> Any:
            if skip is not None and skip in environ.get("HTTP_AUTHORIZATION", ""):
                return app(environ, start_response)
            # SQS (JSON protocol) names its action in a header; its path says nothing.
            sqs = environ.get("HTTP_X_AMZ_TARGET", "").startswith("AmazonSQS.")
            with self._lock:
                self.requests.append(
                    (
                        "SQS" if sqs else environ["REQUEST_METHOD"],
                        environ.get("PATH_INFO", ""),
                        environ.get("QUERY_STRING", ""),
                    )
                )
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, counting, threaded=True)
        self.port = self.server.server_port
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables every client here reads (obstore, pyarrow, deltalake)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    @property
    def options(self) -> dict[str, str]:
        """deltalake storage options for writing test tables."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION,
            "aws_allow_http": "true",
            "aws_s3_allow_unsafe_rename": "true",
        }

    def create_bucket(self, name: str) -> None:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )
        client.create_bucket(Bucket=name)

    def boto(self, service: str = "s3") -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def notify_queue(self, bucket: str) -> str:
        """A new SQS queue receiving the bucket's `s3:ObjectCreated:*` events for `.json` keys
        (what docs/tailing.md asks of a real bucket); its URL. moto queues a test event first."""
        sqs = self.boto("sqs")
        queue = sqs.create_queue(QueueName=bucket)["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
        self.boto().put_bucket_notification_configuration(
            Bucket=bucket,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {
                        "QueueArn": attributes["Attributes"]["QueueArn"],
                        "Events": ["s3:ObjectCreated:*"],
                        "Filter": {"Key": {"FilterRules": [{"Name": "suffix", "Value": ".json"}]}},
                    }
                ]
            },
        )
        return queue

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[tuple[str, str, str]]]:
        """Yields a list that holds, on exit, the requests served inside the block."""
        seen: list[tuple[str, str, str]] = []
        with self._lock:
            start = len(self.requests)
        yield seen
        with self._lock:
            seen.extend(self.requests[start:])

    def kinds(self, requests: list[tuple[str, str, str]]) -> Counter[str]:
        """HEAD / GET (object) / LIST / SQS counts."""
        out: Counter[str] = Counter()
        for method, _path, query in requests:
            out["LIST" if "list-type" in query else method] += 1
        return out

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
