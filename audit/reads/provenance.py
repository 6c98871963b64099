"""Who changed a table: per writer, its commits, operations, changes, findings, over time.

A writer is what the stored provenance names first: the user (name, else id), else the job,
else the engine. Commits are grouped in the database (one GROUP BY per question), so a table
of a million commits costs a few aggregate queries, not a million rows in Python.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from django.db.models import Count, Max, Min
from django.db.models.functions import TruncWeek

from audit.health.models import TableChange
from audit.models import Commit, Finding, Table

_WRITER_COLUMNS = ("user_name", "user_id", "job_id", "engine_info", "engine")
WEEKS_SHOWN = 12
MAX_CHANGES_SHOWN = 20


def writer_label(row: dict[str, Any]) -> str:
    """The one name a commit's writer is shown under."""
    if row.get("user_name") or row.get("user_id"):
        return f"user {row.get('user_name') or row.get('user_id')}"
    if row.get("job_id"):
        return f"job {row['job_id']}"
    return row.get("engine_info") or row.get("engine") or "unknown writer"


def table_writers(table: Table, *, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every writer of the table's stored commits, the busiest first."""
    commits = Commit.objects.filter(table=table)
    writers: dict[str, dict[str, Any]] = {}
    for row in commits.values(*_WRITER_COLUMNS).annotate(
        n=Count("id"), first=Min("timestamp"), last=Max("timestamp")
    ):
        w = writers.setdefault(writer_label(row), _empty(writer_label(row)))
        w["commits"] += row["n"]
        w["first"] = _min(w["first"], row["first"])
        w["last"] = max(w["last"] or 0, row["last"] or 0) or None
    for row in commits.values(*_WRITER_COLUMNS, "operation").annotate(n=Count("id")):
        writers[writer_label(row)]["operations"][row["operation"] or "(none)"] += row["n"]
    _add_weeks(commits, writers, now or dt.datetime.now(tz=dt.UTC))
    _add_changes_and_findings(table, writers)
    out = sorted(writers.values(), key=lambda w: (-w["commits"], w["writer"]))
    for w in out:
        w["operations"] = w["operations"].most_common()
        w["findings"] = dict(w["findings"])
    return out


def _empty(label: str) -> dict[str, Any]:
    return {
        "writer": label,
        "commits": 0,
        "first": None,
        "last": None,
        "operations": Counter(),
        "weeks": [],
        "changes": [],
        "findings": Counter(),
    }


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _add_weeks(commits: Any, writers: dict[str, dict[str, Any]], now: dt.datetime) -> None:
    """Commits per week over the last WEEKS_SHOWN weeks (oldest first, zeros included)."""
    this_week = (now - dt.timedelta(days=now.weekday())).date()
    starts = [this_week - dt.timedelta(weeks=i) for i in range(WEEKS_SHOWN - 1, -1, -1)]
    since = dt.datetime.combine(starts[0], dt.time.min, tzinfo=dt.UTC)
    counts: dict[str, Counter] = {label: Counter() for label in writers}
    rows = (
        commits.filter(committed_at__gte=since)
        .annotate(week=TruncWeek("committed_at"))
        .values(*_WRITER_COLUMNS, "week")
        .annotate(n=Count("id"))
    )
    for row in rows:
        week = row["week"].date() if isinstance(row["week"], dt.datetime) else row["week"]
        counts[writer_label(row)][week] += row["n"]
    for label, w in writers.items():
        w["weeks"] = [{"week": s.isoformat(), "commits": counts[label][s]} for s in starts]


def _add_changes_and_findings(table: Table, writers: dict[str, dict[str, Any]]) -> None:
    changes = list(
        TableChange.objects.filter(table=table)
        .order_by("version")
        .values("version", "kind", "summary")
    )
    findings = list(
        Finding.objects.filter(table=table, status=Finding.Status.OPEN).values(
            "version", "severity"
        )
    )
    versions = {c["version"] for c in changes} | {f["version"] for f in findings}
    by_version = {
        row["version"]: writer_label(row)
        for row in Commit.objects.filter(table=table, version__in=versions).values(
            "version", *_WRITER_COLUMNS
        )
    }
    for change in changes:
        w = writers.get(by_version.get(change["version"], ""))
        if w is not None and len(w["changes"]) < MAX_CHANGES_SHOWN:
            w["changes"].append(change)
    for finding in findings:
        w = writers.get(by_version.get(finding["version"], ""))
        if w is not None:
            w["findings"][finding["severity"]] += 1
