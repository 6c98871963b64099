"""Commit times kept apart (timestamps.py): a table copied with new modification times and
written on since, in-commit timestamps enabled part way, in-commit times going backwards."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from deltalake import write_deltalake

from audit.core.health.scan import scan_data
from audit.core.health.timestamps import timestamps_section
from audit.core.history.summary import load_history
from audit.core.storage.stores import open_store
from audit.core.vocab import FindingKind
from tests.support.hand_commits import base_actions, log_file, write_commit
from tests.support.tables import rows

HOURS = 3_600_000


def _scan(path: Path):
    history = load_history(str(path))
    return scan_data(open_store(str(path)), history, str(path), now_ms=int(time.time() * 1000))


def _out_of_order(found) -> list:
    return [f for f in found.findings if f.kind == FindingKind.TIMESTAMPS_OUT_OF_ORDER]


def _copied_later(path: Path, versions: range, hours: float) -> None:
    """The commit files get the modification time a copy made `hours` later would give."""
    moment = time.time() + hours * 3600
    for version in versions:
        os.utime(log_file(path, version), (moment, moment))


def test_it_finds_a_copied_table_written_on_since(tmp_path):
    source, table = tmp_path / "source", tmp_path / "copy"
    for n in range(3):
        write_deltalake(str(source), rows(2, start=10 * n), mode="append")
    shutil.copytree(source, table, copy_function=shutil.copy)  # new modification times
    _copied_later(table, range(3), hours=2)
    write_deltalake(str(table), rows(2, start=30), mode="append")  # v3, written natively
    found = _scan(table)
    (finding,) = _out_of_order(found)
    assert (finding.severity, finding.version) == ("warning", 0)
    assert finding.witness["skewed"] == [0, 1, 2]
    assert finding.witness["max_skew_ms"] > HOURS
    says = {i["history_says"] for i in finding.witness["intervals"]}
    assert says == {0, 1, 2, 3}
    assert {i["resolves_to"] for i in finding.witness["intervals"]} == {None}
    assert "modification times" in finding.explanation


def test_it_reports_a_whole_copy_in_health_not_as_a_finding(tmp_path):
    for n in range(3):
        write_deltalake(str(tmp_path), rows(2, start=10 * n), mode="append")
    _copied_later(tmp_path, range(3), hours=2)
    found = _scan(tmp_path)
    assert not _out_of_order(found)
    section = timestamps_section(found.timestamps)
    assert section["file_times_skewed"] == 3 and section["file_times"].startswith("all far")


def test_it_finds_no_fault_in_a_table_written_in_place(tmp_path):
    for n in range(3):
        write_deltalake(str(tmp_path), rows(2, start=10 * n), mode="append")
    found = _scan(tmp_path)
    assert not _out_of_order(found)
    assert timestamps_section(found.timestamps)["file_times"] == "agree"


def _enable_in_commit_timestamps(path: Path, version: int, ict: int) -> None:
    """Spark's way: a metaData with the enablement version and time, ICT in commitInfo."""
    configuration = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": str(version),
        "delta.inCommitTimestampEnablementTimestamp": str(ict),
    }
    metadata = {
        "id": "tt",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": (path / "schema.txt").read_text(),
        "partitionColumns": ["day"],
        "configuration": configuration,
        "createdTime": ict,
    }
    write_commit(
        path,
        version,
        {"metaData": metadata},
        info={"inCommitTimestamp": ict, "timestamp": ict, "operation": "SET TBLPROPERTIES"},
    )


def _schema(path: Path) -> None:
    import json

    for line in log_file(path, 0).read_text().splitlines():
        action = json.loads(line)
        if "metaData" in action:
            (path / "schema.txt").write_text(action["metaData"]["schemaString"])


def test_it_uses_in_commit_timestamps_from_their_enablement_and_finds_them_go_back(tmp_path):
    base_actions(tmp_path)  # v0, v1 by delta-rs
    _schema(tmp_path)
    now = int(time.time() * 1000)
    _enable_in_commit_timestamps(tmp_path, 2, now + 10)
    write_commit(tmp_path, 3, info={"inCommitTimestamp": now + 20, "timestamp": now + 20})
    (tmp_path / "schema.txt").unlink()
    _copied_later(tmp_path, range(4), hours=3)
    found = _scan(tmp_path)
    (finding,) = _out_of_order(found)
    assert finding.witness["in_commit_timestamps_from"] == 2
    assert finding.witness["skewed"] == [0, 1] and finding.witness["backwards"] == []
    # Only times before the enablement resolve elsewhere: the ICT versions are looked up right.
    assert {i["history_says"] for i in finding.witness["intervals"]} == {0, 1}
    assert all(i["to"] <= now + 10 for i in finding.witness["intervals"])

    write_commit(tmp_path, 4, info={"inCommitTimestamp": now + 15, "timestamp": now + 15})
    _copied_later(tmp_path, range(4, 5), hours=3)
    (finding,) = _out_of_order(_scan(tmp_path))
    assert finding.witness["backwards"] == [4]
    resolved = {(i["history_says"], i["resolves_to"]) for i in finding.witness["intervals"]}
    assert (4, 2) in resolved  # between its time and v3's, the lookup still answers v2


def test_it_reads_only_the_newest_file_times_of_a_long_local_log(tmp_path, monkeypatch):
    from audit.core.health import scan as datascan

    for n in range(4):
        write_deltalake(str(tmp_path), rows(2, start=10 * n), mode="append")
    _copied_later(tmp_path, range(2), hours=2)  # only the two oldest look copied
    monkeypatch.setattr(datascan, "MAX_TIMED_COMMITS", 2)
    found = _scan(tmp_path)
    assert timestamps_section(found.timestamps)["versions_with_file_time"] == 2
    assert not _out_of_order(found)  # the newest two agree; the older ones were not read


def _provenances(path: Path) -> dict[int, dict]:
    from audit.core.report import build_report

    report = build_report(load_history(str(path)), None)
    return {c["version"]: c for c in report["commits"]}


TIME_KEYS = {"in_commit_timestamp", "commit_info_timestamp", "file_modification_time"}


def test_it_keeps_the_three_commit_times_apart_where_the_table_has_in_commit_timestamps(
    tmp_path,
):
    base_actions(tmp_path)  # v0, v1 by delta-rs: no in-commit timestamp
    _schema(tmp_path)
    now = int(time.time() * 1000)
    _enable_in_commit_timestamps(tmp_path, 2, now + 10)
    # The in-commit time is what counts; commitInfo.timestamp may say another time.
    write_commit(tmp_path, 3, info={"inCommitTimestamp": now + 20, "timestamp": now - 5000})
    (tmp_path / "schema.txt").unlink()
    _copied_later(tmp_path, range(4), hours=3)
    moved = int(log_file(tmp_path, 3).stat().st_mtime * 1000)
    commits = _provenances(tmp_path)
    for version in (0, 1):
        assert not TIME_KEYS & set(commits[version]["provenance"])
    three = commits[3]["provenance"]
    assert three["in_commit_timestamp"] == now + 20 == commits[3]["timestamp"]
    assert three["commit_info_timestamp"] == now - 5000
    assert three["file_modification_time"] == moved
    assert commits[3]["facts"]["timestamp"] == "recorded"
    assert commits[2]["provenance"]["in_commit_timestamp"] == now + 10


def test_it_adds_no_commit_time_to_the_provenance_of_a_table_without_them(tmp_path):
    for n in range(2):
        write_deltalake(str(tmp_path), rows(2, start=10 * n), mode="append")
    _copied_later(tmp_path, range(2), hours=2)  # file times far from the recorded ones
    commits = _provenances(tmp_path)
    assert all(not TIME_KEYS & set(c["provenance"]) for c in commits.values())


def _recorded(path: Path, version: int) -> int:
    import json

    return json.loads(log_file(path, version).read_text().splitlines()[0])["commitInfo"][
        "timestamp"
    ]


def test_it_leaves_a_few_ms_between_concurrent_writers_to_health(tmp_path):
    """A writer records its time a few ms before the previous commit's (concurrent writers do):
    the lookup misresolves a few ms only, a health fact, not a finding, unless the declared
    interval is shorter still."""
    base_actions(tmp_path)  # v0, v1 by delta-rs, now
    write_commit(tmp_path, 2, info={"timestamp": _recorded(tmp_path, 1) - 3})
    history = load_history(str(tmp_path))
    store, now = open_store(str(tmp_path)), int(time.time() * 1000)
    found = scan_data(store, history, str(tmp_path), now_ms=now)
    assert not _out_of_order(found) and found.timestamps.backwards == [2]
    short = timestamps_section(found.timestamps)["short_misresolved"]
    assert short["intervals"] >= 1 and 0 < short["longest_ms"] < 1000 and short["below_ms"] == 1000
    strict = scan_data(store, history, str(tmp_path), now_ms=now, min_interval_ms=1)
    (finding,) = _out_of_order(strict)
    assert finding.witness["backwards"] == [2]
