"""A table whose log strings are hostile markup, ingested: for the escaping tests (tests/app)
and the browser test that nothing runs (tests/e2e).

The table is written with the real `deltalake` writer: user names (commitInfo.userName through
CommitProperties custom metadata), a DELETE predicate, a partition value and data rows carry
`<script>`, `<img src=x onerror=...>` and `javascript:` payloads; a stale DELETE turns the
hostile rows into a never-existed-snapshot witness. One more commit file is written by hand, as
a hostile writer could: its operation name is markup, so the timeline's JavaScript (legend,
tooltip) gets it too. Every payload either sets `window.__xss` or opens a dialog if it runs.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit.models import Table
from tests.support.ingested import ingest_table

SCRIPT_USER = "<script>window.__xss='user';alert('user')</script>"
IMG_NAME = "<img src=x onerror=\"window.__xss='row';alert('row')\">"
JS_URL = "javascript:window.__xss='url';alert('url')"
TAG = "\"><svg onload=\"window.__xss='tag';alert('tag')\">"
HOSTILE_OP = "<img src=x onerror=\"window.__xss='op';alert('op')\">"
TABLE_NAME = "<script>window.__xss='name'</script>"


def hostile(**extra: str) -> CommitProperties:
    return CommitProperties(custom_metadata={"userName": SCRIPT_USER, "userId": JS_URL, **extra})


def rows(names: list[str]) -> pa.Table:
    return pa.table(
        {
            "tag": pa.array([TAG] * len(names)),
            "name": pa.array(names),
            "link": pa.array([JS_URL] * len(names)),
        }
    )


def build_hostile_table(path: Path) -> None:
    config = {"delta.isolationLevel": "writeSerializable"}
    write_deltalake(
        str(path),
        rows(["a", "b"]),
        partition_by=["tag"],
        configuration=config,
        commit_properties=hostile(),
    )  # v0
    write_deltalake(
        str(path), rows(["c", IMG_NAME]), mode="append", commit_properties=hostile()
    )  # v1
    stale = DeltaTable(str(path))  # reads v1
    write_deltalake(
        str(path), rows([IMG_NAME]), mode="append", commit_properties=hostile(isBlindAppend=True)
    )  # v2: a blind append of rows the stale DELETE matches
    escaped = IMG_NAME.replace("'", "''")
    stale.delete(f"name = '{escaped}'", commit_properties=hostile())  # v3
    # v4, written by hand: a writer that names its operation with markup.
    commit_info = {
        "commitInfo": {
            "timestamp": 1_800_000_000_000,
            "operation": HOSTILE_OP,
            "operationParameters": {"note": JS_URL, "predicate": IMG_NAME},
            "userName": SCRIPT_USER,
            "engineInfo": "<b>hostile-writer</b>",
        }
    }
    log_file = path / "_delta_log" / f"{4:020d}.json"
    log_file.write_bytes(orjson.dumps(commit_info) + b"\n")


@pytest.fixture
def hostile_table(tmp_path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = tmp_path / "hostile"
    build_hostile_table(path)
    table = ingest_table(str(path), name=TABLE_NAME)
    assert table.status == "ok", table.last_error
    return table
