"""The query layer of table health, change history and diff, shared by API and dashboard.

Latest health is one row read (`TableHealth`, kept by `audit.ingest.health_store`); a past
version or a diff is computed from the log (bounded by the stored version) and cached per
(table, version): the log below a stored version never changes.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.cache import cache
from django.db import connection

from audit.core.errors import DeltaAuditError
from audit.core.health.changes import PARTITIONING, SCHEMA
from audit.core.health.compute import health_at
from audit.core.health.diff import diff_versions
from audit.core.health.schemas import schema_at, schema_changes
from audit.core.jsonsafe import json_safe
from audit.core.log import open_log
from audit.core.vocab import FindingKind
from audit.health.models import HealthPoint, TableChange, TableHealth
from audit.models import Commit, Finding, Table
from audit.reads.activity import stored_activity
from audit.reads.cache import health_cache_key, latest_time_travel
from audit.reads.prepared import Prepared, PreparedRows
from audit.trust.paths import check_registered

CACHE_SECONDS = 3600
MAX_POINTS = 400


def _check_version(table: Table, version: int, name: str = "version") -> None:
    if table.last_seen_version is None:
        raise DeltaAuditError("the table has no stored versions yet")
    if version < 0 or version > table.last_seen_version:
        raise DeltaAuditError(
            f"{name} {version} is outside the stored versions 0..{table.last_seen_version}"
        )


def table_health(table: Table, version: int | None = None) -> dict[str, Any]:
    """The health document of `version` (default: the latest stored), with the table's
    readable range as its latest data scan found it (`time_travel`, null before the first)."""
    return {**_health_document(table, version), "time_travel": latest_time_travel(table.id)}


# The stored health of a table, compiled once per process (the ORM's compilation of this
# one-row query cost more than the database's answer).
_stored_health = Prepared(
    lambda pk: TableHealth.objects.filter(table_id=pk).only("version", "data")
)


def _health_document(table: Table, version: int | None) -> dict[str, Any]:
    if version is None or (version == table.last_seen_version):
        found = _stored_health(table.id)  # one row at most: one health per table
        if found and (version is None or found[0].version == version):
            return found[0].data
        if version is None:
            if table.last_seen_version is None:
                raise DeltaAuditError("the table has no stored versions yet")
            version = table.last_seen_version
    _check_version(table, version)
    key = health_cache_key(table, "health", version)
    cached = cache.get(key)
    if cached is None:
        log = open_log(check_registered(table.uri))
        cached = json_safe(health_at(log, version, stored_activity(table.id)))
        cache.set(key, cached, CACHE_SECONDS)
    return cached


def _changes_query(table_id: int):
    return TableChange.objects.filter(table_id=table_id)


# Compiled once per process (the ORM's compilation of these three cost more than their
# answers); the findings and the authors of the changed versions by subquery.
_change_rows = PreparedRows(
    lambda pk: _changes_query(pk).values_list(
        "version", "timestamp", "kind", "before", "after", "diff", "summary"
    ),
    1,
)
_change_findings = PreparedRows(
    lambda pk, inner: Finding.objects.filter(
        table_id=pk,
        kind=FindingKind.CONCURRENT_METADATA_CHANGE,
        version__in=_changes_query(inner).values("version"),
    ).values_list("id", "version"),
    2,
)
_change_authors = PreparedRows(
    lambda pk, inner: Commit.objects.filter(
        table_id=pk, version__in=_changes_query(inner).values("version")
    ).values_list("version", "provenance"),
    2,
)
CHANGE_JSON = ("before", "after", "diff")


def table_changes(table: Table) -> list[dict[str, Any]]:
    """Every stored change, each with the concurrent_metadata_change findings at its version."""
    changes = []
    for version, timestamp, kind, *documents, summary in _change_rows(table.id):
        change = {"version": version, "timestamp": timestamp, "kind": kind}
        change.update(zip(CHANGE_JSON, map(stored_json, documents), strict=True))
        change["summary"] = summary
        changes.append(change)
    findings: dict[int, list[int]] = {}
    for fid, version in _change_findings(table.id, table.id):
        findings.setdefault(version, []).append(fid)
    # Who made each change: the stored provenance of its commit ({} when not stored).
    by = {version: stored_json(p) for version, p in _change_authors(table.id, table.id)}
    for c in changes:
        c["findings"] = sorted(findings.get(c["version"], []))
        c["by"] = by.get(c["version"]) or {}
    return changes


def stored_json(value: Any) -> Any:
    """A JSON column as the driver returns it (text on SQLite and, as Django configures it, on
    PostgreSQL) decoded as `JSONField.from_db_value` does, by the json module: orjson would
    read an integer past 64 bits as a float."""
    if not isinstance(value, (str, bytes)):
        return value  # NULL, or a driver that decoded it already
    return json.loads(value)


def table_diff(table: Table, version_from: int, version_to: int) -> dict[str, Any]:
    _check_version(table, version_from, "from")
    _check_version(table, version_to, "to")
    key = health_cache_key(table, "diff", version_from, version_to)
    cached = cache.get(key)
    if cached is None:
        log = open_log(check_registered(table.uri))
        cached = json_safe(diff_versions(log, version_from, version_to))
        cache.set(key, cached, CACHE_SECONDS)
    return cached


def health_history(table: Table, max_points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """num_files / total_bytes / small_files per version, thinned to at most ~`max_points`.

    The versions to show are chosen first (every stride-th, plus the last) and fetched with
    one `version IN (...)` over the (table, version) unique index: a million stored points
    cost a few hundred index lookups, never a scan. Plain SQL (every column is an integer):
    the ORM's preparation of a few hundred IN values and its row dicts cost more CPU than
    the lookups themselves.
    """
    ((first, last),) = _health_sql(_POINT_BOUNDS_SQL, [table.id, table.id])
    if first is None or last is None:
        return []
    stride = max(-(-(last - first + 1) // max_points), 1)
    wanted = list(range(first, last + 1, stride))
    if wanted[-1] != last:
        wanted.append(last)
    if connection.vendor == "postgresql":
        # One array parameter: psycopg adapting and PostgreSQL planning ~400 separate values
        # cost twice the CPU of the lookups (client 2.1-2.5 -> 1.0-1.2 ms a request).
        rows = _health_sql(_POINTS_ANY_SQL, [table.id, wanted])
    else:
        places = ", ".join(["%s"] * len(wanted))
        rows = _health_sql(_POINTS_SQL.format(places=places), [table.id, *wanted])
    return [dict(zip(POINT_FIELDS, row, strict=True)) for row in rows]


POINT_FIELDS = ("version", "timestamp", "num_files", "total_bytes", "small_files")
_POINTS = HealthPoint._meta.db_table
# Two subqueries: SQLite answers MIN and MAX from the index only one at a time.
_POINT_BOUNDS_SQL = (
    f"SELECT (SELECT MIN(version) FROM {_POINTS} WHERE table_id = %s), "
    f"(SELECT MAX(version) FROM {_POINTS} WHERE table_id = %s)"
)
_POINTS_SQL = (
    f"SELECT {', '.join(POINT_FIELDS)} FROM {_POINTS} "
    "WHERE table_id = %s AND version IN ({places}) ORDER BY version"
)
_POINTS_ANY_SQL = (
    f"SELECT {', '.join(POINT_FIELDS)} FROM {_POINTS} "
    "WHERE table_id = %s AND version = ANY(%s) ORDER BY version"
)


def _health_sql(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def table_schemas(table: Table, version: int, compare: int | None) -> dict[str, Any]:
    """The table's schema at `version` (`audit.core.health.schemas.schema_at`), and at
    `compare` with the changes from it to `version` when given (DeltaAuditError for a version
    outside the stored ones). Read from the stored change history: no log is opened."""
    _check_version(table, version)
    if compare is not None:
        _check_version(table, compare, "compare")
    changes = list(  # a few rows: one per schema or partitioning change
        TableChange.objects.filter(table_id=table.id, kind__in=(SCHEMA, PARTITIONING)).values(
            "version", "kind", "before", "after"
        )
    )
    snapshot = table.settings_snapshot or {}
    now = (snapshot.get("schema"), snapshot.get("partition_columns"))
    out: dict[str, Any] = {"schema": schema_at(changes, version, *now), "changes": None}
    out["compare"] = schema_at(changes, compare, *now) if compare is not None else None
    if compare is not None:
        older, newer = sorted((out["compare"], out["schema"]), key=lambda s: s["version"])
        out["changes"] = schema_changes(older, newer)
    out["change_versions"] = sorted({c["version"] for c in changes if c["kind"] == SCHEMA})
    return out
