"""`manage.py audit --json` as a user runs it: provenance on every commit, the readable range,
and the data-folder findings from one listing (none with --no-data)."""

from __future__ import annotations

import json

from tests.core.test_timetravel import _vacuum_under_a_stale_writer
from tests.support.cli import run_audit


def test_it_reports_provenance_time_travel_and_missing_files(tmp_path):
    _vacuum_under_a_stale_writer(tmp_path)
    proc = run_audit(str(tmp_path), "--json", "--fail-on", "critical")
    assert proc.returncode == 1, proc.stderr  # vacuum_broke_snapshot is critical
    report = json.loads(proc.stdout)
    assert all(c["provenance"]["engine"].startswith("delta-rs:") for c in report["commits"])
    kinds = {(f["kind"], f["version"]) for f in report["findings"]}
    assert {("missing_data_file", 0), ("vacuum_broke_snapshot", 5)} <= kinds
    travel = report["health"]["time_travel"]
    assert (travel["earliest_readable_version"], travel["broken_versions"]) == (2, [0, 1])


def test_it_lists_no_data_folder_with_no_data(tmp_path):
    _vacuum_under_a_stale_writer(tmp_path)
    proc = run_audit(str(tmp_path), "--json", "--no-data")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert not {"missing_data_file", "vacuum_broke_snapshot"} & {
        f["kind"] for f in report["findings"]
    }
    travel = report["health"]["time_travel"]
    assert not travel["judged"] and travel["earliest_readable_version"] == 0
    assert all("provenance" in c for c in report["commits"])
