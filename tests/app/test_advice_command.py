"""`manage.py table_advice` prints the advice as JSON (the advice itself, on tables written by
real deltalake writers: tests/core/test_advice.py)."""

from __future__ import annotations

import json

from tests.support.advice_tables import build_concurrent_date_rewrites
from tests.support.cli import manage


def test_the_table_advice_command_prints_json(tmp_path):
    path = str(tmp_path / "t")
    build_concurrent_date_rewrites(path, rounds=1)
    proc = manage("table_advice", path, "--json")
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert advice["partitioning"]["recommended_columns"] == ["date"]
    assert len(advice["isolation"]["matrix"]["cells"]) == 6
