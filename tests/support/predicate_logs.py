"""Commit logs to read predicates from: the JSON commits of a table read the simplest way, and a
delta-rs table that holds every predicate-carrying operation (DELETE, UPDATE, MERGE, replaceWhere)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import orjson
import pyarrow as pa


def log_actions(table: Path) -> list[tuple[int, list[dict]]]:
    """(version, actions) of every JSON commit, read the simplest way (no checkpoints)."""
    commits = []
    for path in sorted((table / "_delta_log").glob("*.json")):
        if not (path.stem.isdigit() and len(path.stem) == 20):
            continue  # V2 checkpoints are JSON too
        lines = path.read_bytes().splitlines()
        commits.append((int(path.stem), [orjson.loads(line) for line in lines if line.strip()]))
    return commits


def commit_info(actions: list[dict]) -> dict:
    return next((a["commitInfo"] for a in actions if "commitInfo" in a), {})


def operations(table: Path) -> dict[str, list[tuple[int, dict, list[dict]]]]:
    found: dict[str, list] = {}
    for version, actions in log_actions(table):
        info = commit_info(actions)
        found.setdefault(info.get("operation"), []).append(
            (version, info.get("operationParameters", {}), actions)
        )
    return found


def build_delta_rs_table(path: Path) -> Path:
    """A table partitioned by date and country, then DELETE, UPDATE, MERGE, overwrite."""
    from deltalake import DeltaTable, write_deltalake

    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    for day in days:  # one append per day: one file per (date, country)
        rows = pa.table(
            {
                "id": pa.array(range(day.day * 100, day.day * 100 + 6), pa.int64()),
                "d": pa.array([day] * 6, pa.date32()),
                "country": ["US", "FR", "US", "FR", "DE", "US"],
                "v": pa.array([1.5, 2.5, 3.5, 4.5, 5.5, 6.5]),
            }
        )
        write_deltalake(str(path), rows, partition_by=["d", "country"], mode="append")
    table = DeltaTable(str(path))
    table.delete("d = '2024-01-02'::date")
    table.update(predicate="country = 'US' AND id > 301", updates={"v": "0.0"})
    source = pa.table(
        {
            "id": pa.array([100, 999], pa.int64()),
            "d": pa.array([dt.date(2024, 1, 1)] * 2, pa.date32()),
            "country": ["US", "US"],
            "v": [9.0, 9.0],
        }
    )
    (
        table.merge(
            source,
            predicate="target.id = source.id AND target.d = '2024-01-01'::date",
            source_alias="source",
            target_alias="target",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    write_deltalake(
        str(path), source, mode="overwrite", predicate="d = '2024-01-01' AND country = 'US'"
    )
    return path
