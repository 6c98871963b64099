"""Fixtures of the end-to-end layer: worker processes and object-store protocol servers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

# Object-store protocol servers (moto S3, Azurite), session-scoped: see tests/e2e/objstore.py.
from tests.e2e.objstore import azurite_server, s3_server  # noqa: F401
from tests.e2e.s3count import CountingS3
from tests.support.django_state import forget_api_tokens_and_cached_pages  # noqa: F401 - autouse
from tests.support.workers import REDIS_URL, Workers, database_url, redis_reachable


@pytest.fixture
def celery_workers(transactional_db, tmp_path) -> Iterator[Workers]:
    broker = REDIS_URL if redis_reachable() else f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_DEFAULT_QUEUE": f"test-{uuid.uuid4().hex[:10]}",  # no leftovers from other runs
        "AUDIT_TAIL_INTERVAL_SECONDS": "0.5",
        "AUDIT_FULL_CHECK_SECONDS": "1",
        "AUDIT_LOCK_SECONDS": "3",
        # Tables copied from tests/data have old commits: no idle backoff unless a test asks.
        "AUDIT_IDLE_AFTER_SECONDS": "0",
        "PYTHONUNBUFFERED": "1",
    }
    workers = Workers(tmp_path, env)
    yield workers
    workers.stop_all()


@pytest.fixture(scope="module")
def s3() -> Iterator[CountingS3]:
    """moto's S3 (and SQS) server in this process, counting the requests it serves: one per
    test module, so a module's counts never include another's traffic."""
    server = CountingS3()
    yield server
    server.stop()
