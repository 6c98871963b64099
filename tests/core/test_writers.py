"""Contention telemetry per writer and retry_storm, on tables of real delta-rs writers (the
endpoint: tests/app/test_writers_api.py)."""

from __future__ import annotations

import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.writers import distance_bucket
from tests.support import scenarios
from tests.support.tables import rows
from tests.support.writer_tables import build_two_writers, telemetry


def test_it_tells_writers_apart_and_measures_how_far_behind_they_read(tmp_path):
    build_two_writers(tmp_path)
    t = telemetry(tmp_path)
    by_name = {w["writer"]: w for w in t["writers"]}
    alice = by_name["engine=delta-rs:py-1.6.6 user=alice"]
    bob = by_name["engine=delta-rs:py-1.6.6 user=bob"]
    assert (alice["commits"], bob["commits"]) == (3, 1)
    assert bob["operations"] == {"DELETE": 1}
    assert bob["read_version_distance"] == {"1": 1}  # v2 landed between its read and commit
    assert bob["max_read_version_distance"] == 1
    assert alice["read_version_distance"] == {"unknown": 3}  # delta-rs appends record none
    assert t["pairs"] == [
        {
            "earlier": "engine=delta-rs:py-1.6.6 user=alice",
            "later": "engine=delta-rs:py-1.6.6 user=bob",
            "concurrent_commits": 1,
            "conflicting_commits": 1,  # Serializable: ConcurrentAppend
        }
    ]


def test_it_lists_idempotent_txn_versions_that_repeat_or_go_back(tmp_path):
    write_deltalake(str(tmp_path), rows(1))
    for txn_version in (1, 2, 2, 1):
        props = CommitProperties(app_transactions=[Transaction("stream-1", txn_version)])
        write_deltalake(str(tmp_path), rows(1), mode="append", commit_properties=props)
    anomalies = telemetry(tmp_path)["txn_anomalies"]
    assert [(a["kind"], a["version"], a["previous_version"]) for a in anomalies] == [
        ("repeat", 3, 2),
        ("backwards", 4, 3),
    ]
    assert all(a["app_id"] == "stream-1" for a in anomalies)


def test_distance_buckets():
    assert [distance_bucket(d) for d in (0, 1, 3, 7, 50, 100)] == [
        "0",
        "1",
        "2-4",
        "5-9",
        "10-99",
        "100+",
    ]


@pytest.mark.slow
def test_a_writer_retrying_conflicts_is_a_retry_storm(tmp_path):
    facts = scenarios.build_thread_storm(str(tmp_path), threads=3, rounds=4)
    assert facts["retries"] > 0
    result = audit_history(load_history(str(tmp_path)), check_data=False)
    storms = [f for f in result.findings if f.kind == "retry_storm"]
    assert storms, "threads deleting in a loop while racing each other"
    for f in storms:
        assert f.severity == "warning" and f.witness["operation"] == "DELETE"
        assert len(f.witness["versions"]) >= 3 and f.witness["seconds"] <= 60


def test_sequential_writers_are_no_retry_storm(tmp_path):
    write_deltalake(str(tmp_path), rows(6))
    for i in range(4):  # one writer deleting repeatedly, but nobody races it
        DeltaTable(str(tmp_path)).delete(f"id = {i}")
    result = audit_history(load_history(str(tmp_path)), check_data=False)
    assert not [f for f in result.findings if f.kind == "retry_storm"]
