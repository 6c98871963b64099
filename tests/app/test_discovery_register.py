"""`manage.py discover`: every Delta table under a root, and nothing else.

A local root with 200 tables at depths 1 to 5 among decoys (plain folders, an empty
`_delta_log`, one holding only a .crc, Spark's `_temporary`, a "table" hidden inside another
table's partition folder, which a walk must never enter), and a smaller set on the S3 protocol
server. `--register` adds the new ones; a table whose log vanished is marked gone, keeping its
history, and comes back when its log does; a configured root is discovered by the beat.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from audit import ingest
from audit.discovery import discover
from audit.models import Commit, Table
from tests.support.paths import ROOT
from tests.support.workers import database_url


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


@pytest.mark.django_db(transaction=True)
def test_the_cli_lists_tables_as_json_and_registers_the_new_ones(tmp_path, settings):
    root, expected = _lake(tmp_path, n=12)
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    known = sorted(expected)[0]
    ingest.register_table(known)
    env = {**os.environ, "AUDIT_ALLOWED_ROOTS": str(tmp_path), "DATABASE_URL": database_url()}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "discover", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    run = cli(str(root), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert {t["uri"]: t["latest_version"] for t in data["tables"]} == expected
    assert {t["uri"] for t in data["tables"] if t["registered"]} == {known}
    assert Table.objects.count() == 1, "listing registers nothing"
    registered = cli(str(root), "--register")
    assert registered.returncode == 0, registered.stderr
    assert registered.stdout.count("\tadded") == 11
    assert "12 tables under" in registered.stdout
    assert Table.objects.count() == 12
    missing = cli(str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


@pytest.mark.django_db
def test_register_adds_new_tables_and_marks_vanished_ones_gone(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    root, expected = _lake(tmp_path, n=15)
    first = discover(str(root), register=True)
    assert sorted(first.added) == sorted(expected)
    assert Table.objects.count() == 15
    victim = Table.objects.get(uri=sorted(expected)[3])
    while ingest.tail_once(victim.id).more:
        pass
    stored = Commit.objects.filter(table=victim).count()
    assert stored >= 1

    again = discover(str(root), register=True)
    assert again.added == [] and len(again.registered) == 15

    moved = tmp_path / "moved-log"
    shutil.move(Path(victim.uri) / "_delta_log", moved)
    gone = discover(str(root), register=True)
    assert gone.gone == [victim.uri]
    victim.refresh_from_db()
    assert victim.status == Table.Status.GONE
    assert Commit.objects.filter(table=victim).count() == stored, "history kept"
    assert victim.id not in ingest.tables_due()

    shutil.move(moved, Path(victim.uri) / "_delta_log")
    back = discover(str(root), register=True)
    assert back.revived == [victim.uri]
    victim.refresh_from_db()
    assert victim.status == Table.Status.INGESTING
