"""The commit-hour profile counted by grouped SQL equals the row-by-row ORM reading it replaced
(kept here as the reference), on the database the suite runs on (CI: PostgreSQL)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Q
from django.db.models.functions import ExtractHour
from django.utils import timezone

from audit.core.health.compute import ACTIVITY_DAYS, Activity
from audit.core.operations import classify_operation, uses_zorder
from audit.core.vocab import OperationClass
from audit.models import Commit, Table
from audit.reads import activity as reads_activity

pytestmark = pytest.mark.django_db

HOUR = 3_600_000
# (operation, blind append, parameters): every family, parameters that decide one, hostile text.
KINDS = [
    ("WRITE", True, {"mode": "Append"}),
    ("WRITE", False, {"mode": "Append"}),
    ("WRITE", None, {"mode": "Append"}),
    ("WRITE", None, {"mode": "Overwrite"}),
    ("WRITE", True, {"mode": "Append", "replaceWhere": "day = '1'"}),
    ("MERGE", False, {"predicate": "t.id = s.id <script>"}),
    ("DELETE", False, {"predicate": '["(id > 3)"]'}),
    ("OPTIMIZE", False, {"zOrderBy": '["id"]'}),
    ("OPTIMIZE", False, {"zOrderBy": "[]"}),
    ("STREAMING UPDATE", True, {"outputMode": "Complete"}),
    ("CREATE TABLE", None, {}),
    ("SET TBLPROPERTIES", None, {"properties": '{"a": "b"}'}),
    ("", None, {}),
]


def _reference(table_id: int) -> Activity:
    """stored_activity before the grouped SQL (stop 32)."""
    activity = Activity()
    since = timezone.now() - timedelta(days=ACTIVITY_DAYS)
    latest = (
        Commit.objects.filter(table_id=table_id).order_by("-version").values("committed_at")[:1]
    )
    newest = latest[0]["committed_at"] if latest else None
    if newest is not None:
        since = newest - timedelta(days=ACTIVITY_DAYS)
    rows = (
        Commit.objects.filter(table_id=table_id)
        .filter(Q(committed_at__gte=since))
        .annotate(hour=ExtractHour("committed_at"))
        .order_by("-version")
        .values_list("hour", "operation", "blind_append", "operation_parameters")[
            : reads_activity.ACTIVITY_ROWS
        ]
    )
    for hour, operation, blind, params in rows:
        family = classify_operation(operation, blind, params)
        activity.all_hours[hour] += 1
        if family == OperationClass.UDM:
            activity.udm_hours[hour] += 1
        if family == OperationClass.OPTIMIZE and uses_zorder(params):
            activity.zorder_used = True
    return activity


def _table(name: str, timestamps: list[int | None], seed: int) -> Table:
    rng = random.Random(seed)
    table = Table.objects.create(uri=f"/lake/{name}", name=name, status="ok")
    rows = []
    for version, ms in enumerate(timestamps):
        operation, blind, params = rng.choice(KINDS)
        at = None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)
        rows.append(
            Commit(table=table, version=version, timestamp=ms, committed_at=at,
                   operation=operation, blind_append=blind, operation_parameters=params)
        )  # fmt: skip
    Commit.objects.bulk_create(rows)
    return table


def test_it_counts_what_the_row_by_row_reading_counted(monkeypatch):
    rng = random.Random(7)
    now = 1_790_000_000_000
    # 40 days of commits in version order, some without a time: the oldest fall out.
    spread = sorted(now - rng.randrange(40 * 24 * HOUR) for _ in range(600))
    spread = [None if i % 50 == 3 else ms for i, ms in enumerate(spread)]
    lake = _table("lake", spread, seed=1)
    # Around the epoch (floored hours before 1970) and at exact hour edges.
    edges = [-30 * 24 * HOUR + 1, -HOUR - 1, -HOUR, -1, 0, HOUR - 1, HOUR, 23 * HOUR]
    epoch = _table("epoch", edges, seed=2)
    empty = Table.objects.create(uri="/lake/empty", name="empty", status="ok")
    for table in (lake, epoch, empty):
        assert reads_activity.stored_activity(table.id) == _reference(table.id), table.name
    monkeypatch.setattr(reads_activity, "ACTIVITY_ROWS", 100)  # the newest 100 by version
    for table in (lake, epoch):
        got = reads_activity.stored_activity(table.id)
        assert got == _reference(table.id) and sum(got.all_hours) <= 100
    assert sum(reads_activity.stored_activity(lake.id).all_hours) == 100
    assert reads_activity.stored_activity(lake.id).udm_hours != [0] * 24
