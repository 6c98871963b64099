"""Log-integrity findings (audit/core/integrity.py).

Positive cases are real delta-rs tables followed by one hand-built commit file each (engines
that break the log are rare on demand); the zero-false-positive test runs every golden table,
every demo table and every scenario table of the suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deltalake import write_deltalake

from tests.support.tables import rows


def _base(path: Path) -> list[dict[str, Any]]:
    """A partitioned table (v0, v1: appends of 3 and 2 rows); returns the adds so far."""
    write_deltalake(str(path), rows(3), partition_by=["day"])
    write_deltalake(str(path), rows(2, start=10), mode="append")
    adds = []
    for version in (0, 1):
        for line in _log(path, version).read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds.append(action["add"])
    return adds


def _log(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.json"


def _commit(path: Path, version: int, *actions: dict[str, Any], info: dict | None = None) -> None:
    info = {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE", **(info or {})}
    lines = [{"commitInfo": info}, *actions]
    _log(path, version).write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def _add(add: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"add": {**add, **changes}}


def test_audit_json_reports_integrity_findings_and_fails_the_gate(tmp_path):
    """`manage.py audit --json --fail-on critical`, as a CI job runs it."""
    from tests.app.test_cli_audit import run_audit

    adds = _base(tmp_path)
    _commit(tmp_path, 2, _add(adds[0]))
    done = run_audit(str(tmp_path), "--json", "--fail-on", "critical")
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    (dup,) = [f for f in findings if f["kind"] == "duplicate_active_file"]
    assert (dup["version"], dup["severity"]) == (2, "critical")
    assert dup["witness"]["paths"] == [adds[0]["path"]]
