"""Incremental listing: extending a listing of a growing log, relisting only when needed, the
bounded byte cache, on local deltalake tables (request counts on S3:
tests/e2e/test_incremental_s3.py)."""

from __future__ import annotations

import shutil

from deltalake import DeltaTable, write_deltalake

from audit.core.history.incremental import ByteCache, TailedLog, extend_listing
from audit.core.log import list_log
from audit.core.storage.stores import open_store
from tests.support.tables import rows


def _same(a, b) -> None:
    assert a.commit_versions == b.commit_versions
    assert a.latest_version == b.latest_version
    assert a.first_available_version == b.first_available_version
    assert a.checkpoints == b.checkpoints
    assert a.last_checkpoint == b.last_checkpoint


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


def _two_commits(tmp_path):
    """A table of two commits, its store and its listing."""
    path = tmp_path / "t"
    write_deltalake(str(path), rows())
    write_deltalake(str(path), rows(start=5), mode="append")
    store = open_store(str(path))
    return path, store, list_log(store)


def test_extend_listing_reads_the_pointer_of_a_checkpoint_without_a_commit(tmp_path):
    path, store, known = _two_commits(tmp_path)
    DeltaTable(str(path)).create_checkpoint()
    grown = extend_listing(store, known)
    _same(grown, list_log(store))
    assert grown.last_checkpoint["version"] == 1 and 1 in grown.checkpoints

    # The checkpoint listed before its pointer was written (a writer puts `_last_checkpoint`
    # last): the pointer is read again on the next step, not left behind for good.
    pointer = path / "_delta_log" / "_last_checkpoint"
    written = pointer.read_bytes()
    pointer.unlink()
    early = extend_listing(store, known)
    assert early.last_checkpoint is None and 1 in early.checkpoints
    pointer.write_bytes(written)
    later = extend_listing(store, early)
    _same(later, list_log(store))
    assert extend_listing(store, later) is later  # idle again: nothing re-read, nothing rebuilt


def test_extend_listing_gives_up_when_the_log_did_not_simply_grow(tmp_path):
    path, store, known = _two_commits(tmp_path)

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
