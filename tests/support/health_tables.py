"""Real deltalake tables for the health / change-history / diff tests.

`build_evolving_table` writes, in order:
  v0..v11  twelve small partitioned appends (part a/b)
  v12      OPTIMIZE (compacts them: twelve tombstones)
  v13      an append with schema_mode="merge" adding a column with a hostile name
  v14      a property change (deletedFileRetentionDuration 0 days, so everything is vacuumable)
  v15      a protocol upgrade (changeDataFeed table feature, writer version 7)
  v16      one more append (a version later than the tombstones' deletion time)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.table import TableFeatures

HOSTILE_COLUMN = "<img src=x onerror=alert(1)>"
V_OPTIMIZE, V_SCHEMA, V_PROPS, V_PROTOCOL, V_LAST = 12, 13, 14, 15, 16


def _batch(i: int, n: int = 10) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(i * n, i * n + n), pa.int64()),
            "part": pa.array(["a" if i % 3 else "b"] * n),
        }
    )


def build_evolving_table(path: Path) -> Path:
    uri = str(path)
    for i in range(12):
        write_deltalake(uri, _batch(i), mode="append", partition_by=["part"])
    DeltaTable(uri).optimize.compact()
    extra = pa.table(
        {
            "id": pa.array([1000, 1001], pa.int64()),
            "part": ["c", "c"],
            HOSTILE_COLUMN: pa.array([1.5, 2.5]),
        }
    )
    write_deltalake(uri, extra, mode="append", schema_mode="merge")
    DeltaTable(uri).alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 0 days"}
    )
    DeltaTable(uri).alter.add_feature(
        TableFeatures.ChangeDataFeed, allow_protocol_versions_increase=True
    )
    last = _batch(50).append_column(HOSTILE_COLUMN, pa.array([None] * 10, pa.float64()))
    write_deltalake(uri, last, mode="append")
    return path


def add_actions(uri: str, version: int | None = None) -> pa.Table:
    dt = DeltaTable(uri, version=version) if version is not None else DeltaTable(uri)
    return pa.table(dt.get_add_actions(flatten=True))


def dry_run_vacuum(uri: str, version: int | None = None) -> list[str]:
    dt = DeltaTable(uri, version=version) if version is not None else DeltaTable(uri)
    return dt.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False)


HOSTILE_PROPERTY = "<script>window.__xss='prop'</script><img src=x onerror=\"window.__xss='img'\">"


def add_hostile_property_commit(path: Path) -> int:
    """One more commit, written by hand as a hostile writer could: a property value is markup.

    (deltalake refuses unknown property keys, real writers do not.) Returns its version.
    """
    import json
    import time

    log = path / "_delta_log"
    versions = sorted(int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit())
    metadata = None
    for v in reversed(versions):
        for line in (log / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                metadata = action["metaData"]
                break
        if metadata:
            break
    assert metadata is not None
    metadata["configuration"] = {**metadata["configuration"], "user.note": HOSTILE_PROPERTY}
    version = versions[-1] + 1
    info = {"timestamp": int(time.time() * 1000) + 1000, "operation": "SET TBLPROPERTIES",
            "operationParameters": {}, "readVersion": version - 1}  # fmt: skip
    text = json.dumps({"commitInfo": info}) + "\n" + json.dumps({"metaData": metadata}) + "\n"
    (log / f"{version:020d}.json").write_text(text)
    return version


def build_broken_time_travel_table(path: Path) -> Path:
    """v0 and v1 append, v2 overwrites; then a file of v0 is deleted outside Delta, before its
    retention: v0 and v1 are broken, v2 is the earliest readable version."""
    write_deltalake(str(path), _batch(0))
    first = sorted(path.glob("*.parquet"))
    write_deltalake(str(path), _batch(1), mode="append")
    write_deltalake(str(path), _batch(2), mode="overwrite")
    first[0].unlink()
    return path
