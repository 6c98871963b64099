"""Helpers for the log-reader tests: the copied test tables and tables written with deltalake."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from audit.core.log import apply_commit, empty_state, iter_commits, list_log
from audit.core.model import TableState
from tests.support.paths import DELTA_TABLES

TABLES_ROOT = DELTA_TABLES


def all_table_dirs() -> list[tuple[str, Path]]:
    """(id like 'golden/checkpoint', path) of every directory holding a `_delta_log`."""
    found = []
    for kind in ("golden", "spark"):
        for dirpath, dirnames, _ in os.walk(TABLES_ROOT / kind):
            if "_delta_log" in dirnames:
                path = Path(dirpath)
                found.append((path.relative_to(TABLES_ROOT).as_posix(), path))
                dirnames.remove("_delta_log")
    return sorted(found)


def table(name: str) -> Path:
    return TABLES_ROOT / name


def copy_table(name: str, tmp_path: Path) -> Path:
    """A writable copy of a test table (tests never modify the originals)."""
    target = tmp_path / name.replace("/", "__")
    shutil.copytree(TABLES_ROOT / name, target)
    return target


def commit_file(table_path: Path, version: int) -> Path:
    return table_path / "_delta_log" / f"{version:020d}.json"


def absolute_live_paths(table_path: Path, state: TableState) -> set[str]:
    """Our live paths as deltalake's `file_uris()` spells them (absolute, decoded)."""
    root = os.path.abspath(table_path)
    return {p if p.startswith("/") or "://" in p else f"{root}/{p}" for p in state.files}


def replay_from_scratch(table_path: Path | str, version: int | None = None) -> TableState:
    """Replay every commit from the first one, ignoring checkpoints (a reference result)."""
    listing = list_log(str(table_path))
    state = empty_state()
    for commit in iter_commits(str(table_path), listing, None, version):
        apply_commit(state, commit)
    return state


def batch(ids: list[int], day: str = "2024-01-01") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "date": pa.array([day] * len(ids))})


def write_history(path: Path, commits: int, partitioned: bool = True) -> DeltaTable:
    """A deltalake table with `commits` versions: appends, with a delete every fourth."""
    for i in range(commits):
        if i and i % 4 == 0:
            DeltaTable(path).delete(f"id = {i - 1}")
        else:
            write_deltalake(
                path,
                batch([i, i + 1000], day=f"2024-01-{1 + i % 3:02d}"),
                mode="append",
                partition_by=["date"] if partitioned else None,
            )
    return DeltaTable(path)
