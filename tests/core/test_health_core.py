"""Health, change history and diff equal what deltalake itself reports."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from audit.core.errors import DeltaAuditError
from audit.core.health.changes import changes_from_history, schema_columns
from audit.core.health.compute import (
    Activity,
    activity_from,
    compute_health,
    health_at,
    parse_interval_ms,
    quiet_window,
)
from audit.core.health.diff import diff_versions
from audit.core.health.file_totals import size_histogram
from audit.core.history.summary import load_history
from audit.core.log import open_log
from tests.support.health_tables import (
    HOSTILE_COLUMN,
    V_LAST,
    V_OPTIMIZE,
    V_PROPS,
    V_PROTOCOL,
    V_SCHEMA,
    _batch,
    add_actions,
    build_evolving_table,
    dry_run_vacuum,
)
from tests.support.paths import DELTA_TABLES

GOLDEN_DV = DELTA_TABLES / "golden/dv-partitioned-with-checkpoint"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def evolving(tmp_path_factory) -> str:
    return str(build_evolving_table(tmp_path_factory.mktemp("health") / "t"))


@pytest.mark.parametrize("version", [None, 5, V_OPTIMIZE, V_SCHEMA])
def test_file_numbers_equal_deltalake(evolving, version):
    h = health_at(open_log(evolving), version)
    actions = add_actions(evolving, version)
    sizes = actions["size_bytes"].to_pylist()
    assert h["num_files"] == len(sizes) == len(actions["path"])
    assert h["total_bytes"] == sum(sizes)
    assert h["num_records"] == sum(actions["num_records"].to_pylist())
    assert h["files_without_stats"] == sum(
        1 for n in actions["num_records"].to_pylist() if n is None
    )
    assert h["small_files"]["threshold"] == 32 * MIB  # 128 MiB default target / 4
    assert h["small_files"]["count"] == sum(1 for s in sizes if s < 32 * MIB)
    buckets = Counter(1 << max(s - 1, 0).bit_length() for s in sizes)
    assert {b["le"]: b["count"] for b in h["file_size_histogram"] if b["count"]} == buckets
    per_part: dict[str, list[int]] = {}
    for part, size in zip(actions["partition.part"].to_pylist(), sizes, strict=True):
        per_part.setdefault(part, []).append(size)
    assert h["partitions"]["count"] == len(per_part)
    assert {p["values"]["part"]: (p["num_files"], p["bytes"]) for p in h["partitions"]["top"]} == {
        k: (len(v), sum(v)) for k, v in per_part.items()
    }
    totals = sorted(sum(v) for v in per_part.values())
    median = (totals[(len(totals) - 1) // 2] + totals[len(totals) // 2]) / 2
    assert h["partition_skew"] == pytest.approx(max(totals) / median, rel=1e-3)


@pytest.mark.parametrize("version", [None, V_OPTIMIZE, 5])
def test_tombstones_equal_a_dry_run_vacuum(evolving, version):
    h = health_at(open_log(evolving), version)
    would_delete = dry_run_vacuum(evolving, version)
    assert h["tombstones"]["count"] == len(would_delete)
    assert h["tombstones"]["bytes"] == sum(
        os.path.getsize(Path(evolving) / p) for p in would_delete
    )
    if version is None:  # retention 0 days since v14: everything removed is vacuumable
        assert h["tombstones"]["vacuumable_count"] == len(would_delete) == 12
        assert h["tombstones"]["vacuumable_bytes"] == h["tombstones"]["bytes"]
        assert "VACUUM" in {r["action"] for r in h["recommendations"]}
    elif version == V_OPTIMIZE:  # 7 days default retention at v12's own timestamp: none yet
        assert h["tombstones"]["vacuumable_bytes"] == 0 and h["tombstones"]["count"] == 12


def test_small_appends_recommend_optimize_at_a_past_version(evolving):
    activity = activity_from(load_history(evolving).summaries[:12])
    h = health_at(open_log(evolving), 11, activity)
    assert h["small_files"]["count"] == 12
    (rec,) = [r for r in h["recommendations"] if r["action"] == "OPTIMIZE"]
    assert "12 of 12 files" in rec["why"] and "UTC" in rec["when"]


def test_change_history_equals_deltalake_metadata_and_protocol(evolving):
    changes = changes_from_history(load_history(evolving))
    assert [(c["version"], c["kind"]) for c in changes] == [
        (V_SCHEMA, "schema"),
        (V_PROPS, "properties"),
        (V_PROTOCOL, "protocol"),
    ]
    schema, props, protocol = changes
    before = {f.name for f in DeltaTable(evolving, version=V_SCHEMA - 1).schema().fields}
    after = {f.name for f in DeltaTable(evolving, version=V_SCHEMA).schema().fields}
    assert set(schema["before"]) == before and set(schema["after"]) == after
    assert (
        [c["name"] for c in schema["diff"]["added"]] == sorted(after - before) == [HOSTILE_COLUMN]
    )
    assert props["after"] == DeltaTable(evolving, version=V_PROPS).metadata().configuration
    assert props["before"] == DeltaTable(evolving, version=V_SCHEMA).metadata().configuration
    p = DeltaTable(evolving, version=V_PROTOCOL).protocol()
    assert protocol["after"]["min_writer_version"] == p.min_writer_version == 7
    assert protocol["after"]["writer_features"] == sorted(p.writer_features or [])
    assert (
        protocol["before"]["min_writer_version"]
        == DeltaTable(evolving, version=V_PROPS).protocol().min_writer_version
    )
    for c in changes:
        assert c["timestamp"] is not None and c["summary"].startswith(c["kind"])


def test_diff_equals_the_difference_of_deltalake_file_sets(evolving):
    a, b = 5, V_LAST
    d = diff_versions(open_log(evolving), a, b)
    before = dict(
        zip(
            add_actions(evolving, a)["path"].to_pylist(),
            add_actions(evolving, a)["size_bytes"].to_pylist(),
            strict=True,
        )
    )
    after_t = add_actions(evolving, b)
    after = dict(zip(after_t["path"].to_pylist(), after_t["size_bytes"].to_pylist(), strict=True))
    added, removed = set(after) - set(before), set(before) - set(after)
    assert d["files_added"]["count"] == len(added)
    assert d["files_added"]["bytes"] == sum(after[p] for p in added)
    assert d["files_removed"]["count"] == len(removed)
    assert d["files_removed"]["bytes"] == sum(before[p] for p in removed)
    rows_before = sum(add_actions(evolving, a)["num_records"].to_pylist())
    rows_after = sum(after_t["num_records"].to_pylist())
    assert d["rows_added"] - d["rows_removed"] == rows_after - rows_before
    assert [c["version"] for c in d["commits"]] == list(range(a + 1, b + 1)) == list(range(6, 17))
    assert {c["kind"] for c in d["changes"]} == {"schema", "properties", "protocol"}
    assert {p["part"] for p in d["files_added"]["partitions"]} == {"a", "b", "c", None} - {None} | (
        {None} if any(p["part"] is None for p in d["files_added"]["partitions"]) else set()
    )
    with pytest.raises(DeltaAuditError, match="lower"):
        diff_versions(open_log(evolving), b, a)


def test_deletion_vector_golden_table_rows_equal_a_deltalake_count():
    for version in (None, 7):
        h = health_at(open_log(GOLDEN_DV), version)
        dt = (
            DeltaTable(str(GOLDEN_DV), version=version)
            if version is not None
            else DeltaTable(str(GOLDEN_DV))
        )
        count = QueryBuilder().register("t", dt).execute("select count(*) as n from t").read_all()
        assert h["num_records"] == count.column("n").to_pylist()[0]
        assert h["num_files"] == len(add_actions(str(GOLDEN_DV), version))
        assert h["deletion_vectors"]["files"] >= 1
        stats_rows = sum(add_actions(str(GOLDEN_DV), version)["num_records"].to_pylist())
        assert h["deletion_vectors"]["deleted_rows"] == stats_rows - h["num_records"]


def test_checkpoint_lag_and_stale_pointer(tmp_path):
    uri = str(tmp_path / "cp")
    for i in range(3):
        write_deltalake(uri, _batch(i), mode="append")
    DeltaTable(uri).create_checkpoint()
    for i in range(3, 5):
        write_deltalake(uri, _batch(i), mode="append")
    cp = health_at(open_log(uri))["checkpoint"]
    assert (cp["last_version"], cp["commits_since"], cp["last_checkpoint_stale"]) == (2, 2, False)
    assert health_at(open_log(uri), 1)["checkpoint"]["last_version"] is None
    # A checkpoint newer than what _last_checkpoint names: readers would start too far back.
    shutil.copy(
        Path(uri) / "_delta_log/00000000000000000002.checkpoint.parquet",
        Path(uri) / "_delta_log/00000000000000000004.checkpoint.parquet",
    )
    h = health_at(open_log(uri))
    assert h["checkpoint"]["last_checkpoint_stale"] is True
    assert "CHECKPOINT" in {r["action"] for r in h["recommendations"]}


def test_schema_columns_flatten_structs_and_survive_garbage():
    schema = (
        '{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":'
        '[{"name":"x","type":"integer","nullable":false}]},"nullable":true}]}'
    )
    assert schema_columns(schema) == {
        "s": {"type": "struct", "nullable": True},
        "s.x": {"type": "integer", "nullable": False},
    }
    assert schema_columns("not json") == {} and schema_columns(None) == {}


def test_helpers():
    assert parse_interval_ms("interval 7 days") == 7 * 86_400_000
    assert parse_interval_ms("168 hours") == 168 * 3_600_000
    assert parse_interval_ms("whenever") is None
    assert size_histogram([1, 2, 3, 1024, 1025]) == [
        {"le": 1 << e, "count": c}
        for e, c in zip(range(0, 12), [1, 1, 1] + [0] * 7 + [1, 1], strict=True)
    ]
    hours = [5] * 24
    udm = [0] * 24
    udm[2] = udm[3] = udm[4] = 9
    start, _ = quiet_window(hours, udm)
    assert not {start, (start + 1) % 24, (start + 2) % 24} & {2, 3, 4}


def test_optimize_when_avoids_dml_hours_on_a_table_without_deletion_vectors(evolving):
    log = open_log(evolving)
    from audit.core.health.tombstones import snapshot_at

    snap = snapshot_at(log, 11)
    activity = Activity()
    base = snap.timestamp - snap.timestamp % 86_400_000
    for hour in range(24):
        activity.add(base + hour * 3_600_000, "INSERT")
    for hour in (1, 2, 3, 4, 5):
        for _ in range(5):
            activity.add(base + hour * 3_600_000, "UPDATE/DELETE/MERGE")
    h = compute_health(snap, log.listing, {}, activity)
    (rec,) = [r for r in h["recommendations"] if r["action"] == "OPTIMIZE"]
    start = int(rec["when"][:2])
    assert not {start, (start + 1) % 24, (start + 2) % 24} & {1, 2, 3, 4, 5}
    assert "peak at 01:00 UTC" in rec["when"] and "can conflict" in rec["why"]


def test_concurrent_metadata_change_finding_links_to_its_change():
    from audit.core.health.changes import link_findings

    findings = [{"kind": "concurrent_metadata_change", "version": 4}, {"kind": "x", "version": 4}]
    link_findings(
        findings, [{"version": 4, "kind": "schema"}, {"version": 4, "kind": "properties"}]
    )
    assert findings[0]["change"] == {"version": 4, "kinds": ["schema", "properties"]}
    assert "change" not in findings[1]
