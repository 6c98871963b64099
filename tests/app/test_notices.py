"""Change notices on the table row: a notice no tail step has answered is redone by the next
tail pass (its step found the table busy, expired in the queue, or died with its worker)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from deltalake import write_deltalake
from django.utils import timezone

from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail.notifications import clear_notice, note_commits
from audit.tail.polling import tables_due
from audit.tail.step import tail_once
from tests.support.tables import rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def notified(delta_table_factory, settings):
    """A tailed table under a notified root (its commits are never probed for); its path."""
    path = delta_table_factory("events")
    settings.AUDIT_NOTIFY_QUEUES = [f"{path.parent}=http://127.0.0.1:9/queue"]
    settings.AUDIT_TAIL_INTERVAL_SECONDS = 1.0
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 3600
    table, _ = register_table(str(path))
    assert tail_once(table.id).status == "ok"
    return path, table


def test_an_unanswered_notice_is_tailed_by_a_later_pass(notified):
    path, table = notified
    write_deltalake(str(path), rows(start=5), mode="append")
    now = timezone.now()
    assert tables_due(now) == []  # a notified root is not probed: the commit waits for its notice

    assert note_commits({str(path), str(path.parent / "unregistered")}) == [table.id]
    assert tables_due(timezone.now()) == []  # fresh: the drain has dispatched its step
    # The step the drain dispatched found the table busy: its holder listed before the commit.
    clear_notice(table.id, listed_after=now - timedelta(seconds=1))
    later = timezone.now() + timedelta(seconds=3)
    assert tables_due(later) == [table.id]  # two intervals on, the pass redoes it

    assert tail_once(table.id).status == "ok"  # lists after the notice: stores v1, clears it
    assert Commit.objects.filter(table=table, version=1).exists()
    assert Table.objects.get(id=table.id).notified_at is None
    assert tables_due(later + timedelta(seconds=1)) == []


def test_a_notice_newer_than_the_step_survives_it(notified):
    path, table = notified
    note_commits({str(path)})
    noticed = Table.objects.get(id=table.id).notified_at
    clear_notice(table.id, listed_after=noticed - timedelta(microseconds=1))
    assert Table.objects.get(id=table.id).notified_at == noticed
    clear_notice(table.id, listed_after=noticed)
    assert Table.objects.get(id=table.id).notified_at is None


def test_locked_paused_and_broken_tables_are_not_redone_on_notice(notified):
    path, table = notified
    note_commits({str(path)})
    later = timezone.now() + timedelta(seconds=3)
    Table.objects.filter(id=table.id).update(locked_until=later + timedelta(seconds=60))
    assert tables_due(later) == []  # its holder lists after the notice, or the claim expires
    Table.objects.filter(id=table.id).update(locked_until=None, status=Table.Status.PAUSED)
    assert tables_due(later) == []
    # A table in error is retried at its (idle) visits, not every other pass on its notice.
    Table.objects.filter(id=table.id).update(status=Table.Status.ERROR, probed_at=later)
    assert tables_due(later + timedelta(seconds=2)) == []
    assert note_commits({str(path)}) == [table.id]
    Table.objects.filter(id=table.id).update(status=Table.Status.PAUSED)
    assert note_commits({str(path)}) == []  # paused tables are not tailed on notice either


def test_a_table_not_yet_stored_under_a_notified_root_is_due_every_pass(
    delta_table_factory, settings
):
    path = delta_table_factory("fresh")
    settings.AUDIT_NOTIFY_QUEUES = [f"{path.parent}=http://127.0.0.1:9/queue"]
    settings.AUDIT_TAIL_INTERVAL_SECONDS = 1.0
    table, _ = register_table(str(path))
    now = timezone.now()
    assert tables_due(now) == [table.id]
    # Its step expired in the queue: the next pass dispatches it again, not a minute later.
    assert tables_due(now + timedelta(seconds=1)) == [table.id]
    assert tail_once(table.id).status == "ok"
    assert tables_due(now + timedelta(seconds=2)) == []  # stored: now it waits for notices
