"""Who changed a table: per writer, its commits, operations, changes, findings, over time.

A writer is the one identity of `audit.core.history.writer_identity` (engine, user, job,
notebook; the incident causes and the writer telemetry use it too), read from the stored
columns: the idempotent `txn` app ids are not grouped by here (they are stored with each
commit's txn version, which differs every commit). Clusters are a writer's detail (a new
cluster each run). Commits are grouped in the database into per-writer totals that each
process remembers and brings up to date from the versions stored since
(`audit.reads.writer_totals`); each writer's changes and open findings are remembered under the
stored version and the findings generation. A request at a million commits reads one index
entry, not a million rows.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models.fields.json import KT

from audit.core.history.writer_identity import identity, identity_key, identity_name
from audit.health.models import TableChange
from audit.models import Commit, Finding, Table
from audit.reads.writer_totals import (
    WRITER_COLUMNS,
    TableTotals,
    WriterTotals,
    remembered_part,
    table_totals,
)

WEEKS_SHOWN = 12
MAX_CHANGES_SHOWN = 20
MAX_FINDINGS_LINKED = 5
MAX_CLUSTERS_SHOWN = 3
MAX_WRITERS_SHOWN = 200


def _commits(table: Table):
    return Commit.objects.filter(table=table).annotate(notebook=KT("provenance__notebook_id"))


def writer_parts(row: dict[str, Any]) -> dict[str, str]:
    """The identity of a grouped row's writer (its stored columns as a provenance)."""
    provenance = {
        "engine": row.get("engine_info"),
        "user_name": row.get("user_name"),
        "user_id": row.get("user_id"),
        "job_id": row.get("job_id"),
        "notebook_id": row.get("notebook"),
    }
    return identity(provenance, row.get("engine") or "")


def writer_label(row: dict[str, Any]) -> str:
    """The key a commit's writer is grouped under (`identity_key`)."""
    return identity_key(writer_parts(row))


def table_writers(table: Table, *, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every writer of the table's stored commits, the busiest first."""
    return shown_writers(table, None, now=now).writers


@dataclass
class ShownWriters:
    writers: list[dict[str, Any]]  # the busiest first
    more_writers: int = 0  # writers beyond the limit, not shown
    more_commits: int = 0  # and their commits


def shown_writers(
    table: Table, limit: int | None = MAX_WRITERS_SHOWN, *, now: dt.datetime | None = None
) -> ShownWriters:
    """The `limit` busiest writers of the table (None: every one), and how many are not shown:
    a table written by a new identity each run would otherwise list thousands."""
    starts = _week_starts(now or dt.datetime.now(tz=dt.UTC))
    since = dt.datetime.combine(starts[0], dt.time.min, tzinfo=dt.UTC)
    totals = table_totals(table, since, writer_label)
    if totals.order is None:  # (-commits, label), as the list is shown; once per totals
        by = totals.writers
        totals.order = sorted(by, key=lambda label: (-by[label].commits, label))
    labels = totals.order if limit is None else totals.order[:limit]
    writers = {label: _with_findings(totals.writers[label], starts) for label in labels}
    _add_changes_and_findings(table, totals, writers)
    hidden = totals.order[len(labels) :]
    return ShownWriters(
        list(writers.values()), len(hidden), sum(totals.writers[h].commits for h in hidden)
    )


def _with_findings(t: WriterTotals, starts: list[dt.date]) -> dict[str, Any]:
    # Its own changes and findings lists: `_shown` is shared by every request.
    return {**_shown(t, starts), "changes": [], "findings": {}, "finding_links": []}


def _shown(t: WriterTotals, starts: list[dt.date]) -> dict[str, Any]:
    """What the view shows of a writer's totals but its changes and findings: remembered with
    the totals (which never change once remembered), its weeks per first week shown."""
    if t.shown is None or t.shown["weeks"][0]["week"] != starts[0].isoformat():
        w = _empty(writer_parts(t.row), t.row.get("engine") or "")
        w.update(commits=t.commits, first=t.first, last=t.last)
        w["operations"] = t.operations.most_common()
        w["clusters"] = [c for c, _ in t.clusters.most_common(MAX_CLUSTERS_SHOWN)]
        w["weeks"] = [{"week": s.isoformat(), "commits": t.weeks[s]} for s in starts]
        t.shown = w
    return t.shown


def _empty(parts: dict[str, str], engine_kind: str) -> dict[str, Any]:
    return {
        "writer": identity_key(parts),
        "name": identity_name(parts),
        "parts": parts,
        # Who it is beside the engine, and the engine with its version as the detail.
        "who": [(k, v) for k, v in parts.items() if k != "engine"],
        "engine": parts.get("engine", ""),
        "history_query": _history_query(parts, engine_kind),
        "commits": 0,
        "first": None,
        "last": None,
        "operations": [],
        "clusters": [],
        "weeks": [],
        "changes": [],
        "findings": {},
        "finding_links": [],
    }


def _history_query(parts: dict[str, str], engine_kind: str) -> str:
    """The history page's filters that select this writer's commits (its user, job and
    engine kind; a notebook-only writer is narrowed by its engine)."""
    query = {"user": parts.get("user"), "job": parts.get("job"), "engine": engine_kind}
    return urlencode({k: v for k, v in query.items() if v})


def _week_starts(now: dt.datetime) -> list[dt.date]:
    """The Mondays of the last WEEKS_SHOWN weeks, oldest first."""
    this_week = (now - dt.timedelta(days=now.weekday())).date()
    return [this_week - dt.timedelta(weeks=i) for i in range(WEEKS_SHOWN - 1, -1, -1)]


def _add_changes_and_findings(
    table: Table, totals: TableTotals, writers: dict[str, dict[str, Any]]
) -> None:
    # Remembered with the totals' version and the findings generation, which every change of
    # the table's findings moves (`Table.bump_findings`); changes are stored with the commits.
    key = f"{totals.version}:{table.findings_generation}"
    per_writer = remembered_part(table, key, lambda: _changes_and_findings(table, totals.writers))
    for label, (changes, findings, links) in per_writer.items():
        w = writers.get(label)
        if w is not None:
            w.update(changes=list(changes), findings=dict(findings), finding_links=list(links))


def _changes_and_findings(table: Table, writers: dict[str, Any]) -> dict[str, tuple]:
    """Per writer label: its changes (the first MAX_CHANGES_SHOWN), its open findings per
    severity and links to the latest MAX_FINDINGS_LINKED."""
    changes = list(
        TableChange.objects.filter(table=table)
        .order_by("version")
        .values("version", "kind", "summary")
    )
    findings = list(
        Finding.objects.filter(table=table, status=Finding.Status.OPEN)
        .order_by("-version", "id")
        .values("id", "version", "severity", "kind")
    )
    versions = {c["version"] for c in changes} | {f["version"] for f in findings}
    by_version = {
        row["version"]: writer_label(row)
        for row in _commits(table).filter(version__in=versions).values("version", *WRITER_COLUMNS)
    }
    out: dict[str, tuple[list, Counter, list]] = {}
    for change in changes:
        label = by_version.get(change["version"], "")
        if label in writers:
            w = out.setdefault(label, ([], Counter(), []))
            if len(w[0]) < MAX_CHANGES_SHOWN:
                w[0].append(change)
    for finding in findings:
        label = by_version.get(finding["version"], "")
        if label in writers:
            w = out.setdefault(label, ([], Counter(), []))
            w[1][finding["severity"]] += 1
            if len(w[2]) < MAX_FINDINGS_LINKED:
                w[2].append(finding)
    return out
