"""The commit-hour profile of a table's stored commits, read by one grouped SQL.

The stored health (audit.ingest.health_store) and a past version's health (audit.reads.health)
both ask it; it reads Commit rows, so it is a read like the others here.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from audit.core.health.compute import ACTIVITY_DAYS, Activity
from audit.core.operations import classify_operation, uses_zorder
from audit.core.vocab import OperationClass
from audit.models import Commit
from audit.reads.prepared import fetch_sql

ACTIVITY_ROWS = 10_000  # the commit-hour profile reads at most this many recent commits


def stored_activity(table_id: int) -> Activity:
    """The commit-hour profile of the table's newest ACTIVITY_ROWS stored commits of the
    ACTIVITY_DAYS days before its newest commit.

    Counted by one grouped SQL per (UTC hour, operation, blind append, parameters), each group
    classified once: a tail step runs this for every stored commit, and reading and
    classifying up to 10,000 rows one by one was 69 of a step's 122 ms of CPU on a table of
    3,000 commits (SQLite; `ExtractHour` is a Python function there)."""
    activity = Activity()
    latest = (
        Commit.objects.filter(table_id=table_id).order_by("-version").values("committed_at")[:1]
    )
    newest = latest[0]["committed_at"] if latest else None
    since = (newest or timezone.now()) - timedelta(days=ACTIVITY_DAYS)
    since_value = connection.ops.adapt_datetimefield_value(since)  # as the ORM compares it
    groups = fetch_sql("stored_activity", _activity_sql, [table_id, since_value, ACTIVITY_ROWS])
    decoded: dict[str | None, Any] = {}
    for hour, operation, blind, params_text, n in groups:
        if params_text not in decoded:
            decoded[params_text] = None if params_text is None else json.loads(params_text)
        params = decoded[params_text]
        blind = None if blind is None else bool(blind)  # SQLite answers 0 / 1
        family = classify_operation(operation, blind, params)
        activity.all_hours[hour] += n
        if family == OperationClass.UDM:
            activity.udm_hours[hour] += n
        if family == OperationClass.OPTIMIZE and uses_zorder(params):
            activity.zorder_used = True
    return activity


def _activity_sql() -> str:
    """Groups of the newest commits (by version) since a time; the hour is the commit time's
    UTC hour, from its milliseconds, floored as Python floors (SQL's % truncates): the hour
    `committed_at` has wherever it is set (commits without it are not counted)."""
    quote = connection.ops.quote_name
    meta = Commit._meta
    table, version, at, ms, op, blind, params = (
        quote(meta.get_field(f).column)
        for f in ("table", "version", "committed_at", "timestamp", "operation", "blind_append",
                  "operation_parameters")
    )  # fmt: skip
    text = f"{params}::text" if connection.vendor == "postgresql" else params
    day, hour = 86_400_000, 3_600_000
    return (
        f"SELECT hour, op, blind, params, COUNT(*) FROM ("
        f"SELECT (({ms} %% {day}) + {day}) %% {day} / {hour} AS hour, {op} AS op, "
        f"{blind} AS blind, {text} AS params FROM {quote(meta.db_table)} "
        f"WHERE {table} = %s AND {at} >= %s ORDER BY {version} DESC LIMIT %s"
        f") recent GROUP BY hour, op, blind, params"
    )
