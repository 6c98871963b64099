"""Hand-built commit files on top of a real delta-rs table: logs that break integrity rules
the way a faulty engine would (engines that break the log are rare on demand)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from deltalake import write_deltalake

from tests.support.tables import rows


def base_actions(path: Path) -> list[dict[str, Any]]:
    """A partitioned table (v0, v1: appends of 3 and 2 rows); returns the adds so far."""
    write_deltalake(str(path), rows(3), partition_by=["day"])
    write_deltalake(str(path), rows(2, start=10), mode="append")
    adds = []
    for version in (0, 1):
        for line in log_file(path, version).read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds.append(action["add"])
    return adds


def log_file(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.json"


def write_commit(
    path: Path, version: int, *actions: dict[str, Any], info: dict | None = None
) -> None:
    info = {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE", **(info or {})}
    log_file(path, version).write_text(commit_text(*actions, info=info))


def put_commit_if_absent(path: Path, version: int, text: str) -> bool:
    """Write a commit file only if no writer took its version (a hard link fails on an
    existing name, as a log store's put-if-absent does); False when it was taken."""
    target = log_file(path, version)
    staged = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    staged.write_text(text)
    try:
        os.link(staged, target)
    except FileExistsError:
        return False
    finally:
        staged.unlink()
    return True


def commit_text(*actions: dict[str, Any], info: dict[str, Any]) -> str:
    """A commit file's text: commitInfo first, then the actions, one JSON object a line."""
    lines = [{"commitInfo": info}, *actions]
    return "\n".join(json.dumps(a) for a in lines) + "\n"


def changed_add(add: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"add": {**add, **changes}}
