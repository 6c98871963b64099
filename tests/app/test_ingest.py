"""audit.ingest on real deltalake tables, in-process (the worker tests run the same code in Celery)."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from deltalake import DeltaTable, write_deltalake

from audit import demo
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.vocab import TABLE_LEVEL_KINDS
from audit.ingest.chunk import store_history_chunk
from audit.ingest.findings import finding_key
from audit.ingest.lease import LockLost, TableLease
from audit.ingest.plan import TailResult
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, FindingFlip, Table
from audit.tail.polling import tables_due
from audit.tail.step import reaudit, tail_once
from tests.support.revealing_tables import build_metadata_change_in_flight_twice
from tests.support.tables import rows

pytestmark = pytest.mark.django_db


def ingest_all(table: Table, chunk: int = 1000) -> list[TailResult]:
    results = []
    while True:
        result = tail_once(table.id, chunk=chunk)
        results.append(result)
        if not result.more:
            return results


def one_shot_keys(path) -> set[str]:
    result = audit_history(load_history(str(path)))
    return {finding_key(f.kind, f.version, f.related_versions) for f in result.findings}


def open_keys(table: Table) -> set[str]:
    return set(Finding.objects.filter(table=table, status="open").values_list("key", flat=True))


def stored_versions(table: Table) -> list[int]:
    return list(
        Commit.objects.filter(table=table).order_by("version").values_list("version", flat=True)
    )


@pytest.fixture
def racy_table(delta_table_factory, settings):
    """A partitioned writeSerializable table written by racing appenders, deletes and overwrites."""
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = delta_table_factory(
        "racy", partition_by=["day"], configuration={"delta.isolationLevel": "writeSerializable"}
    )
    errors: Counter[str] = Counter()
    for _ in range(12):
        demo.round_partitioned(path, errors)
    # Races are races: keep racing until a commit-level finding exists (nearly always at once).
    for _ in range(20):
        kinds = {f.kind for f in audit_history(load_history(str(path))).findings}
        if kinds - TABLE_LEVEL_KINDS:
            break
        demo.round_partitioned(path, errors)
    return path


def test_it_ingests_a_racy_table_in_chunks_equal_to_a_one_shot_audit(racy_table):
    table, created = register_table(str(racy_table))
    assert created and table.status == "ingesting"

    results = ingest_all(table, chunk=4)

    latest = DeltaTable(str(racy_table)).version()
    assert [r.status for r in results[:-1]] == ["backfilling"] * (len(results) - 1)
    assert results[-1].status == "ok"
    assert stored_versions(table) == list(range(0, latest + 1))
    table.refresh_from_db()
    assert (table.status, table.last_seen_version, table.latest_version_in_log) == (
        "ok",
        latest,
        latest,
    )
    assert table.settings_snapshot["partition_columns"] == ["day"]
    assert table.settings_snapshot["properties"]["delta.isolationLevel"] == "writeSerializable"
    want = one_shot_keys(racy_table)
    assert want, "the racing writers should have produced findings"
    assert open_keys(table) == want


def test_it_stores_commit_facts_and_concurrency_like_the_audit(racy_table):
    table, _ = register_table(str(racy_table))
    ingest_all(table, chunk=5)
    one_shot = audit_history(load_history(str(racy_table)))
    for commit in Commit.objects.filter(table=table):
        audited = one_shot.commits[commit.version]
        assert commit.concurrent_versions == list(audited.concurrent_versions)
        assert commit.concurrent_count == len(audited.concurrent_versions)
        assert commit.read_version == audited.read_version
        assert set(commit.recheck) == {str(v) for v in audited.concurrent_versions}
        assert commit.committed_at is not None and commit.timestamp > 1_600_000_000_000


def test_it_tails_only_new_versions_and_replays_idempotently(delta_table_factory):
    path = delta_table_factory("t", commits=3)
    table, _ = register_table(str(path))
    assert tail_once(table.id).stored == 3
    assert tail_once(table.id).stored == 0
    write_deltalake(str(path), rows(start=100), mode="append")
    assert tail_once(table.id).stored == 1

    # Replaying an already stored chunk (as after a crash between two steps) changes nothing.
    table.refresh_from_db()
    history = load_history(str(path))
    store_history_chunk(table, history, audit_history(history), versions=(0, 3))
    assert stored_versions(table) == [0, 1, 2, 3]
    table.refresh_from_db()
    assert table.last_seen_version == 3


def test_it_writes_nothing_when_the_lock_was_lost(delta_table_factory):
    path = delta_table_factory("t", commits=2)
    table, _ = register_table(str(path))
    Table.objects.filter(id=table.id).update(locked_by="someone-else")
    history = load_history(str(path))
    with pytest.raises(LockLost):
        store_history_chunk(
            table,
            history,
            audit_history(history),
            versions=(0, 1),
            lease=TableLease(table.id, "me"),
        )
    assert stored_versions(table) == []
    table.refresh_from_db()
    assert table.last_seen_version is None


def test_a_log_that_shrinks_puts_the_table_in_error(delta_table_factory):
    path = delta_table_factory("t", commits=4)
    table, _ = register_table(str(path))
    tail_once(table.id)
    for v in (2, 3):
        os.remove(path / "_delta_log" / f"{v:020d}.json")

    result = tail_once(table.id)

    table.refresh_from_db()
    assert table.status == "error" and result.status == "error"
    assert "shrank" in table.last_error and "version 3 was already ingested" in table.last_error
    assert "\n" not in table.last_error


def test_versions_removed_before_ingestion_are_a_history_gap(delta_table_factory):
    path = delta_table_factory("t", commits=2)
    table, _ = register_table(str(path))
    tail_once(table.id)
    for i in range(3):
        write_deltalake(str(path), rows(start=50 + i), mode="append")  # v2..v4
    DeltaTable(str(path)).create_checkpoint()  # checkpoint at v4
    for v in (2, 3):  # log cleanup removes commits we never stored
        os.remove(path / "_delta_log" / f"{v:020d}.json")

    tail_once(table.id)

    # Not an error until re-registered; the loss is recorded and the tail resumes.
    table.refresh_from_db()
    assert table.status == "ok", table.last_error
    assert stored_versions(table) == [0, 1, 4]
    gap = Finding.objects.get(table=table, kind="history_gap")
    assert (gap.version, gap.related_versions) == (2, [3])
    assert "versions 2..3 were removed by log cleanup" in gap.summary


def test_a_corrupt_commit_errors_and_the_table_recovers_when_it_is_fixed(delta_table_factory):
    path = delta_table_factory("t", commits=2)
    table, _ = register_table(str(path))
    tail_once(table.id)
    bad = path / "_delta_log" / f"{2:020d}.json"
    bad.write_bytes(b'{"commitInfo": {"operation": "WRITE"}}\n{not json at all\x00\n')

    tail_once(table.id)
    table.refresh_from_db()
    assert table.status == "error" and table.last_error and "\n" not in table.last_error
    assert stored_versions(table) == [0, 1]

    bad.unlink()
    tail_once(table.id)
    table.refresh_from_db()
    assert (table.status, table.last_error) == ("ok", "")


def test_a_vanished_table_goes_to_error_with_a_clear_message(delta_table_factory):
    path = delta_table_factory("t")
    table, _ = register_table(str(path))
    tail_once(table.id)
    for child in sorted(path.rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    path.rmdir()

    tail_once(table.id)
    table.refresh_from_db()
    assert table.status == "error"
    assert "does not exist" in table.last_error and str(path) in table.last_error


def test_a_finding_that_disappears_on_reanalysis_is_resolved_then_reopened(racy_table):
    table, _ = register_table(str(racy_table))
    ingest_all(table)
    real = set(open_keys(table))
    # A finding an earlier analysis produced for a version in the window that is no longer found
    # (a racy history may hold a real reorder at any version: take one whose key is free).
    taken = set(Finding.objects.filter(table=table).values_list("key", flat=True))
    version = next(
        v
        for v in table.commits.order_by("-version").values_list("version", flat=True)[3:]
        if finding_key("write_serializable_reorder", v, [v - 1]) not in taken
    )
    ghost = Finding.objects.create(
        table=table,
        kind="write_serializable_reorder",
        severity="warning",
        version=version,
        related_versions=[version - 1],
        summary="ghost",
        key=finding_key("write_serializable_reorder", version, [version - 1]),
        last_seen=table.created_at,
    )
    some_real = Finding.objects.filter(table=table, key__in=real).exclude(id=ghost.id).first()
    Finding.objects.filter(id=some_real.id).update(status="resolved")

    result = reaudit(table.id)

    ghost.refresh_from_db()
    some_real.refresh_from_db()
    assert ghost.status == "resolved" and ghost.resolved_at is not None
    assert some_real.status == "open" and some_real.resolved_at is None
    assert open_keys(table) == real
    assert result.resolved == 1
    assert Finding.objects.filter(table=table).count() == len(real) + 1  # resolved, not deleted
    assert list(ghost.flips.values_list("new_status", flat=True)) == ["resolved"]
    # Running it again changes nothing and duplicates nothing.
    reaudit(table.id)
    assert Finding.objects.filter(table=table).count() == len(real) + 1
    assert FindingFlip.objects.filter(finding=ghost).count() == 1


def test_it_reaudits_the_earlier_finding_a_commit_of_the_range_reveals(tmp_path, settings):
    # v1 changes the schema; v2 and v4 ran across it: one finding at v1, outside [4, 4].
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "revealed"
    build_metadata_change_in_flight_twice(str(path))
    table, _ = register_table(str(path))
    ingest_all(table, chunk=1)
    key = finding_key("concurrent_metadata_change", 1, [2, 4])
    assert key in open_keys(table) and key in one_shot_keys(path)
    Finding.objects.filter(table=table, key=key).update(status="resolved")

    reaudit(table.id, start=4, end=4)

    assert Finding.objects.get(table=table, key=key).status == "open"


def test_hostile_strings_are_stored_safely(delta_table_factory):
    path = delta_table_factory("t")
    commit = (
        b'{"commitInfo": {"timestamp": 9000000000000000000, "operation": "WR\\u0000ITE<script>",'
        b' "operationParameters": {"mode": "Append", "weird\\u0000key": "\\u0000"}, "readVersion": 0,'
        b' "userName": "' + b"x" * 5000 + b'"}}\n'
        b'{"add": {"path": "p%00.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0,'
        b' "dataChange": true}}\n'
    )
    (path / "_delta_log" / f"{1:020d}.json").write_bytes(commit)
    table, _ = register_table(str(path))

    result = tail_once(table.id)

    assert result.status == "ok", result.line()
    row = Commit.objects.get(table=table, version=1)
    assert "\x00" not in row.operation and row.operation.startswith("WR")
    # Year ~285 million: kept as milliseconds, no datetime (out of range), no crash.
    assert row.timestamp == 9_000_000_000_000_000_000 and row.committed_at is None
    assert len(row.user_name) == 200


def test_tables_due_probes_for_the_next_commit_file(delta_table_factory, settings):
    settings.AUDIT_FULL_CHECK_SECONDS = 3600
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    idle = delta_table_factory("idle")
    busy = delta_table_factory("busy")
    idle_t, _ = register_table(str(idle))
    busy_t, _ = register_table(str(busy))
    paused, _ = register_table(str(delta_table_factory("paused")))
    Table.objects.filter(id=paused.id).update(status="paused")
    assert set(tables_due()) == {idle_t.id, busy_t.id}  # never tailed yet
    tail_once(idle_t.id)
    tail_once(busy_t.id)
    assert tables_due() == []

    write_deltalake(str(busy), rows(start=9), mode="append")
    assert tables_due() == [busy_t.id]


def test_a_tail_step_extends_its_lock_and_stops_when_it_was_taken(delta_table_factory, settings):
    from datetime import timedelta

    from django.utils import timezone

    path = delta_table_factory("locked", commits=3)
    table, _ = register_table(str(path))
    settings.AUDIT_LOCK_SECONDS = 300
    lease = TableLease.acquire(table.id, ttl=1)
    lease.keep()
    table.refresh_from_db()
    assert table.locked_until > timezone.now() + timedelta(seconds=200)

    Table.objects.filter(id=table.id).update(locked_by="someone-else")
    with pytest.raises(LockLost):
        lease.keep()
    with pytest.raises(LockLost):
        tail_once(table.id, lease=lease)
    assert not Commit.objects.filter(table=table).exists()


def test_it_records_a_broken_log_as_one_line(delta_table_factory):
    path = delta_table_factory("t", commits=2)
    table, _ = register_table(str(path))
    (path / "_delta_log" / "00000000000000000001.json").write_text("{not json\n\n")
    result = tail_once(table.id)
    table.refresh_from_db()
    assert result.status == "error" and "\n" not in result.message
    assert table.status == Table.Status.ERROR and table.last_error == result.message
