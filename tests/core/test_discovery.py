"""`manage.py discover`: every Delta table under a root, and nothing else.

A local root with 200 tables at depths 1 to 5 among decoys (plain folders, an empty
`_delta_log`, one holding only a .crc, Spark's `_temporary`, a "table" hidden inside another
table's partition folder, which a walk must never enter), and a smaller set on the S3 protocol
server. `--register` adds the new ones; a table whose log vanished is marked gone, keeping its
history, and comes back when its log does; a configured root is discovered by the beat.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from audit.core.discovery import discover_tables, latest_log_version


def _templates(base: Path) -> dict[int, Path]:
    """Tables with latest versions 0, 1 and 2 (partitioned: data lives in day=... folders)."""
    out = {}
    for latest in (0, 1, 2):
        path = base / f"template-{latest}"
        for v in range(latest + 1):
            data = pa.table({"day": ["2024-01-01"], "id": pa.array([v], pa.int64())})
            write_deltalake(str(path), data, mode="append", partition_by=["day"])
        out[latest] = path
    return out


def _lake(tmp_path: Path, n: int = 200) -> tuple[Path, dict[str, int]]:
    templates = _templates(tmp_path / "templates")
    root = tmp_path / "lake"
    expected: dict[str, int] = {}
    for i in range(n):
        depth = 1 + i % 5
        parts = [f"team{i % 7}"] + [f"level{d}" for d in range(1, depth)] + [f"t{i:03d}"]
        path = root.joinpath(*parts[-depth:])
        latest = i % 3
        shutil.copytree(templates[latest], path)
        expected[str(path)] = latest
    # Decoys: none of these is a table.
    (root / "plain" / "folder" / "deep").mkdir(parents=True)
    (root / "plain" / "data.parquet").write_bytes(b"PAR1")
    (root / "empty-log" / "_delta_log").mkdir(parents=True)
    crc_only = root / "crc-only" / "_delta_log"
    crc_only.mkdir(parents=True)
    (crc_only / "00000000000000000000.crc").write_text("{}")
    shutil.copytree(templates[0], root / "_temporary" / "attempt" / "t")
    inside = next(p for p in expected if p.endswith("t000"))
    shutil.copytree(templates[1], Path(inside) / "day=2024-01-01" / "nested")
    return root, expected


def test_latest_version_comes_from_commits_and_checkpoints():
    names = [
        "00000000000000000003.json",
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000007.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000012.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        "00000000000000000099.crc",
        "_last_checkpoint",
    ]
    assert latest_log_version(names) == 12
    assert latest_log_version(["00000000000000000001.crc", "x.json"]) is None


def test_discover_finds_all_200_local_tables_and_nothing_else(tmp_path):
    root, expected = _lake(tmp_path)
    found = discover_tables(str(root))
    assert {t.uri: t.latest_version for t in found.tables} == expected
    assert not found.errors and not found.truncated
    assert {t.depth for t in found.tables} == {1, 2, 3, 4, 5}

    shallow = discover_tables(str(root), max_depth=2)
    assert {t.uri for t in shallow.tables} == {u for u in expected if _depth(root, u) <= 2}


def _depth(root: Path, uri: str) -> int:
    return len(Path(uri).relative_to(root).parts)
