"""Incremental listing: a tail tick costs O(1) object-store requests whatever the log's length.

Core tests run on local deltalake tables; the request counts are measured at a real S3
protocol server (moto's, on loopback, counted at the server: tests/s3count.py).
"""

from __future__ import annotations

import shutil
import uuid

import pytest
from deltalake import DeltaTable, write_deltalake

from audit import ingest, tailing
from audit.core.incremental import ByteCache, TailedLog, extend_listing
from audit.core.log import list_log
from audit.core.storage import open_store
from audit.models import Commit, Table
from tests.conftest import rows
from tests.s3count import CountingS3


def _same(a, b) -> None:
    assert a.commit_versions == b.commit_versions
    assert a.latest_version == b.latest_version
    assert a.first_available_version == b.first_available_version
    assert a.checkpoints == b.checkpoints


def test_extend_listing_follows_a_growing_log(tmp_path):
    path = tmp_path / "t"
    write_deltalake(str(path), rows())
    for i in range(4):
        write_deltalake(str(path), rows(start=10 * (i + 1)), mode="append")
    store = open_store(str(path))
    known = list_log(store)
    assert extend_listing(store, known) is known  # idle: nothing new, nothing rebuilt

    for i in range(3):
        write_deltalake(str(path), rows(start=100 + i), mode="append")
    DeltaTable(str(path)).create_checkpoint()
    grown = extend_listing(store, known)
    _same(grown, list_log(store))
    assert grown.latest_version == 7 and 7 in grown.checkpoints


def test_extend_listing_gives_up_when_the_log_did_not_simply_grow(tmp_path):
    path = tmp_path / "t"
    write_deltalake(str(path), rows())
    write_deltalake(str(path), rows(start=5), mode="append")
    store = open_store(str(path))
    known = list_log(store)

    # A hole after what we know (versions cleaned up before we read them): only a full
    # listing can say what is left.
    for i in range(3):
        write_deltalake(str(path), rows(start=10 + i), mode="append")
    (path / "_delta_log" / "00000000000000000002.json").unlink()
    assert extend_listing(store, known) is None

    # The table was deleted and re-created shorter: the last known version vanished.
    shutil.rmtree(path)
    write_deltalake(str(path), rows())
    assert extend_listing(store, known) is None


def test_tailed_log_relists_only_when_needed(tmp_path):
    path = tmp_path / "t"
    write_deltalake(str(path), rows())
    log_ = TailedLog(open_store(str(path)), ByteCache(1 << 20))
    write_deltalake(str(path), rows(start=5), mode="append")
    assert log_.refresh().latest_version == 1
    assert log_.full_listings == 1
    assert log_.has_commit(1) and not log_.has_commit(2)
    shutil.rmtree(path)
    write_deltalake(str(path), rows())
    assert log_.refresh().latest_version == 0  # replaced: a full listing found the new log
    assert log_.full_listings == 2


def test_byte_cache_is_bounded():
    cache = ByteCache(100)
    for i in range(10):
        cache.put(("t", f"_delta_log/{i}"), b"x" * 20)
    assert cache.size <= 100
    assert cache.get(("t", "_delta_log/9")) == b"x" * 20
    assert cache.get(("t", "_delta_log/0")) is None
    cache.put(("t", "big"), b"x" * 60)  # over a quarter of the budget: never cached
    assert cache.get(("t", "big")) is None
    cache.drop_table("t")
    assert cache.size == 0


# --------------------------------------------------------------------------- on S3


@pytest.fixture(scope="module")
def s3():
    server = CountingS3()
    yield server
    server.stop()


@pytest.fixture
def s3_table(s3, monkeypatch, settings):
    """An empty bucket under the allowed roots, the AWS variables set; returns its URI."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket = f"lake2-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(bucket)
    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket}"]
    tailing.forget_all()
    yield f"s3://{bucket}/events"
    tailing.forget_all()


def _write(s3, uri: str, n: int, start: int = 0) -> None:
    for i in range(n):
        write_deltalake(
            uri, rows(2, start=1000 + start + i), mode="append", storage_options=s3.options
        )


@pytest.mark.django_db
@pytest.mark.slow
def test_tail_ticks_on_s3_cost_one_request_idle_and_one_get_per_new_commit(s3, s3_table):
    _write(s3, s3_table, 30)
    table, _ = ingest.register_table(s3_table)
    assert ingest.tail_once(table.id).status == "ok"
    table.refresh_from_db()
    assert table.last_seen_version == 29

    with s3.counting() as idle:
        result = ingest.tail_once(table.id)
    assert result.status == "ok"
    assert s3.kinds(idle) == {"LIST": 1}, idle
    assert "start-after" in idle[0][2]

    with s3.counting() as probe:
        assert not ingest._has_commit(s3_table, 30)
    assert s3.kinds(probe) == {"HEAD": 1}

    _write(s3, s3_table, 5, start=30)
    with s3.counting() as probe:
        assert ingest._has_commit(s3_table, 30)
    assert s3.kinds(probe) == {"HEAD": 1}
    with s3.counting() as tick:
        result = ingest.tail_once(table.id)
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
        ingest.tail_once(table.id)
    assert s3.kinds(refresh) == {"LIST": 1}, refresh
    assert not Table.objects.get(id=table.id).table_findings_dirty


@pytest.mark.django_db
@pytest.mark.slow
def test_table_deleted_from_the_bucket_becomes_an_error_then_recovers(s3, s3_table):
    _write(s3, s3_table, 3)
    table, _ = ingest.register_table(s3_table)
    ingest.tail_once(table.id)
    client = s3.boto()
    bucket, key = s3_table[len("s3://") :].split("/", 1)
    for obj in client.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]:
        client.delete_object(Bucket=bucket, Key=obj["Key"])
    result = ingest.tail_once(table.id)
    assert result.status == "error"
    assert "does not exist" in result.message, result.message
    table.refresh_from_db()
    assert table.status == "error" and table.last_seen_version == 2
