"""The `manage.py audit` contract of SPEC §4, run as a user would: a subprocess."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.support.cli import run_audit
from tests.support.paths import DELTA_TABLES

TABLES = DELTA_TABLES

TABLE_KEYS = {
    "uri",
    "version",
    "first_available_version",
    "partition_columns",
    "isolation_level",
    "num_files",
    "properties",
}
COMMIT_KEYS = {
    "version",
    "timestamp",
    "operation",
    "read_version",
    "isolation_level",
    "blind_append",
    "concurrent_versions",
    "files_added",
    "files_removed",
}
FINDING_KEYS = {
    "kind",
    "severity",
    "version",
    "related_versions",
    "confirmed",
    "summary",
    "witness",
}


def test_it_prints_the_contract_fields_for_a_spark_table():
    table = TABLES / "golden" / "basic-with-inserts-updates"
    proc = run_audit(str(table), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["table"]) >= TABLE_KEYS
    assert report["table"]["version"] == DeltaTable(str(table)).version()
    assert "live_files" not in report
    versions = [c["version"] for c in report["commits"]]
    assert versions == list(range(len(versions)))
    for commit in report["commits"]:
        assert set(commit) >= COMMIT_KEYS
        assert isinstance(commit["timestamp"], int) and commit["timestamp"] > 1_500_000_000_000
    update = report["commits"][1]
    assert update["operation"] == "UPDATE"
    assert update["read_version"] == 0
    assert update["isolation_level"] == "Serializable"
    assert update["blind_append"] is False
    assert update["files_added"] == 1 and update["files_removed"] == 1
    for finding in report["findings"]:
        assert set(finding) >= FINDING_KEYS


def test_it_lists_live_files_url_decoded_with_files(tmp_path):
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1, 2], "p": ["x y", "a/b"]}), partition_by=["p"])
    proc = run_audit(str(table), "--json", "--files")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # The add action's path, decoded once as the protocol says, is the file's real relative path
    # (deltalake's file_uris() decodes a second time, so it is not the reference here).
    on_disk = sorted(str(p.relative_to(table)) for p in table.rglob("*.parquet"))
    assert sorted(report["live_files"]) == on_disk
    assert all((table / path).is_file() for path in report["live_files"])
    assert any("%20" in path for path in report["live_files"])  # the log holds %2520


def test_it_derives_blind_append_for_delta_rs_appends(tmp_path):
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    write_deltalake(str(table), pa.table({"a": [2]}), mode="append")
    DeltaTable(str(table)).delete("a = 1")
    report = json.loads(run_audit(str(table), "--json").stdout)
    append, delete = report["commits"][1], report["commits"][2]
    assert append["blind_append"] is True and append["facts"]["blind_append"] == "derived"
    assert append["read_version"] is None
    assert append["engine"] == "delta-rs"
    assert delete["blind_append"] is False
    assert delete["read_version"] == 1 and delete["facts"]["read_version"] == "recorded"


def test_it_prints_readable_text_without_json():
    proc = run_audit(str(TABLES / "golden" / "basic-with-inserts-updates"))
    assert proc.returncode == 0, proc.stderr
    assert "UPDATE" in proc.stdout and "Findings" in proc.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(proc.stdout)


@pytest.mark.parametrize(
    "make_path, reason",
    [
        (lambda tmp: tmp / "does-not-exist", "not a Delta table"),
        (lambda tmp: tmp, "not a Delta table"),
    ],
)
def test_it_exits_2_with_one_line_for_unreadable_tables(tmp_path, make_path, reason):
    proc = run_audit(str(make_path(tmp_path)), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_it_exits_2_on_a_corrupt_commit(tmp_path):
    table = tmp_path / "t"
    shutil.copytree(TABLES / "golden" / "basic-with-inserts-updates", table)
    commit = table / "_delta_log" / "00000000000000000001.json"
    commit.write_bytes(commit.read_bytes()[:150])
    proc = run_audit(str(table), "--json")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "1" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_fail_on_gates_only_at_or_above_the_severity(tmp_path):
    from tests.support.scenarios import build_stale_unconditional_delete

    table = tmp_path / "t"
    build_stale_unconditional_delete(str(table))
    report = json.loads(run_audit(str(table), "--json").stdout)
    severities = {f["severity"] for f in report["findings"]}
    assert "critical" in severities
    assert run_audit(str(table), "--json", "--fail-on", "critical").returncode == 1
    assert run_audit(str(table), "--json", "--fail-on", "warning").returncode == 1

    clean = tmp_path / "clean"
    write_deltalake(str(clean), pa.table({"a": [1]}))
    write_deltalake(str(clean), pa.table({"a": [2]}), mode="append")
    assert run_audit(str(clean), "--json", "--fail-on", "warning").returncode == 0
