"""The witness row filter on every column type and writer path.

Each check evaluates a predicate with the witness code (find_rows over the table's live files,
as a stale-write witness does) and compares the matching row count with an oracle computed in
Python from the rows deltalake reads. Tables: Spark-written golden tables in tests/data and
tables written here by deltalake's append, DELETE, UPDATE, MERGE and OPTIMIZE (whose rewritten
files hold `string_view`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.conflicts.context import partition_types_of
from audit.core.data import rowfilter
from audit.core.data.witness import MAX_FILES_READ, find_rows
from audit.core.history.summary import load_history
from audit.core.predicates import parse_predicate
from tests.support.paths import DELTA_TABLES

GOLDEN = DELTA_TABLES / "golden"

# Spark-written golden tables that cover the types (no deletion vectors: the witness reads
# whole files, the oracle reads the table).
GOLDEN_TABLES = [
    "data-reader-primitives",
    "data-reader-partition-values",
    "data-reader-nested-struct",
    "data-reader-map",
    "data-reader-array-primitives",
    "data-reader-date-types-UTC",
    "data-reader-date-types-PST",
    "data-reader-timestamp_ntz",
    "data-reader-timestamp_ntz-name-mode",
    "data-reader-escaped-chars",
    "basic-decimal-table",
    "basic-decimal-table-legacy",
    "decimal-various-scale-precision",
    "parquet-decimal-dictionaries",
    "parquet-decimal-type",
    "kernel-timestamp-INT96",
    "kernel-timestamp-TIMESTAMP_MILLIS",
    "kernel-timestamp-TIMESTAMP_MICROS",
    "kernel-timestamp-partition-col-ISO8601",
    "table-with-columnmapping-mode-name",
    "table-with-columnmapping-mode-id",
    "data-skipping-basic-stats-all-types",
    "data-skipping-basic-stats-all-types-columnmapping-name",
    "data-skipping-partition-and-data-column",
]


def witness_count(path: Path | str, predicate_text: str) -> tuple[str, int, str]:
    """(status, matching rows, note) of the witness row filter over the live files."""
    history = load_history(str(path))
    metadata = history.state.metadata
    adds = list(history.state.files.values())
    assert len(adds) <= MAX_FILES_READ
    predicate = parse_predicate(predicate_text)
    outcome = find_rows(
        history.table_uri,
        adds,
        predicate,
        partition_types_of(metadata),
        names=rowfilter.name_tree(metadata.schema_string),
    )
    count = outcome.witness["row_count"] if outcome.witness else 0
    return outcome.status, count, outcome.note


# --------------------------------------------------------------------------- predicates


def literal(value: Any, arrow_type: pa.DataType) -> str | None:
    """A SQL literal as a writer's predicate would spell it; None when equality is moot."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return None if not math.isfinite(value) else repr(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return f"'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return None


def equality_checks(table: pa.Table) -> list[tuple[str, int]]:
    """(predicate, expected row count) for one value of every reachable leaf column."""
    rows = table.to_pylist()
    checks = []
    for name in table.column_names:
        for sql_path, getter, arrow_type in _leaves(name, table.schema.field(name).type):
            values = [_safe(getter, row[name]) for row in rows]
            value = next((v for v in values if v is not None), None)
            text = literal(value, arrow_type)
            if text is None:
                continue
            expected = sum(1 for v in values if v is not None and v == value)
            checks.append((f"{sql_path} = {text}", expected))
    return checks


def _safe(getter: Any, value: Any) -> Any:
    try:
        return getter(value)
    except (KeyError, IndexError, TypeError):
        return None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _leaves(sql: str, arrow_type: pa.DataType, depth: int = 0) -> list[tuple[str, Any, Any]]:
    """(SQL path, python getter, type) of the comparable leaves under a column."""
    top = _quote(sql) if depth == 0 else sql
    if pa.types.is_struct(arrow_type):
        out = []
        for i in range(arrow_type.num_fields):
            child = arrow_type.field(i)
            for path, getter, kind in _leaves(child.name, child.type, depth + 1):
                out.append((f"{top}.{path}", lambda v, g=getter, n=child.name: g(v[n]), kind))
        return out
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        inner = arrow_type.value_type
        if pa.types.is_nested(inner):
            return []
        return [(f"{top}[0]", lambda v: v[0] if v else None, inner)]
    if pa.types.is_map(arrow_type):
        return []  # map keys are per row; see test_map_values below
    return [(top, lambda v: v, arrow_type)]


def oracle(path: Path | str) -> pa.Table:
    """The table's rows as deltalake reads them; by hand where deltalake cannot (column
    mapping, where it reads NULLs; negative decimal partition values, where it raises)."""
    if "columnMapping" in (load_history(str(path)).state.metadata.schema_string or ""):
        return _read_by_hand(Path(path))
    try:
        return DeltaTable(str(path)).to_pyarrow_table()
    except Exception:
        return _read_by_hand(Path(path))


def _read_by_hand(path: Path) -> pa.Table:
    state = load_history(str(path)).state
    fields = orjson.loads(state.metadata.schema_string)["fields"]
    logical = {
        f.get("metadata", {}).get("delta.columnMapping.physicalName", f["name"]): f["name"]
        for f in fields
    }
    types = {f["name"]: f["type"] for f in fields}
    tables = []
    for add in state.files.values():
        table = pq.read_table(path / add.path)
        table = table.rename_columns([logical.get(n, n) for n in table.column_names])
        table = pa.table(
            [
                c.cast(_logical_type(c.type, _struct_of(types.get(n))))
                for n, c in zip(table.column_names, table.columns, strict=True)
            ],
            names=table.column_names,
        )
        for key, value in add.partition_values.items():
            name = logical.get(key, key)
            if name not in table.column_names:
                column = pa.array([_partition_value(value, types[name])] * table.num_rows)
                table = table.append_column(name, column)
        tables.append(table)
    return pa.concat_tables(tables, promote_options="permissive")


def _struct_of(kind: Any) -> dict | None:
    return kind if isinstance(kind, dict) and kind.get("type") == "struct" else None


def _logical_type(arrow_type: pa.DataType, struct: dict | None) -> pa.DataType:
    """Struct fields renamed from their physical to their logical names, recursively."""
    if struct is None or not pa.types.is_struct(arrow_type):
        return arrow_type
    by_physical = {
        f.get("metadata", {}).get("delta.columnMapping.physicalName", f["name"]): f
        for f in struct["fields"]
    }
    children = []
    for i in range(arrow_type.num_fields):
        child = arrow_type.field(i)
        spec = by_physical.get(child.name, {"name": child.name, "type": None})
        kind = _logical_type(child.type, _struct_of(spec["type"]))
        children.append(pa.field(spec["name"], kind, child.nullable))
    return pa.struct(children)


def _partition_value(text: str | None, kind: str) -> Any:
    if text is None:
        return None
    if kind in ("byte", "short", "integer", "long"):
        return int(text)
    if kind.startswith("decimal"):
        return decimal.Decimal(text)
    if kind in ("float", "double"):
        return float(text)
    if kind == "boolean":
        return text == "true"
    if kind == "date":
        return dt.date.fromisoformat(text)
    if kind.startswith("timestamp"):
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return value.replace(tzinfo=dt.UTC) if kind == "timestamp" and not value.tzinfo else value
    return text


@pytest.mark.parametrize("name", GOLDEN_TABLES)
def test_witness_matches_the_oracle_on_every_column_of_spark_golden_tables(name):
    path = GOLDEN / name
    checks = equality_checks(oracle(path))
    assert checks, f"{name}: no comparable column"
    for predicate, expected in checks:
        status, count, note = witness_count(path, predicate)
        assert (status, count) == ("rows", expected), f"{name}: {predicate}: {note}"


def test_map_values_arrays_and_structs_are_addressable():
    path = GOLDEN / "data-reader-map"
    table = oracle(path)
    column = next(n for n in table.column_names if pa.types.is_map(table.schema.field(n).type))
    rows = [dict(r[column] or []) for r in table.to_pylist()]
    key = next(k for r in rows for k in r)
    key_text = literal(key, None)
    expected = sum(1 for r in rows if key in r and r[key] is not None)
    status, count, note = witness_count(path, f"{_quote(column)}[{key_text}] IS NOT NULL")
    assert (status, count) == ("rows", expected), note


def test_arithmetic_and_functions_are_evaluated():
    path = GOLDEN / "data-reader-primitives"
    rows = oracle(path).to_pylist()
    odd = sum(1 for r in rows if r["as_int"] is not None and r["as_int"] % 2 == 1)
    assert witness_count(path, "as_int % 2 = 1")[:2] == ("rows", odd)
    assert witness_count(path, "(as_int#12 % 2) = 1")[:2] == ("rows", odd)  # Spark text
    nulls = sum(1 for r in rows if r["as_int"] is None)
    assert witness_count(path, "isnull(as_int)")[:2] == ("rows", nulls)
    assert witness_count(path, "as_int % 2 = 7")[:2] == ("no_rows", 0)


# --------------------------------------------------------------------------- deltalake writers

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dec38", pa.decimal128(38, 18)),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("flag", pa.bool_()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("a", pa.int32()), ("name", pa.string())])),
        ("arr", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("part", pa.string()),
    ]
)


def typed_rows(ids: range, part: str) -> pa.Table:
    base = dt.datetime(2024, 1, 1, 12, 30, 15, 123456)
    rows = {
        "id": list(ids),
        "i8": [i % 100 for i in ids],
        "i16": [i * 3 for i in ids],
        "i32": [i * 7 for i in ids],
        "f32": [i / 4 for i in ids],
        "f64": [i / 3 for i in ids],
        "dec": [decimal.Decimal(i) / 100 for i in ids],
        "dec38": [decimal.Decimal(i) / 10**12 for i in ids],
        "s": [f"name-{i % 5}" if i % 11 else None for i in ids],
        "b": [bytes([i % 256, 7]) for i in ids],
        "flag": [i % 3 == 0 for i in ids],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 4) for i in ids],
        "ts": [(base + dt.timedelta(hours=i % 6)).replace(tzinfo=dt.UTC) for i in ids],
        "ntz": [base + dt.timedelta(minutes=i % 6) for i in ids],
        "st": [{"a": i % 4, "name": f"n{i % 3}"} for i in ids],
        "arr": [[i % 5, i] for i in ids],
        "m": [[("k", i % 2)] for i in ids],
        "part": [part for _ in ids],
    }
    return pa.table(rows, schema=SCHEMA)


def _check_everything(path: Path, extra: list[tuple[str, Any]]) -> None:
    table = oracle(path)
    rows = table.to_pylist()
    checks = equality_checks(table)
    checks += [(text, sum(1 for r in rows if test(r))) for text, test in extra]
    for predicate, expected in checks:
        status, count, note = witness_count(path, predicate)
        want = "rows" if expected else "no_rows"
        assert (status, count) == (want, expected), f"{predicate}: {note}"


EXTRA = [
    ("id % 2 = 1", lambda r: r["id"] % 2 == 1),
    ("s LIKE 'name-1%'", lambda r: (r["s"] or "").startswith("name-1")),
    ("s IN ('name-2', 'name-3')", lambda r: r["s"] in ("name-2", "name-3")),
    ("s IS NULL", lambda r: r["s"] is None),
    ("st.a = 2 AND part = 'p1'", lambda r: r["st"]["a"] == 2 and r["part"] == "p1"),
    ("m['k'] = 1", lambda r: dict(r["m"]).get("k") == 1),
    ("element_at(arr, 1) = 3", lambda r: r["arr"][0] == 3),
    ("upper(s) = 'UPD'", lambda r: r["s"] == "upd"),
    ("d >= DATE'2024-01-03'", lambda r: r["d"] >= dt.date(2024, 1, 3)),
    ("dec > 0.5", lambda r: r["dec"] > decimal.Decimal("0.5")),
]


@pytest.mark.slow
def test_witness_matches_the_oracle_after_every_deltalake_writer_path(tmp_path):
    path = tmp_path / "t"
    write_deltalake(str(path), typed_rows(range(0, 40), "p0"), partition_by=["part"])
    write_deltalake(str(path), typed_rows(range(40, 80), "p1"), mode="append")
    _check_everything(path, EXTRA)
    DeltaTable(str(path)).delete("id % 5 = 0")
    _check_everything(path, EXTRA)
    DeltaTable(str(path)).update(updates={"s": "'upd'"}, predicate="id % 7 = 1")
    _check_everything(path, EXTRA)
    source = typed_rows(range(30, 50), "p1")
    (
        DeltaTable(str(path))
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(updates={"s": "'merged'"})
        .when_not_matched_insert_all()
        .execute()
    )
    _check_everything(path, [*EXTRA, ("s = 'merged'", lambda r: r["s"] == "merged")])
    DeltaTable(str(path)).optimize.compact()
    _check_everything(path, EXTRA)


def test_files_with_deletion_vectors_are_not_counted():
    """Rows a deletion vector removed are not in the table: the witness must not claim them."""
    path = DELTA_TABLES / "spark" / "table-with-dv-small"
    history = load_history(str(path))
    adds = list(history.state.files.values())
    assert any(a.deletion_vector for a in adds)
    outcome = find_rows(history.table_uri, adds, None, {})
    dv_free = [a for a in adds if not a.deletion_vector]
    if dv_free:
        assert outcome.witness and set(outcome.witness["files"]) <= {a.path for a in dv_free}
    else:
        assert outcome.status == "unreadable" and "deletion vector" in outcome.note
