"""Bulk writing of rows keyed by (table, version): the backfill's hot path into the database.

Commit rows and health points (one row a version each) are written here, inside the chunk's
transaction (`audit.ingest.chunk.store_history_chunk`). Every path has the same effect as
INSERT ... ON CONFLICT (table, version) DO NOTHING, so a replayed chunk (a worker killed after
storing, before acknowledging) writes nothing twice:

* PostgreSQL: COPY (psycopg 3) straight into the commit table when none of the chunk's versions
  is stored yet (the usual backfill step; the conditional UPDATE of the table row that precedes
  it in the transaction holds that row's lock, so no other writer adds them meanwhile), and
  otherwise COPY into a temporary table then INSERT ... SELECT ... ON CONFLICT DO NOTHING.
* SQLite (and any other backend): multi-row INSERT ... VALUES (...), (...) statements as large
  as the driver's bound-parameter limit allows.
* AUDIT_BULK_INSERT = False: one INSERT per row through executemany, the path before bulk
  loading (kept as the fallback for a pooler or proxy that does not pass COPY through, and as
  the peer bench/bench_backfill.py measures against).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, models

from audit.models import Commit

# SQLite's default SQLITE_MAX_VARIABLE_NUMBER is 32766 since 3.32; stay well under it.
SQLITE_MAX_PARAMS = 30_000


def insert_commits(rows: list[dict[str, Any]]) -> None:
    """Store Commit rows (dicts from `audit.ingest.commits.commit_values`), skipping stored versions."""
    insert_rows(Commit, rows)


def insert_rows(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """Store rows of a model unique on (table, version) (dicts of every field but the key, by
    attribute name), skipping stored versions. The ORM's bulk_create costs ~3x as much CPU a row
    (a model instance and a prepared value per field), which at 100k points a backfill is seconds."""
    if not rows:
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    if not getattr(settings, "AUDIT_BULK_INSERT", True):
        _insert_rowwise(model, fields, rows)
    elif connection.vendor == "postgresql":
        _copy_postgresql(model, fields, rows)
    else:
        _insert_multirow(model, fields, rows)


def _values(fields: list[models.Field], rows: list[dict[str, Any]], *, raw_datetimes: bool) -> list:
    from audit.core.jsonsafe import json_text  # noqa: PLC0415

    def identity(v: Any) -> Any:
        return v

    def json_value(v: Any) -> Any:
        # Most commits have no partitions, app ids or verdicts: skip the encoder for those.
        if isinstance(v, dict | list) and not v:
            return "{}" if isinstance(v, dict) else "[]"
        return json_text(v)

    prepare = []
    for f in fields:
        if isinstance(f, models.JSONField):
            prepare.append(json_value)
        elif isinstance(f, models.DateTimeField) and not raw_datetimes:
            prepare.append(connection.ops.adapt_datetimefield_value)
        else:
            prepare.append(identity)
    names = [f.attname for f in fields]
    pairs = list(zip(prepare, names, strict=True))
    return [tuple(p(row[name]) for p, name in pairs) for row in rows]


def _columns(fields: list[models.Field]) -> str:
    qn = connection.ops.quote_name
    return ", ".join(qn(f.column) for f in fields)


def _on_conflict() -> str:
    qn = connection.ops.quote_name
    return f"ON CONFLICT ({qn('table_id')}, {qn('version')}) DO NOTHING"


def _insert_rowwise(
    model: type[models.Model], fields: list[models.Field], rows: list[dict[str, Any]]
) -> None:
    table = connection.ops.quote_name(model._meta.db_table)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table} ({_columns(fields)}) VALUES ({marks}) {_on_conflict()}"
    values = _values(fields, rows, raw_datetimes=False)
    with connection.cursor() as cursor:
        for i in range(0, len(values), 1000):
            cursor.executemany(sql, values[i : i + 1000])


def _insert_multirow(
    model: type[models.Model], fields: list[models.Field], rows: list[dict[str, Any]]
) -> None:
    table = connection.ops.quote_name(model._meta.db_table)
    values = _values(fields, rows, raw_datetimes=False)
    per_statement = max(SQLITE_MAX_PARAMS // len(fields), 1)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    with connection.cursor() as cursor:
        for i in range(0, len(values), per_statement):
            batch = values[i : i + per_statement]
            sql = (
                f"INSERT INTO {table} ({_columns(fields)}) VALUES "
                f"{', '.join([one] * len(batch))} {_on_conflict()}"
            )
            cursor.execute(sql, [v for row in batch for v in row])


def _copy_postgresql(
    model: type[models.Model], fields: list[models.Field], rows: list[dict[str, Any]]
) -> None:
    table = connection.ops.quote_name(model._meta.db_table)
    staging = connection.ops.quote_name(f"{model._meta.db_table}_load")
    columns = _columns(fields)
    table_ids = {row["table_id"] for row in rows}
    versions = [row["version"] for row in rows]
    values = _values(fields, rows, raw_datetimes=True)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {table} WHERE table_id = ANY(%s) "
            "AND version BETWEEN %s AND %s)",
            [list(table_ids), min(versions), max(versions)],
        )
        replay = cursor.fetchone()[0]
        target = table
        if replay:
            cursor.execute(f"DROP TABLE IF EXISTS {staging}")
            cursor.execute(
                f"CREATE TEMPORARY TABLE {staging} AS SELECT {columns} FROM {table} WITH NO DATA"
            )
            target = staging
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
            for row in values:
                copy.write_row(row)
        if replay:
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} {_on_conflict()}"
            )
            cursor.execute(f"DROP TABLE {staging}")
