"""Queries compiled once (audit/reads/prepared.py) give the instances the ORM gives: every column
converted the same way (datetimes, JSON, booleans), annotations as attributes, none for a
missing row, and the rows of the values given on each call (not of the first call)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.health.models import TableHealth
from audit.ingest.health_store import health_fields
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


def _project_lake(tmp_path) -> list[int]:
    """Three projects, each with tables in both statuses and findings of each severity and
    status; returns their ids."""
    from audit.models import Finding, Project

    ids = []
    now = timezone.now()
    for p in range(3):
        project = Project.objects.create(name=f"p{p}", slug=f"p{p}")
        ids.append(project.id)
        for t in range(p + 1):
            table = Table.objects.create(
                uri=str(tmp_path / f"p{p}t{t}"), project=project, status=("ok", "error")[t % 2]
            )
            for i, severity in enumerate(["info", "warning", "critical"] * (p + t + 1)):
                Finding.objects.create(
                    table=table, kind="k", severity=severity, version=i, summary="s",
                    key=f"{i}", last_seen=now, status=("open", "resolved")[i % 2],
                )  # fmt: skip
    return ids


def test_it_counts_a_readers_projects_as_the_orm_does(tmp_path):
    from django.db.models import Count

    from audit.models import NEEDS_ATTENTION, Finding

    ids = _project_lake(tmp_path)
    for chosen in ([ids[0]], [ids[1]], [ids[0], ids[2]], ids, [ids[1]], [], [*ids, *range(-9, 0)]):
        severities = dict(
            Finding.objects.filter(NEEDS_ATTENTION, table__project_id__in=chosen)
            .values_list("severity")
            .annotate(Count("id"))
            .order_by()
        )
        expected = {s: severities.get(s, 0) for s in ("info", "warning", "critical")}
        assert queries.attention_totals(frozenset(chosen)) == expected
        statuses = dict(
            Table.objects.filter(project_id__in=chosen)
            .values_list("status")
            .annotate(Count("id"))
            .order_by()
        )
        assert queries.table_counts(frozenset(chosen)) == (
            sum(statuses.values()),
            statuses.get("error", 0),
        )
    assert queries.table_counts(frozenset([ids[2]])) == (3, 1)  # not only equal: right


def test_it_converts_values_and_models_rows_as_the_orm_does_on_every_call(tmp_path):
    """PreparedValues and PreparedModels look their converters up once per compiled query
    (prepared._converted): booleans, datetimes and JSON come back as the ORM gives them, on
    the first call and on later ones with other values."""
    from audit.models import Finding
    from audit.reads.prepared import PreparedModels, PreparedValues

    first, second = _tables(tmp_path)
    names = ("id", "confirmed", "acknowledged_at", "last_seen", "witness", "table__name")
    for table, n in ((first, 3), (second, 2)):
        for v in range(n):
            Finding.objects.create(
                table=table, kind="conflict_hotspot", severity="warning", version=v,
                confirmed=v % 2 == 0, summary=f"s{v}", witness={"v": [v, "x"]}, key=f"k{v}",
                last_seen=timezone.now(),
                acknowledged_at=timezone.now() if v == 1 else None,
            )  # fmt: skip

    values = PreparedValues(lambda key, pk: Finding.objects.filter(table_id=pk).values(*key))
    models = PreparedModels(lambda key, pk: Table.objects.filter(pk=pk).order_by(*key))
    for table in (first, second, first):
        orm = list(Finding.objects.filter(table_id=table.id).values(*names))
        assert values(names, table.id) == orm
        assert [type(row["confirmed"]) for row in orm] == [bool] * len(orm)
        got = models(("id",), table.id)
        assert [_columns(t) for t in got] == [_columns(Table.objects.get(pk=table.pk))]
