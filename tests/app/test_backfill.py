"""Backfill: the bulk insert paths store the same rows, and the page/API show progress and ETA."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

from audit.core.history.summary import load_history
from audit.ingest import bulkload
from audit.ingest.commits import commit_values
from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail.step import tail_once

pytestmark = pytest.mark.django_db

COMPARED = [
    f.attname for f in Commit._meta.concrete_fields if not f.primary_key and f.attname != "table_id"
]


def rows_of(table: Table) -> list[dict[str, Any]]:
    return list(Commit.objects.filter(table=table).order_by("version").values(*COMPARED))


def commit_rows(path, table: Table) -> list[dict[str, Any]]:
    history = load_history(str(path))
    return [commit_values(table.id, s, None) for s in history.summaries]


@pytest.mark.parametrize("path", ["rowwise", "multirow", "copy"])
def test_every_insert_path_stores_the_same_rows_once(
    path, delta_table_factory, settings, monkeypatch
):
    table_path = delta_table_factory("t", commits=6, partition_by=["day"])
    reference, _ = Table.objects.get_or_create(uri="/reference")
    target, _ = Table.objects.get_or_create(uri="/target")
    settings.AUDIT_BULK_INSERT = False
    bulkload.insert_commits(commit_rows(table_path, reference))  # the old path: the reference

    settings.AUDIT_BULK_INSERT = path != "rowwise"
    if path == "multirow":
        monkeypatch.setattr(connection, "vendor", "sqlite-like")  # what SQLite gets
    elif path == "copy" and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    rows = commit_rows(table_path, target)
    with transaction.atomic():
        bulkload.insert_commits(rows[:3])
    with transaction.atomic():
        bulkload.insert_commits(rows)  # a replay overlapping stored versions writes each once
    with transaction.atomic():
        bulkload.insert_commits(rows)

    assert Commit.objects.filter(table=target).count() == 6
    assert rows_of(target) == rows_of(reference)
    assert rows_of(target)[1]["operation_parameters"] == rows[1]["operation_parameters"]


def test_a_backfill_reports_progress_rate_and_time_left(delta_table_factory, client, member):
    path = delta_table_factory("t", commits=9)
    table, _ = register_table(str(path))

    first = tail_once(table.id, chunk=3)
    table.refresh_from_db()
    assert first.more and table.status == "backfilling"
    assert (table.backfill_done, table.backfill_remaining, table.backfill_start_done) == (3, 6, 0)
    assert table.backfill_started_at is not None and table.backfill_rate > 0
    assert table.backfill_eta_seconds == pytest.approx(6 / table.backfill_rate)
    started = table.backfill_started_at

    tail_once(table.id, chunk=3)
    table.refresh_from_db()
    assert table.backfill_started_at == started  # the same backfill: its average rate
    assert table.backfill_done == 6

    client.force_login(member)
    page = client.get(f"/tables/{table.id}/").content.decode()
    assert 'id="stat-backfill"' in page and "67% · 6 of 9 commits" in page and "left" in page
    status = client.get(f"/tables/{table.id}/status/").json()["backfill"]
    assert status["remaining"] == 3 and status["eta_seconds"] > 0
    assert status["text"].startswith("67% · 6 of 9 commits · ") and status["text"].endswith(" left")
    api = client.get(f"/api/tables/{table.id}/").json()["backfill"]
    assert api["remaining"] == 3 and api["commits_per_second"] > 0
    assert api["eta_seconds"] == round(3 / table.backfill_rate, 1)  # may round to 0.0 when fast

    tail_once(table.id, chunk=3)
    table.refresh_from_db()
    assert table.status == "ok" and table.backfill_target_version is None
    assert table.backfill_started_at is None and table.backfill_rate is None
    assert 'id="stat-backfill"' not in client.get(f"/tables/{table.id}/").content.decode()
    assert client.get(f"/api/tables/{table.id}/").json()["backfill"] is None
