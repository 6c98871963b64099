"""Incremental listing on S3: a tail tick costs O(1) object-store requests whatever the log's
length, measured at a real S3 protocol server (moto's, on loopback, counted at the server:
tests/e2e/s3count.py). The listing logic on local tables: tests/core/test_incremental.py."""

from __future__ import annotations

import uuid

import pytest
from deltalake import write_deltalake

from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail import kept_logs
from audit.tail.kept_logs import has_commit
from audit.tail.step import tail_once
from tests.support.tables import rows

# --------------------------------------------------------------------------- on S3


@pytest.fixture
def s3_table(s3, monkeypatch, settings):
    """An empty bucket under the allowed roots, the AWS variables set; returns its URI."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket = f"lake2-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(bucket)
    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket}"]
    kept_logs.forget_all()
    yield f"s3://{bucket}/events"
    kept_logs.forget_all()


def _write(s3, uri: str, n: int, start: int = 0) -> None:
    for i in range(n):
        write_deltalake(
            uri, rows(2, start=1000 + start + i), mode="append", storage_options=s3.options
        )


@pytest.mark.django_db
@pytest.mark.slow
def test_tail_ticks_on_s3_cost_one_request_idle_and_one_get_per_new_commit(s3, s3_table):
    _write(s3, s3_table, 30)
    table, _ = register_table(s3_table)
    assert tail_once(table.id).status == "ok"
    table.refresh_from_db()
    assert table.last_seen_version == 29

    with s3.counting() as idle:
        result = tail_once(table.id)
    assert result.status == "ok"
    assert s3.kinds(idle) == {"LIST": 1}, idle
    assert "start-after" in idle[0][2]

    with s3.counting() as probe:
        assert not has_commit(s3_table, 30)
    assert s3.kinds(probe) == {"HEAD": 1}

    _write(s3, s3_table, 5, start=30)
    with s3.counting() as probe:
        assert has_commit(s3_table, 30)
    assert s3.kinds(probe) == {"HEAD": 1}
    with s3.counting() as tick:
        result = tail_once(table.id)
    assert result.stored == 5, result.line()
    # One listing from the last version, then one GET per new commit: no HEAD before a GET,
    # no re-read of the window the new commits ran concurrently with.
    assert s3.kinds(tick) == {"LIST": 1, "GET": 5}, tick
    assert list(
        Commit.objects.filter(table=table).order_by("version").values_list("version", flat=True)
    ) == list(range(35))

    # The debounced whole-table findings refresh reads the history from the cache.
    Table.objects.filter(id=table.id).update(table_findings_dirty=True, table_findings_at=None)
    with s3.counting() as refresh:
        tail_once(table.id)
    assert s3.kinds(refresh) == {"LIST": 1}, refresh
    assert not Table.objects.get(id=table.id).table_findings_dirty


@pytest.mark.django_db
@pytest.mark.slow
def test_table_deleted_from_the_bucket_becomes_an_error_then_recovers(s3, s3_table):
    _write(s3, s3_table, 3)
    table, _ = register_table(s3_table)
    tail_once(table.id)
    client = s3.boto()
    bucket, key = s3_table[len("s3://") :].split("/", 1)
    for obj in client.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]:
        client.delete_object(Bucket=bucket, Key=obj["Key"])
    result = tail_once(table.id)
    assert result.status == "error"
    assert "does not exist" in result.message, result.message
    table.refresh_from_db()
    assert table.status == "error" and table.last_seen_version == 2
