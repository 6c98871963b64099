"""A lake to discover: Delta tables at depths 1 to 5 among decoys (plain folders, an empty
`_delta_log`, one holding only a .crc, Spark's `_temporary`, a "table" hidden inside another
table's partition folder, which a walk must never enter)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake


def table_templates(base: Path) -> dict[int, Path]:
    """Tables with latest versions 0, 1 and 2 (partitioned: data lives in day=... folders)."""
    out = {}
    for latest in (0, 1, 2):
        path = base / f"template-{latest}"
        for v in range(latest + 1):
            data = pa.table({"day": ["2024-01-01"], "id": pa.array([v], pa.int64())})
            write_deltalake(str(path), data, mode="append", partition_by=["day"])
        out[latest] = path
    return out


def lake_of(tmp_path: Path, n: int = 200) -> tuple[Path, dict[str, int]]:
    templates = table_templates(tmp_path / "templates")
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
