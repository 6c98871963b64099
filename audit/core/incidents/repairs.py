"""The statements that repair and show a stale write's damage, from the files and rows found.

The wrong rows are rows of specific live files (added by commits the stale one did not see)
that match its condition. The deltalake repair commits, in one transaction, a remove of each
such file and, where the file also holds rows to keep, an add of a copy of those rows (by
position, as the audit found them); an UPDATE's missed rows are rewritten with the constant
values its own rewrite gave the rows it did see. Spark SQL states the same by file name and
condition. Nothing from the log is written into the code but as a literal (quoting.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from audit.core.conflicts.scope import is_unconditional
from audit.core.history.summary import History
from audit.core.incidents.damage import StaleDamage, WrongFile
from audit.core.incidents.model import REPAIR_MARK, Statement
from audit.core.incidents.quoting import (
    Unsafe,
    python_literal,
    spark_identifier,
    spark_predicate,
    spark_string,
    spark_strings,
    spark_table,
)
from audit.core.vocab import StatementEngine
from audit.core.wording.incidents import statement_words

MAX_FILES_IN_STATEMENT = 1_000
DELTALAKE, SPARK = StatementEngine.DELTALAKE, StatementEngine.SPARK_SQL


@dataclass(slots=True)
class RepairPlan:
    """What the repair takes out of which file: from the damage, the files a statement can
    name safely (relative paths inside the table), with the UPDATE's assignments if any."""

    incident_id: str
    files: list[WrongFile]
    versions: list[int]
    assignments: dict[int, dict[str, Any]]  # stale UPDATE version -> column -> value
    # deltalake 1.x opens no table whose readers need deletion vectors: Spark SQL repairs it.
    deltalake_opens: bool = True


def safe_relative(path: str) -> bool:
    """A path a statement may name: relative to the table root, no `..`, no scheme, printable."""
    from audit.core.incidents.quoting import has_control  # noqa: PLC0415

    if not path or path.startswith("/") or "://" in path or "\\" in path or has_control(path):
        return False
    return ".." not in path.split("/")


def ranges(positions: Iterable[int]) -> list[list[int]]:
    """Sorted positions as [start, stop) ranges: whole runs of rows stay short."""
    out: list[list[int]] = []
    for p in sorted(positions):
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return out


def plan_of(incident_id: str, stale: StaleDamage, history: History) -> RepairPlan | None:
    files = [f for f in stale.files if f.wrong and safe_relative(f.path)]
    if not files:
        return None
    protocol = history.state.protocol
    features = (protocol.reader_features or []) if protocol is not None else []
    return RepairPlan(
        incident_id,
        files[:MAX_FILES_IN_STATEMENT],
        sorted({f.stale_version for f in files}),
        {},
        deltalake_opens="deletionVectors" not in features,
    )


# --------------------------------------------------------------------------- deltalake

_REPAIR_HEAD = """# Delta Audit incident {id}: take out the rows stale commit(s) {versions} should have changed.
import json
import time
import uuid
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.fs import DeltaStorageHandler
from deltalake.transaction import AddAction, CommitProperties, RemoveAction

# (file, its partition values, rows to keep, rows to fix: [start, stop) ranges of positions)
FILES = {files}
FIX = {fix}  # column -> value for the rows to fix (an UPDATE's assignments)
NOTE = {note}

dt = DeltaTable(table_uri, storage_options=storage_options)
"""
_REPAIR_BODY = """# The log spells paths URL-encoded; FILES and RemoveAction take them as stored.
live = {unquote(p) for p in pa.table(dt.get_add_actions()).column("path").to_pylist()}
gone = [path for path, *_ in FILES if path not in live]
if gone:
    raise RuntimeError(f"{len(gone)} file(s) are no longer live: audit the table again")
fs = pa_fs.PyFileSystem(DeltaStorageHandler(table_uri, options=storage_options))
now = int(time.time() * 1000)
actions = []
for path, values, keep, fix in FILES:
    actions.append(RemoveAction(path, True, now, None, values))
    if not keep and not fix:
        continue
    rows = pq.read_table(fs.open_input_file(path))
    wanted = sorted([i for a, b in keep + fix for i in range(a, b)])
    fixed = set(i for a, b in fix for i in range(a, b))
    rows = rows.take(wanted)
    mask = pa.array([i in fixed for i in wanted])
    for column, value in FIX.items():
        at = rows.schema.get_field_index(column)
        field = rows.schema.field(at)
        changed = pc.if_else(mask, pa.scalar(value, field.type), rows.column(at))
        rows = rows.set_column(at, field, changed)
    name = f"repair-{uuid.uuid4()}.parquet"
    with fs.open_output_stream(name) as out:
        pq.write_table(rows, out)
    stats = json.dumps({"numRecords": rows.num_rows})
    actions.append(AddAction(name, fs.get_file_info(name).size, values, now, True, stats))
dt.create_write_transaction(
    actions,
    mode="append",
    schema=dt.schema(),
    partition_by=dt.metadata().partition_columns,
    commit_properties=CommitProperties(
        custom_metadata={"readVersion": dt.version(), "userMetadata": NOTE}
    ),
)
"""


def deltalake_repair(plan: RepairPlan, assignments: dict[str, Any]) -> str:
    files = []
    for f in plan.files:
        fix = ranges(f.wrong) if assignments else []
        keep = ranges(f.keep)
        files.append((f.path, dict(f.add.partition_values), keep, fix))
    head = _REPAIR_HEAD.format(
        id=plan.incident_id,
        versions=", ".join(f"v{v}" for v in plan.versions),
        files=_listing(files),
        fix=python_literal(assignments),
        note=python_literal(f"{REPAIR_MARK} {plan.incident_id}"),
    )
    return head + _REPAIR_BODY


def _listing(items: list[Any]) -> str:
    """A Python list literal, one item a line."""
    if not items:
        return "[]"
    return "[\n" + "".join(f"    {python_literal(item)},\n" for item in items) + "]"


_INSPECT = """# Delta Audit incident {id}: the wrong rows, file by file, at v{version}.
import pyarrow as pa
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
from deltalake.fs import DeltaStorageHandler

# (file, its partition values, the wrong rows: [start, stop) ranges of positions)
WRONG = {files}

fs = pa_fs.PyFileSystem(DeltaStorageHandler(table_uri, options=storage_options))
for path, values, wrong in WRONG:
    rows = pq.read_table(fs.open_input_file(path)).take([i for a, b in wrong for i in range(a, b)])
    for column, value in values.items():
        if column not in rows.column_names:
            rows = rows.append_column(column, pa.array([value] * rows.num_rows, pa.string()))
    print(path)
    print(rows.to_pylist())
"""


def deltalake_inspect(plan: RepairPlan, version: int) -> str:
    files = [(f.path, dict(f.add.partition_values), ranges(f.wrong)) for f in plan.files]
    return _INSPECT.format(id=plan.incident_id, version=version, files=_listing(files))


# --------------------------------------------------------------------------- Spark SQL


def spark_conditions(plan: RepairPlan, history: History) -> list[tuple[str, list[str], int]]:
    """Per stale commit: its condition as Spark SQL ("" for none), the file names, the version.
    Unsafe when a condition cannot be restated."""
    out = []
    for version in plan.versions:
        txn = history.summary(version)
        names = sorted(
            {f.path.rsplit("/", 1)[-1] for f in plan.files if f.stale_version == version}
        )
        predicate = plan_predicate(plan, version)
        condition = (
            ""
            if txn is None or is_unconditional(txn) or predicate is None
            else spark_predicate(predicate)
        )
        out.append((condition, names, version))
    return out


def plan_predicate(plan: RepairPlan, version: int) -> Any:
    for f in plan.files:
        if f.stale_version == version:
            return f.predicate
    return None


def _where(condition: str, names: list[str]) -> str:
    files = f"_metadata.file_name IN ({spark_strings(names)})"
    return f"({condition}) AND {files}" if condition else files


def spark_repairs(plan: RepairPlan, history: History, *, alone: bool = False) -> list[Statement]:
    """The repair in Spark SQL; `alone` when deltalake cannot open the table (its does_not
    says so)."""
    table = spark_table(history.table_uri)
    statements = []
    for condition, names, version in spark_conditions(plan, history):
        assignments = plan.assignments.get(version)
        if assignments:
            sets = ", ".join(
                f"{spark_identifier(c)} = {_spark_value(v)}" for c, v in assignments.items()
            )
            code = f"UPDATE {table} SET {sets} WHERE {_where(condition, names)}"
            words = statement_words("repair_update_sql", assignments=_shown(assignments))
        else:
            code = f"DELETE FROM {table} WHERE {_where(condition, names)}"
            words = statement_words("repair_delete_sql")
        if alone:
            words = (words[0], f"{words[1]} {statement_words('deltalake_cannot')[1]}")
        statements.append(Statement(SPARK, code, *words))
    return statements


def spark_inspects(plan: RepairPlan, history: History) -> list[Statement]:
    table = spark_table(history.table_uri)
    version = history.latest_version
    rows = sum(len(f.wrong) for f in plan.files)
    statements = []
    for condition, names, _ in spark_conditions(plan, history):
        code = (
            f"SELECT *, _metadata.file_name FROM {table} VERSION AS OF {version} "
            f"WHERE {_where(condition, names)}"
        )
        words = statement_words("inspect_rows", rows=rows, version=version)
        statements.append(Statement(SPARK, code, *words))
    return statements


def _spark_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    if isinstance(value, str):
        return spark_string(value)
    raise Unsafe(f"a value of type {type(value).__name__} is not restated")


def _shown(assignments: dict[str, Any]) -> str:
    return ", ".join(f"{c} = {v!r}"[:80] for c, v in assignments.items())


def stale_statements(plan: RepairPlan, history: History) -> tuple[list[Statement], list[Statement]]:
    """(repair, inspect) for a stale write's plan."""
    assignments: dict[str, Any] = {}
    for value in plan.assignments.values():
        assignments.update(value)
    versions = ", ".join(f"v{v}" for v in plan.versions)
    name = "repair_update" if assignments else "repair_files"
    words = statement_words(
        name, versions=versions, files=len(plan.files), assignments=_shown(assignments)
    )
    repair = []
    if plan.deltalake_opens:
        repair.append(Statement(DELTALAKE, deltalake_repair(plan, assignments), *words))
    inspect_words = statement_words(
        "inspect_rows", rows=sum(len(f.wrong) for f in plan.files), version=history.latest_version
    )
    inspect = [
        Statement(DELTALAKE, deltalake_inspect(plan, history.latest_version), *inspect_words)
    ]
    try:
        repair += spark_repairs(plan, history, alone=not plan.deltalake_opens)
        inspect += spark_inspects(plan, history)
    except Unsafe:
        pass  # the deltalake statements name files and positions only; Spark would need more
    return repair, inspect
