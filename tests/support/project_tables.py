"""Two projects' tables side by side in one lake, and a log of one that names the other's files.

Project beta's table holds personal data (`ssn`, `salary`: the markers below). Project alpha's
table is written by someone who can write its log and points its add actions at beta's data
files, as the review's reproduction did with `../b/part-0.parquet`: read, beta's rows would be
shown to alpha's viewers as a witness's sample rows or a duplicate key's sample keys.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from deltalake import write_deltalake

from audit.ingest.tables import register_table
from audit.models import Table, project_named
from audit.tail.step import tail_once
from tests.support import scenarios
from tests.support.hand_commits import log_file, write_commit
from tests.support.outside_table import point_add_at

SSN = "SSN-BETA-078-05-1120"
SALARY = 987654321


def beta_rows() -> pa.Table:
    return pa.table({"id": pa.array([1, 2], pa.int64()), "ssn": [SSN, SSN + "-2"],
                     "salary": pa.array([SALARY, SALARY + 1], pa.int64())})  # fmt: skip


def build_beta(path: Path) -> list[Path]:
    """Beta's table: the same two rows appended twice (each ssn twice); its data files."""
    write_deltalake(str(path), beta_rows())
    write_deltalake(str(path), beta_rows(), mode="append")
    return sorted(path.glob("*.parquet"))


def spelled(target: Path, table: Path, how: str) -> str:
    """`target` as a log may name it from `table`: "relative" (../), "absolute", "file_uri"."""
    if how == "relative":
        return os.path.relpath(target, table)
    if how == "absolute":
        return str(target)
    return "file://" + quote(str(target))


def build_alpha_witness(path: Path, target: str) -> None:
    """Alpha's table: a stale unconditional DELETE whose surviving file (the never-existed
    snapshot's witness) the log names as `target`."""
    scenarios.build_stale_unconditional_delete(str(path))
    point_add_at(path, target)


def build_alpha_keys(path: Path, targets: list[str]) -> None:
    """Alpha's table keyed on `ssn`: its own key "A-1" twice, then a commit adding `targets`
    (no statistics: every file is a candidate whose keys are read)."""
    own = pa.table({"id": pa.array([1], pa.int64()), "ssn": ["A-1"],
                    "salary": pa.array([1], pa.int64())})  # fmt: skip
    write_deltalake(str(path), own)
    write_deltalake(str(path), own, mode="append")
    adds = [
        {"add": {"path": target, "partitionValues": {}, "size": 1000, "dataChange": True,
                 "modificationTime": 1_700_000_000_000}}
        for target in targets
    ]  # fmt: skip
    assert not log_file(path, 2).exists()
    write_commit(
        path, 2, *adds, info={"operation": "WRITE", "operationParameters": {"mode": "Append"}}
    )


def tail_into(path: Path, project: str, **fields: Any) -> Table:
    """Register the table into `project` (before any audit: its reads are scoped by it) and
    tail it to its latest version."""
    table, _ = register_table(str(path), project=project_named(project))
    if fields:
        Table.objects.filter(pk=table.pk).update(**fields)
    while tail_once(table.id).more:
        pass
    table.refresh_from_db()
    return table


def leaked(text: str) -> bool:
    return SSN in text or str(SALARY) in text


def dumped(value: Any) -> str:
    return json.dumps(value, default=str)
