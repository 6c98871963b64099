"""Replayed states kept between tail steps (audit.core.history.state_cache): every snapshot a
TailedLog answers from a kept state equals a fresh replay of the log, across new commits,
checkpoints, overwrites, deletes and a schema change, and the checkpoint is read once, not on
every step (real deltalake tables)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.history.incremental import TailedLog
from audit.core.history.state_cache import StateCache
from audit.core.log import replay
from audit.core.log.replay import replay_log
from audit.core.storage.stores import open_store
from tests.support.tables import rows


@pytest.fixture
def checkpoint_reads(monkeypatch) -> list[int]:
    reads: list[int] = []
    real = replay.read_checkpoint

    def counted(store, version, files):
        reads.append(version)
        return real(store, version, files)

    monkeypatch.setattr(replay, "read_checkpoint", counted)
    return reads


def _grow(path, i: int) -> None:
    """Commit i of a varied history: appends to two partitions, overwrites, deletes, a new
    column, and a checkpoint every 7 commits."""
    if i % 11 == 5:
        write_deltalake(
            str(path), rows(2, start=1000 + i), mode="overwrite", schema_mode="overwrite"
        )
    elif i % 13 == 6:
        DeltaTable(str(path)).delete(f"id < {i}")
    elif i == 17:
        batch = rows(1, start=500).append_column("note", [["new column"]])
        write_deltalake(str(path), batch, mode="append", schema_mode="merge")
    else:
        day = "2024-01-02" if i % 2 else "2024-01-01"
        write_deltalake(
            str(path), rows(2, start=10 * i, day=day), mode="append", schema_mode="merge"
        )
    if i % 7 == 6:
        DeltaTable(str(path)).create_checkpoint()


def test_every_kept_answer_equals_a_fresh_replay(tmp_path, checkpoint_reads):
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["day"])
    states = StateCache(max_files=10_000)
    log = TailedLog(open_store(str(path)), None, states)
    for i in range(30):
        _grow(path, i)
        log.refresh()
        latest = log.listing.latest_version
        for version in (latest - 1, latest, latest - 3, latest):  # a step's window, then back
            if version < 0:
                continue
            got = log.snapshot(version)
            assert got == replay_log(str(path), version), version
            got.files.clear()  # what a caller does with its state does not reach the kept one
            got.txns["x"] = None  # type: ignore[assignment]
    assert states.hits >= 60  # most answers came from a kept state


def test_the_checkpoint_is_read_once_not_on_every_step(tmp_path, checkpoint_reads):
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["day"])
    for i in range(5):
        write_deltalake(str(path), rows(start=10 * i), mode="append")
    DeltaTable(str(path)).create_checkpoint()  # version 5
    log = TailedLog(open_store(str(path)), None, StateCache(max_files=10_000))
    log.snapshot(5)
    assert checkpoint_reads == [5]
    for i in range(6):  # six tail steps, each a commit
        write_deltalake(str(path), rows(start=100 + i), mode="append")
        log.refresh()
        log.snapshot(log.listing.latest_version - 1)  # the state before the step's window
    assert checkpoint_reads == [5]
    DeltaTable(str(path)).create_checkpoint()  # version 11: read once, then kept in turn
    write_deltalake(str(path), rows(start=200), mode="append")
    log.refresh()
    got = [log.snapshot(version) for version in (11, 12, 12)]
    assert checkpoint_reads == [5, 11]
    assert got == [replay_log(str(path), v) for v in (11, 12, 12)]
    # A full listing (the log may be a new one) drops what was kept.
    checkpoint_reads.clear()
    log.relist()
    log.snapshot(12)
    assert checkpoint_reads == [11]


def test_it_is_bounded_by_the_files_it_holds(tmp_path):
    tables = []
    for name in "abcde":
        path = tmp_path / name
        write_deltalake(str(path), rows(), partition_by=["day"])
        for i in range(3):
            write_deltalake(str(path), rows(start=10 * i), mode="append")
        tables.append(TailedLog(open_store(str(path)), None, None))
    states = StateCache(max_files=16)  # 4 live files a table: four tables fit
    for log in tables:
        states.put_state(log.uri, -1, log.snapshot())
    assert states.files == 16 and list(states._items) == [log.uri for log in tables[1:]]
    small = StateCache(max_files=12)  # a table over a quarter of the bound is not kept
    small.put_state(tables[0].uri, -1, tables[0].snapshot())
    assert small.files == 0 and not small._items


def test_kept_tombstones_equal_a_fresh_replay_at_every_version(tmp_path):
    """The health's tombstones, carried from step to step (audit.ingest.health_store keeps
    them per table), are a fresh replay's at every version: appends, deletes, an OPTIMIZE
    (many removes), a checkpoint (the next call starts afresh from it), deletes after it, a
    step back and a jump."""
    from audit.core.health.tombstones import snapshot_from_history
    from audit.core.history.state_cache import KeptFiles
    from audit.core.history.summary import load_history
    from tests.support.health_tables import build_evolving_table

    uri = str(build_evolving_table(tmp_path / "t"))
    DeltaTable(uri).create_checkpoint()
    DeltaTable(uri).delete("id < 3")
    DeltaTable(uri).delete("id = 1000")
    DeltaTable(uri).optimize.compact()
    latest = DeltaTable(uri).version()
    kept = KeptFiles(10_000)
    reads: list[int] = []
    versions = [*range(latest + 1), 5, 6, latest - 4, latest]  # forward, a step back, a jump
    for version in versions:
        history = load_history(uri, end=version)
        store = history.get_log().store
        read = store.read_bytes
        store.read_bytes = lambda path, _read=read: reads.append(1) or _read(path)
        ours = snapshot_from_history(history, kept, "t")
        store.read_bytes = read
        fresh = snapshot_from_history(load_history(uri, end=version))
        assert ours.tombstones == fresh.tombstones, version
        assert ours.timestamp == fresh.timestamp
    assert "t" in kept and fresh.tombstones
    # Walking forward, each call read its one new commit, not every commit since the origin.
    assert len(reads) < 3 * len(versions)
