"""Findings grouped into incidents on tables real writers made: every finding in exactly one
incident, one incident per cause (a test per cause kind), ids stable and free of versions."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.history.summary import load_history
from audit.core.incidents.build import incident_entry, incidents_of
from audit.core.incidents.grouping import group_findings
from audit.core.model import Finding
from audit.core.vocab import IncidentCause as C
from tests.support import scenarios
from tests.support.hand_commits import changed_add, log_file, write_commit
from tests.support.incidents import assert_partition, audit_incidents, by_cause
from tests.support.revealing_tables import build_metadata_change_in_flight_twice
from tests.support.scenarios import rows
from tests.support.storm_tables import build_storm


def _causes(incidents) -> list[str]:
    return sorted(i.key.cause for i in incidents)


def test_a_stale_delete_under_write_serializable_is_one_incident(tmp_path):
    facts = scenarios.build_ws_reorder_matching(str(tmp_path))
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    incident = by_cause(incidents, C.STALE_WRITE_WRITE_SERIALIZABLE)
    assert [(f.kind, f.version) for f in incident.findings] == [
        ("never_existed_snapshot", facts["delete_version"]),
        ("write_serializable_reorder", facts["delete_version"]),
    ]
    assert (incident.key.operation, incident.key.scope) == ("DELETE", "id >= ?")
    assert incident.writer == {"engine": "delta-rs:py-1.6.6"}
    assert incident.severity == "critical" and incident.status == "open"
    assert (incident.first_version, incident.last_version) == (3, 3)


def test_a_stale_overwrite_delta_rs_does_not_check_is_unchecked(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    assert _causes(incidents) == [C.READ_VERSIONS_UNRECORDED, C.STALE_WRITE_UNCHECKED]
    stale = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    assert {f.kind for f in stale.findings} >= {"never_existed_snapshot"}
    assert (stale.key.operation, stale.key.scope) == ("WRITE (overwrite)", "whole table")


def test_a_delta_rs_stale_overwrite_is_unchecked_even_under_write_serializable(tmp_path):
    """As on the demo table: a stale overwrite raced a blind append under WriteSerializable.
    The reference rules call it a reorder, but delta-rs checks no overwrite without
    predicate at any level: Serializable would not have stopped it, a predicate does."""
    path = str(tmp_path)
    write_deltalake(path, rows(scenarios.DAY1, [1]), configuration=scenarios.WRITE_SERIALIZABLE)
    stale = DeltaTable(path)
    write_deltalake(
        path, rows(scenarios.DAY2, [2]), mode="append", commit_properties=scenarios.BLIND
    )
    write_deltalake(stale, rows(scenarios.DAY1, [3]), mode="overwrite")
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    stale_write = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    assert "write_serializable_reorder" in {f.kind for f in stale_write.findings}
    assert "delta-rs checks no concurrent commit" in stale_write.headline
    (prevent,) = stale_write.prevent
    assert 'predicate="1 = 1"' in prevent.code and "isolationLevel" not in prevent.code


def test_an_ignored_isolation_setting_heads_the_conflicts_it_let_through(tmp_path):
    path = str(tmp_path)
    write_deltalake(
        path, rows("p0", [1, 2, 3]), configuration={"delta.isolationLevel": "WriteSerializable"}
    )
    for k in range(3):  # delta-rs (reading the setting as Serializable) misses these
        stale = DeltaTable(path)
        write_deltalake(path, rows("p0", [100 + k]), mode="append")
        stale.delete(f"id = {k + 1}")
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    setting = by_cause(incidents, C.ISOLATION_SETTING_IGNORED)
    assert [f.kind for f in setting.findings] == [
        "isolation_setting_ignored",
        *["missed_conflict"] * 3,
    ]
    assert setting.key.scope == "delta.isolationLevel=WriteSerializable"
    assert [s.code.splitlines()[-1] for s in setting.prevent if s.engine == "deltalake"] == [
        "dt.alter.set_table_properties({'delta.isolationLevel': 'writeSerializable'})"
    ]


def test_contention_heads_the_retry_storm_on_its_scope(tmp_path):
    path = str(tmp_path)
    write_deltalake(path, rows("p0", list(range(10))), partition_by=["day"])
    for k in range(4):  # one writer deleting in p0 while another appends there
        stale = DeltaTable(path)
        write_deltalake(path, rows("p0", [100 + k]), mode="append")
        stale.delete(f"day = 'p0' AND id = {k}")
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    contention = by_cause(incidents, C.CONTENTION)
    assert sorted(f.kind for f in contention.findings) == ["conflict_hotspot", "retry_storm"]
    assert contention.key.operation == "DELETE / WRITE"
    unchecked = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    assert {f.kind for f in unchecked.findings} == {"missed_conflict"}
    assert unchecked.key.scope == "day = ? AND id = ?"  # one job, whatever id it deletes


def test_a_file_deleted_outside_delta_is_a_files_missing_incident(tmp_path):
    for n in range(3):
        write_deltalake(str(tmp_path), rows("p0", [n]), mode="append")
    (gone,) = DeltaTable(str(tmp_path)).file_uris()[1:2]
    os.remove(gone)
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    missing = by_cause(incidents, C.FILES_MISSING)
    assert [f.kind for f in missing.findings] == ["missing_data_file"]
    assert missing.key.scope == "deleted outside Delta"
    assert (missing.damage.rows_missing, missing.damage.exact) == (1, True)


def test_a_log_an_engine_got_wrong_is_a_faulty_log_writer(tmp_path):
    write_deltalake(str(tmp_path), rows("p0", [1]), partition_by=["day"])
    add = json.loads(log_file(tmp_path, 0).read_text().splitlines()[-1])["add"]
    write_commit(tmp_path, 1, changed_add(add), info={"engineInfo": "Broken-Engine/0.1"})
    findings, incidents = audit_incidents(tmp_path, scan=False)
    assert_partition(findings, incidents)
    faulty = by_cause(incidents, C.FAULTY_LOG_WRITER)
    assert [f.kind for f in faulty.findings] == ["duplicate_active_file"]
    assert faulty.key.writer == "engine=Broken-Engine/0.1"


def test_rows_sharing_a_declared_key_are_a_duplicate_keys_incident(tmp_path):
    write_deltalake(str(tmp_path), rows("p0", [1, 2]))
    write_deltalake(str(tmp_path), rows("p0", [2, 3]), mode="append")
    findings, incidents = audit_incidents(tmp_path, keys=("id",), scan=False)
    assert_partition(findings, incidents)
    duplicates = by_cause(incidents, C.DUPLICATE_KEYS)
    assert duplicates.key.scope == "id" and duplicates.damage.rows_extra == 1
    assert any("HAVING COUNT(*) > 1" in s.code for s in duplicates.inspect)


def test_commits_across_a_metadata_change_are_one_metadata_race(tmp_path):
    build_metadata_change_in_flight_twice(str(tmp_path))
    findings, incidents = audit_incidents(tmp_path, scan=False)
    assert_partition(findings, incidents)
    race = by_cause(incidents, C.METADATA_RACE)
    assert [f.kind for f in race.findings] == ["concurrent_metadata_change"]
    assert race.damage.rows_wrong_now is None and not race.damage.exact


def test_a_copied_table_written_on_is_a_commit_times_incident(tmp_path):
    source, table = tmp_path / "source", tmp_path / "copy"
    for n in range(3):
        write_deltalake(str(source), rows("p0", [n]), mode="append")
    shutil.copytree(source, table, copy_function=shutil.copy)
    moment = time.time() + 7200
    for version in range(3):
        os.utime(log_file(table, version), (moment, moment))
    write_deltalake(str(table), rows("p0", [9]), mode="append")
    findings, incidents = audit_incidents(table)
    assert_partition(findings, incidents)
    times = by_cause(incidents, C.COMMIT_TIMES)
    assert [f.kind for f in times.findings] == ["timestamps_out_of_order"]
    assert any("delta.enableInCommitTimestamps" in s.code for s in times.prevent)


def test_orphan_files_are_an_orphan_files_incident(tmp_path):
    write_deltalake(str(tmp_path), rows("p0", [1]))
    (tmp_path / "part-orphan.parquet").write_bytes(b"x" * 100)
    old = time.time() - 7 * 86400
    os.utime(tmp_path / "part-orphan.parquet", (old, old))
    findings, incidents = audit_incidents(tmp_path, orphan_finding_bytes=1, min_age_floor_ms=0)
    assert_partition(findings, incidents)
    orphans = by_cause(incidents, C.ORPHAN_FILES)
    assert [s.code for s in orphans.inspect if s.engine == "spark-sql"] == [
        f"VACUUM delta.`{tmp_path}` DRY RUN"
    ]


def test_findings_no_rule_claims_are_an_incident_of_their_own_kind(tmp_path):
    write_deltalake(str(tmp_path), rows("p0", [1]))
    history = load_history(str(tmp_path))
    gap = Finding("history_gap", "warning", 0, [0], True, "s", "e")
    health = Finding("health_small_files", "info", 0, [], True, "small files", "e")
    incidents = group_findings(history, [gap, health])
    assert [(i.key.cause, i.key.operation) for i in incidents] == [
        (C.HISTORY_LOST, ""),
        (C.OTHER, "health_small_files"),
    ]


def test_the_id_is_the_cause_not_the_versions(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path / "a"))
    _, first = audit_incidents(tmp_path / "a")
    write_deltalake(str(tmp_path / "a"), rows(scenarios.DAY2, [7]), mode="append")
    _, again = audit_incidents(tmp_path / "a")
    assert [i.id for i in first] == [i.id for i in again]
    # The same cause in another table is another incident (the table's own id is in the key).
    scenarios.build_stale_full_overwrite(str(tmp_path / "b"))
    _, other = audit_incidents(tmp_path / "b")
    assert {i.key.cause for i in other} == {i.key.cause for i in first}
    assert not {i.id for i in other} & {i.id for i in first}


def test_the_entry_has_the_contract_fields(tmp_path):
    scenarios.build_stale_unconditional_delete(str(tmp_path))
    _, incidents = audit_incidents(tmp_path)
    entry = incident_entry(by_cause(incidents, C.STALE_WRITE_UNCHECKED))
    assert {"id", "cause", "headline", "severity", "status", "first_version", "last_version",
            "findings", "damage", "repair", "inspect", "prevent"} <= entry.keys()  # fmt: skip
    assert entry["findings"] == [
        {"kind": "missed_conflict", "version": 3},
        {"kind": "never_existed_snapshot", "version": 3},
    ]
    assert {"rows_wrong_now", "files", "partitions", "exact"} <= entry["damage"].keys()
    for statement in entry["repair"] + entry["inspect"] + entry["prevent"]:
        assert statement.keys() == {"engine", "code", "does", "does_not"}
        assert statement["engine"] in ("deltalake", "spark-sql") and statement["does_not"]
    json.dumps(entry)


@pytest.mark.parametrize(
    "build",
    [
        scenarios.build_ws_reorder_matching,
        scenarios.build_stale_unconditional_delete,
        scenarios.build_stale_full_overwrite,
        scenarios.build_stale_update,
        scenarios.build_stale_merge,
        scenarios.build_stale_overwrite_after_optimize,
        scenarios.build_stale_delete_after_optimize,
        scenarios.build_stale_predicated_delete_after_optimize,
        scenarios.build_sequential,
    ],
)
def test_every_finding_of_a_scenario_table_is_in_exactly_one_incident(tmp_path, build):
    build(str(tmp_path))
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    assert bool(findings) == bool(incidents)


@pytest.mark.parametrize("seed", range(8))
def test_every_finding_of_a_random_concurrent_workload_is_in_exactly_one_incident(tmp_path, seed):
    build_storm(str(tmp_path), seed)
    findings, incidents = audit_incidents(tmp_path)
    assert_partition(findings, incidents)
    assert "timestamps_out_of_order" not in {f.kind for f in findings}
    history = load_history(str(tmp_path))
    again = incidents_of(history, list(reversed(findings)), read_roots=[str(tmp_path)])
    assert [(i.id, len(i.findings)) for i in again] == [(i.id, len(i.findings)) for i in incidents]


def test_every_finding_of_the_demo_tables_is_in_exactly_one_incident(tmp_path):
    from audit.demo import create_demo_tables

    for path in create_demo_tables(tmp_path, rounds=8):
        findings, incidents = audit_incidents(path)
        assert_partition(findings, incidents)
        assert "timestamps_out_of_order" not in {f.kind for f in findings}
        stale = [i for i in incidents if i.key.cause.startswith("stale_write")]
        # The demo's stale overwriters record nothing but the engine: one cause per operation
        # and scope, however many times it ran.
        keys = [(i.key.operation, i.key.scope) for i in stale]
        assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    "raw",
    [
        "day = '2024-01-01' AND id < 5",
        "(date#123 = 2024-01-01) AND (id#121L > -42)",
        "t.id = s.id AND t.day IN ('a', 'b''c', 'd') OR t.x BETWEEN 1.5 AND 2e3",
        "ts >= TIMESTAMP '2024-01-01 00:00:00' AND ts < CAST('2024-02-01' AS DATE)",
        "NOT (a IS NULL) AND b LIKE 'x%' AND c <> TRUE AND d = NULL",
        "COALESCE(x, 0) + 1 > ABS(-3) AND y = INTERVAL '1' DAY",
    ],
)
def test_it_shapes_a_predicate_as_its_copy_with_placeholders_prints(raw):
    # predicate_shape prints without copying the tree; a cause key must not change for it.
    from sqlglot import exp

    from audit.core.incidents.causes import MAX_SCOPE_CHARS, predicate_shape
    from audit.core.predicates import parse_predicate
    from audit.core.predicates.parsing import expression_of

    predicate = parse_predicate(raw)
    expression = expression_of(predicate)
    assert expression is not None
    placeholders = expression.copy().transform(
        lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node
    )
    assert predicate_shape(predicate.sql, predicate.raw) == placeholders.sql()[:MAX_SCOPE_CHARS]


@pytest.mark.parametrize(
    "raw",
    [
        "date = '2024-01-02' AND id > 168824",
        "t.date = '2024-01-02' AND t.id = s.id",
        "target.day = 3 AND target.k > 7",
        "s.id = 5 AND t.id = s.id",
        "t.id = s.id",
        "t1.x = 1 AND t1.y = 2",
        "(date#12 = 2024-01-01) AND (id#11L > 42)",
    ],
)
def test_a_merges_condition_from_its_template_is_what_the_witness_cuts(raw):
    # damage answers a MERGE's target part from its literal template; it must be the cut's.
    from types import SimpleNamespace

    from audit.core.data.witness import effective_predicate
    from audit.core.incidents import damage
    from audit.core.predicates import parse_predicate

    txn = SimpleNamespace(
        operation="MERGE", predicate=parse_predicate(raw), operation_parameters={}
    )
    damage._template_answer.cache_clear()
    assert damage._condition(txn) == effective_predicate(txn)
