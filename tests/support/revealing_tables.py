"""Tables whose findings lie at an earlier version than the commit that reveals them.

A `concurrent_metadata_change` sits at the metadata change; it shows up only when a commit that
ran across the change lands, and it names every such commit. The real writer (delta-rs) builds
the tables and the metadata changes (`schema_mode="merge"` / `"overwrite"`); it refuses to commit
a stale write across a metadata change, so the stale overwrites and deletes without a read
version, the shape Spark and older writers leave, are hand-built commits on top
(tests/support/hand_commits.py). Each builder returns the versions of the findings it plants.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.support.hand_commits import commit_text, log_file, write_commit
from tests.support.scenarios import DAY1, DAY2, rows


def _with_extra(day: str, ids: list[int]) -> pa.Table:
    return rows(day, ids).append_column("extra", pa.array(["x"] * len(ids), pa.string()))


def _adds(path: Path, version: int) -> list[dict[str, Any]]:
    lines = log_file(path, version).read_text().splitlines()
    return [json.loads(line)["add"] for line in lines if line.startswith('{"add"')]


def _remove(add: dict[str, Any]) -> dict[str, Any]:
    return {"remove": {"path": add["path"], "deletionTimestamp": _now(), "dataChange": True}}


def _copy(path: Path, add: dict[str, Any], prefix: str) -> dict[str, Any]:
    """An add of a copy of `add`'s data file (a rewrite whose rows the witness can read)."""
    name = f"{prefix}-{add['path']}"
    shutil.copy(path / add["path"], path / name)
    return {"add": {**add, "path": name, "modificationTime": _now()}}


def _now() -> int:
    return int(time.time() * 1000)


def _stale_write(path: Path, version: int, operation: str, params: dict, *actions: dict) -> None:
    """A destructive commit that records no read version (as delta-rs overwrites do)."""
    info = {"timestamp": _now(), "operation": operation, "operationParameters": params}
    write_commit(path, version, *actions, info=info)


def build_metadata_change_then_stale_overwrite(path: str) -> dict[str, Any]:
    """v1 changes the schema; v2 overwrites v0's file only, so v1's file survives it: the
    overwrite read v0 and ran across the change (found at v1, revealed by v2)."""
    p = Path(path)
    write_deltalake(path, rows(DAY1, [1, 2]))  # v0
    write_deltalake(path, _with_extra(DAY1, [3]), mode="append", schema_mode="merge")  # v1
    (first,) = _adds(p, 0)
    _stale_write(p, 2, "WRITE", {"mode": "Overwrite"}, _remove(first), _copy(p, first, "v2"))
    return {"metadata_change": 1, "in_flight": [2]}


def build_metadata_change_in_flight_twice(path: str) -> dict[str, Any]:
    """v1 overwrites with a new schema; v2 (read v0, recorded) and v4 (a delete with no read
    version whose survivors date from v1 and v2) both ran across it: one finding at v1 naming
    two commits that land in different chunks."""
    p = Path(path)
    write_deltalake(path, rows(DAY1, [1, 2]))  # v0
    write_deltalake(path, _with_extra(DAY1, [3]), mode="overwrite", schema_mode="overwrite")  # v1
    (first,) = _adds(p, 1)
    append = {**_copy(p, first, "v2")["add"], "dataChange": True}
    info = {"timestamp": _now(), "operation": "WRITE", "readVersion": 0, "isBlindAppend": True}
    write_commit(p, 2, {"add": append}, info={**info, "operationParameters": {"mode": "Append"}})
    write_deltalake(path, _with_extra(DAY2, [4]), mode="append")  # v3
    (latest,) = _adds(p, 3)
    _stale_write(p, 4, "DELETE", {"predicate": "[]"}, _remove(latest))
    return {"metadata_change": 1, "in_flight": [2, 4]}


def build_short_stale_overwrite(path: str) -> dict[str, Any]:
    """Two commits, then an overwrite of v1's file only: v0's file survives, so the overwrite
    read before v0, which created the table (found at v0, revealed by v2)."""
    p = Path(path)
    write_deltalake(path, rows(DAY1, [1, 2]))  # v0
    write_deltalake(path, rows(DAY1, [3]), mode="append")  # v1
    (second,) = _adds(p, 1)
    _stale_write(p, 2, "WRITE", {"mode": "Overwrite"}, _remove(second), _copy(p, second, "v2"))
    return {"metadata_change": 0, "in_flight": [2]}


def build_short_stale_delete(path: str) -> dict[str, Any]:
    """A schema change at v1, then a delete without a read version of v0's and v2's files
    only: v1's file survives, so the delete ran across the change (found at v1, revealed by v3)."""
    p = Path(path)
    write_deltalake(path, rows(DAY1, [1, 2]))  # v0
    write_deltalake(path, _with_extra(DAY1, [3]), mode="append", schema_mode="merge")  # v1
    write_deltalake(path, _with_extra(DAY2, [4]), mode="append")  # v2
    gone = [_remove(a) for a in _adds(p, 0) + _adds(p, 2)]
    _stale_write(p, 3, "DELETE", {"predicate": "[]"}, *gone)
    return {"metadata_change": 1, "in_flight": [3]}


def build_random_history(path: str, seed: int, steps: int = 6) -> None:
    """A short random history (no threads, so a seed always gives the same log): appends,
    predicated deletes and schema changes by delta-rs, and stale overwrites and deletes without
    a read version that drop a random part of the live files, the last commit always one."""
    rng = random.Random(seed)
    p = Path(path)
    write_deltalake(path, rows(DAY1, [1, 2]), partition_by=["day"])
    columns = 0
    for step in range(steps):
        ids = [10 * step + i for i in range(rng.randint(1, 3))]
        day = rng.choice([DAY1, DAY2])
        roll = rng.random()
        if roll < 0.35:
            batch = rows(day, ids)
            for n in range(columns):
                batch = batch.append_column(f"x{n}", pa.array(["x"] * len(ids), pa.string()))
            write_deltalake(path, batch, mode="append")
        elif roll < 0.55:
            columns += 1
            batch = rows(day, ids)
            for n in range(columns):
                batch = batch.append_column(f"x{n}", pa.array(["x"] * len(ids), pa.string()))
            write_deltalake(path, batch, mode="append", schema_mode="merge")
        elif roll < 0.7:
            DeltaTable(path).delete(f"id < {rng.randint(1, 10 * step + 2)}")
        else:
            _random_stale_write(p, rng)
    _random_stale_write(p, rng)


def _random_stale_write(path: Path, rng: random.Random) -> None:
    version, text = random_stale_removes(path, rng)
    log_file(path, version).write_text(text)


def random_stale_removes(path: Path, rng: random.Random) -> tuple[int, str]:
    """The next version and the text of a DELETE or overwrite without a read version that
    removes a random part of the live files (at least one while any is live)."""
    table = DeltaTable(str(path))
    live = sorted(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
    gone = rng.sample(live, k=rng.randint(1, max(1, len(live) - 1))) if live else []
    removes = [
        {"remove": {"path": g, "deletionTimestamp": _now(), "dataChange": True}} for g in gone
    ]
    operation, params = rng.choice(
        [("DELETE", {"predicate": "[]"}), ("WRITE", {"mode": "Overwrite"})]
    )
    info = {"timestamp": _now(), "operation": operation, "operationParameters": params}
    return table.version() + 1, commit_text(*removes, info=info)


BUILDERS = {
    name[len("build_") :]: builder
    for name, builder in dict(globals()).items()
    if name.startswith("build_") and name != "build_random_history"
}
