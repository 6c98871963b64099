"""The table lease (audit/ingest/lease.py) on the real Table row: one holder at a time, taken
over once it expires, and a holder that lost it writes nothing. The kill drills
(tests/e2e/test_kill_drill.py, test_pool_kill_drill.py, test_workers.py) run it across
processes; these pin each operation."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from deltalake import write_deltalake
from django.utils import timezone

from audit.core.errors import DeltaAuditError
from audit.ingest.lease import LockLost, TableLease
from audit.ingest.tables import register_table
from audit.models import Commit, Table
from tests.support.tables import rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(tmp_path: Path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    write_deltalake(str(tmp_path / "t"), rows(3))
    write_deltalake(str(tmp_path / "t"), rows(3, start=3), mode="append")
    return register_table(str(tmp_path / "t"))[0]


def _holder(table: Table) -> str:
    return Table.objects.values_list("locked_by", flat=True).get(id=table.id)


def _expire(table: Table) -> None:
    Table.objects.filter(id=table.id).update(locked_until=timezone.now() - timedelta(seconds=1))


def test_it_lets_one_worker_hold_a_table_at_a_time(table):
    first = TableLease.acquire(table.id)
    assert first is not None and _holder(table) == first.token
    assert TableLease.acquire(table.id) is None  # held, not expired
    assert first.release() and _holder(table) == ""
    second = TableLease.acquire(table.id)
    assert second is not None and second.token != first.token
    assert not first.release()  # no longer ours: the successor keeps the table
    assert _holder(table) == second.token


def test_an_expired_lease_is_taken_over_and_its_holder_writes_nothing(table, settings):
    settings.AUDIT_LOCK_SECONDS = 300
    stale = TableLease.acquire(table.id)
    assert stale.extend() and stale.write(last_error="mine")
    _expire(table)  # the worker stalled past its lease
    successor = TableLease.acquire(table.id)
    assert successor is not None

    assert not stale.extend()
    with pytest.raises(LockLost, match=f"table {table.id}: lock lost while tailing"):
        stale.keep()
    with pytest.raises(LockLost, match=f"table {table.id}: lock lost before storing v1..v2"):
        stale.guard("storing v1..v2", last_error="stale")
    assert not stale.write(last_error="stale")
    table.refresh_from_db()
    assert (table.locked_by, table.last_error) == (successor.token, "mine")
    assert table.locked_until > timezone.now() + timedelta(seconds=200)

    successor.guard("storing v1..v2", last_error="")  # the holder's writes apply
    assert Table.objects.get(id=table.id).last_error == ""


def test_a_lease_without_a_claim_writes_alone(table):
    alone = TableLease(table.id)
    alone.guard("storing", last_error="x")
    alone.keep()
    assert alone.write(last_error="y") and not alone.release()
    assert Table.objects.get(id=table.id).last_error == "y"


def test_a_step_under_a_lost_lease_stores_nothing(table):
    from audit.tail.step import tail_once

    lease = TableLease.acquire(table.id)
    Table.objects.filter(id=table.id).update(locked_by="someone-else")
    with pytest.raises(LockLost):
        tail_once(table.id, lease=lease, chunk=1)
    assert not Commit.objects.filter(table=table).exists()
    assert Table.objects.get(id=table.id).last_seen_version is None


def test_the_tail_task_gives_its_lease_back_whatever_the_step_did(table, monkeypatch):
    from audit.tail import step
    from workers.tasks import tail_table

    assert tail_table(table.id).startswith(f"table {table.id}: ok")
    assert _holder(table) == ""

    def broken(*args, **kwargs):
        raise ValueError("a bug of ours")

    monkeypatch.setattr(step, "run_audit", broken)
    Table.objects.filter(id=table.id).update(table_findings_dirty=True, table_findings_at=None)
    assert "internal error" in tail_table(table.id)
    assert _holder(table) == ""

    held = TableLease.acquire(table.id)
    assert tail_table(table.id).endswith("busy (another worker holds its lock)")
    assert _holder(table) == held.token  # a busy table's holder keeps it


def test_a_backfill_handed_to_spark_hands_its_lease_over(table, settings, monkeypatch):
    from workers.spark import tasks as spark_tasks
    from workers.tasks import tail_table

    settings.AUDIT_SPARK_BACKFILL_THRESHOLD = 1
    settings.AUDIT_SPARK_LOCK_SECONDS = 3600
    handed: list[dict] = []
    monkeypatch.setattr(
        spark_tasks.spark_audit_tables, "delay", lambda ids, tokens: handed.append(tokens)
    )
    assert "handed to Spark" in tail_table(table.id)
    table.refresh_from_db()
    assert handed == [{str(table.id): table.locked_by}] and table.locked_by
    assert table.locked_until > timezone.now() + timedelta(seconds=3000)  # Spark's lease

    def no_java(*args, **kwargs):
        raise DeltaAuditError("Java is not installed")

    monkeypatch.setattr(spark_tasks, "session", no_java)
    line = spark_tasks.spark_audit_tables([table.id], tokens=handed[0])
    assert line == "spark audit failed: Java is not installed"
    assert _holder(table) == ""  # given back: the next tail pass can take the table
