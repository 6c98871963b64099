"""Queries compiled once (audit/reads/prepared.py) give the instances the ORM gives: every column
converted the same way (datetimes, JSON, booleans), annotations as attributes, none for a
missing row, and the rows of the values given on each call (not of the first call)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.health.models import TableHealth
from audit.health.store import health_fields
from audit.models import Table
from audit.reads import queries

pytestmark = pytest.mark.django_db


HEALTH = {
    "version": 41, "num_files": 3, "total_bytes": 3000, "small_files": {"count": 1},
    "tombstones": {"vacuumable_bytes": 0}, "checkpoint": {"commits_since": 1},
}  # fmt: skip


def _columns(table: Table) -> dict:
    return {f.attname: getattr(table, f.attname) for f in Table._meta.concrete_fields}


def _tables(tmp_path) -> tuple[Table, Table]:
    now = timezone.now()
    first = Table.objects.create(
        uri=str(tmp_path / "a"), name="a <b>", status="error", last_error="x\u2028y",
        last_seen_version=41, latest_version_in_log=45, first_available_version=3,
        last_commit_at=now, settings_snapshot={"delta.appendOnly": "true", "n": [1, 2]},
        risk=62.5,
    )  # fmt: skip
    second = Table.objects.create(uri=str(tmp_path / "b"), name="b")
    return first, second


def test_a_table_read_by_id_is_the_orm_row(tmp_path):
    first, second = _tables(tmp_path)
    for table in (second, first, second):  # each call reads its own argument
        assert _columns(queries.table_by_id(table.id)) == _columns(Table.objects.get(pk=table.pk))
        assert _columns(queries.table_by_id(str(table.id))) == _columns(
            Table.objects.get(pk=table.pk)
        )
    assert queries.table_by_id(second.id + 1000) is None


def test_the_health_flag_follows_the_stored_health(tmp_path):
    first, second = _tables(tmp_path)
    assert queries.table_with_health_flag(first.id).has_health is False
    TableHealth.objects.create(table=first, **health_fields(HEALTH))
    row = queries.table_with_health_flag(first.id)
    assert row.has_health is True
    assert _columns(row) == _columns(Table.objects.get(pk=first.pk))
    assert queries.table_with_health_flag(second.id).has_health is False
    assert queries.table_with_health_flag(second.id + 1000) is None
