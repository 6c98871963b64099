"""Idle backoff: idle tables are looked at every AUDIT_IDLE_INTERVAL_SECONDS, active ones at
the base interval, and the first new commit brings an idle table back (real worker + beat)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from deltalake import write_deltalake
from django.utils import timezone

from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail.polling import tables_due
from audit.tail.step import tail_once
from tests.support.tables import rows
from tests.support.waiting import wait_for


@pytest.mark.django_db
def test_idle_tables_are_visited_less_often(delta_table_factory, settings):
    settings.AUDIT_IDLE_AFTER_SECONDS = 3600
    settings.AUDIT_IDLE_INTERVAL_SECONDS = 60
    settings.AUDIT_IDLE_FULL_CHECK_SECONDS = 600
    settings.AUDIT_FULL_CHECK_SECONDS = 30
    path = delta_table_factory("t")
    table, _ = register_table(str(path))
    tail_once(table.id)
    now = timezone.now()
    # The last commit is two hours old: the table is idle.
    Table.objects.filter(id=table.id).update(last_commit_at=now - timedelta(hours=2))
    write_deltalake(str(path), rows(start=5), mode="append")

    assert tables_due(now) == [table.id]  # first look: the probe finds v1
    assert tables_due(now + timedelta(seconds=5)) == []  # backed off
    assert tables_due(now + timedelta(seconds=59)) == []
    assert tables_due(now + timedelta(seconds=61)) == [table.id]

    # Storing the new commit (fresh timestamp) makes the table active again: every pass.
    tail_once(table.id)
    later = timezone.now()
    write_deltalake(str(path), rows(start=7), mode="append")
    assert tables_due(later) == [table.id]
    assert tables_due(later + timedelta(seconds=1)) == [table.id]


@pytest.mark.django_db
def test_backoff_can_be_switched_off(delta_table_factory, settings):
    settings.AUDIT_IDLE_AFTER_SECONDS = 0
    path = delta_table_factory("t")
    table, _ = register_table(str(path))
    tail_once(table.id)
    now = timezone.now()
    Table.objects.filter(id=table.id).update(last_commit_at=now - timedelta(days=30))
    write_deltalake(str(path), rows(start=5), mode="append")
    assert tables_due(now) == [table.id]
    assert tables_due(now + timedelta(seconds=1)) == [table.id]


def _visits(table_id: int, seconds: float) -> int:
    """Distinct `probed_at` values seen while polling for `seconds` (each is one visit)."""
    seen = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.add(Table.objects.values_list("probed_at", flat=True).get(id=table_id))
        time.sleep(0.1)
    return len(seen - {None})


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_worker_backs_off_idle_tables_and_returns_on_a_new_commit(
    delta_table_factory, celery_workers
):
    path = delta_table_factory("t")
    table, _ = register_table(str(path))
    celery_workers.start(
        "w1",
        AUDIT_IDLE_AFTER_SECONDS="14",
        AUDIT_IDLE_INTERVAL_SECONDS="4",
        AUDIT_IDLE_FULL_CHECK_SECONDS="4",
    )

    def stored(version: int) -> bool:
        return Commit.objects.filter(table=table, version=version).exists()

    wait_for(lambda: stored(0), 60, message=celery_workers.logs())
    # A fresh commit (the worker's start-up may have outlasted the first one's freshness).
    write_deltalake(str(path), rows(start=5), mode="append")
    wait_for(lambda: stored(1), 30, message=celery_workers.logs())
    committed = Table.objects.get(id=table.id).last_commit_at
    assert committed is not None
    # Active: visited about every 0.5 s (>= 3 looks in 4 s leaves room for a loaded machine).
    assert _visits(table.id, 4) >= 3
    # Idle after 14 s without a commit: visited every 4 s at most.
    wait_for(lambda: timezone.now() > committed + timedelta(seconds=15), 30)
    assert _visits(table.id, 8.5) <= 3

    write_deltalake(str(path), rows(start=9), mode="append")
    landed = time.monotonic()
    wait_for(lambda: stored(2), 30, message=celery_workers.logs())
    assert time.monotonic() - landed < 4 + 5  # found at the next idle visit
    # Back to the base interval on the first new commit.
    assert _visits(table.id, 4) >= 3
