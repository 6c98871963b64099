"""Time-travel reachability (health/timetravel.py, health/scan.py) on tables made by real delta-rs
writers: a VACUUM with the retention check off under a stale writer, files deleted by hand, a
VACUUM within the table's own retention, and Delta's own test tables (no new finding)."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from audit.core.health.scan import scan_data
from audit.core.health.timetravel import retention_ms, time_travel_section
from audit.core.history.summary import load_history
from audit.core.storage.stores import open_store
from audit.core.vocab import SCAN_KINDS, FindingKind
from tests.support.hand_commits import base_actions, changed_add, write_commit

TEST_TABLES = Path(__file__).resolve().parents[1] / "data" / "delta-tables"
NEW_KINDS = {
    FindingKind.MISSING_DATA_FILE,
    FindingKind.VACUUM_BROKE_SNAPSHOT,
    FindingKind.TIMESTAMPS_OUT_OF_ORDER,
}


def _rows(day: str, ids: list[int]) -> pa.Table:
    return pa.table({"day": [day] * len(ids), "id": pa.array(ids, pa.int64())})


def _scan(path: Path, **bounds):
    history = load_history(str(path))
    found = scan_data(
        open_store(str(path)), history, str(path), now_ms=int(time.time() * 1000), **bounds
    )
    return found, time_travel_section(found.reach, history)


def _by_kind(found) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in found.findings:
        out.setdefault(f.kind, []).append(f)
    return out


def _vacuum_under_a_stale_writer(path: Path) -> None:
    """v0 day A, v1 day B; a writer reads v1; v2 overwrites day A; v3-v4 VACUUM with retention
    0 and the check off deletes v0's file; the stale writer's DELETE on day B commits as v5."""
    write_deltalake(str(path), _rows("A", [1, 2]), partition_by=["day"])
    write_deltalake(str(path), _rows("B", [3, 4]), mode="append")
    stale = DeltaTable(str(path))
    write_deltalake(str(path), _rows("A", [5]), mode="overwrite", predicate="day = 'A'")
    DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    stale.delete("day = 'B' and id = 3")


def test_it_finds_the_vacuum_that_broke_a_stale_writers_snapshot(tmp_path):
    _vacuum_under_a_stale_writer(tmp_path)
    found, travel = _scan(tmp_path)
    kinds = _by_kind(found)
    (broke,) = kinds[FindingKind.VACUUM_BROKE_SNAPSHOT]
    assert (broke.severity, broke.version, broke.related_versions) == ("critical", 5, [1, 3, 4])
    assert [step["version"] for step in broke.witness["cycle"]] == [1, 3, 5]
    assert broke.witness["vacuum"]["retention_check"] is False
    assert broke.witness["vacuum"]["specified_retention_ms"] == 0
    assert "retention check was off" in broke.explanation
    assert "shorter than delta.deletedFileRetentionDuration" in broke.explanation
    (missing,) = kinds[FindingKind.MISSING_DATA_FILE]
    assert (missing.severity, missing.version, missing.related_versions) == ("warning", 0, [3])
    assert missing.witness["broken_versions"] == [[0, 1]]
    assert missing.witness["files"][0].startswith("day=A/")
    assert travel["earliest_readable_version"] == 2
    assert travel["broken_versions"] == [0, 1]


def test_it_finds_a_live_file_deleted_by_hand_as_critical_at_the_version_that_added_it(tmp_path):
    write_deltalake(str(tmp_path), _rows("A", [1]), partition_by=["day"])
    write_deltalake(str(tmp_path), _rows("B", [2]), mode="append")
    write_deltalake(str(tmp_path), _rows("C", [3]), mode="append")
    (victim,) = (tmp_path / "day=B").glob("*.parquet")
    victim.unlink()
    found, travel = _scan(tmp_path)
    (missing,) = _by_kind(found)[FindingKind.MISSING_DATA_FILE]
    assert (missing.severity, missing.version, missing.related_versions) == ("critical", 1, [])
    assert missing.witness["files"] == [f"day=B/{victim.name}"]
    assert missing.witness["deleted_by"] is None and missing.witness["latest_broken"]
    assert "deleted outside Delta" in missing.explanation
    assert travel["broken_versions"] == [1, 2] and travel["earliest_readable_version"] == 0


def test_it_finds_an_old_file_deleted_by_hand_before_its_retention_as_a_warning(tmp_path):
    write_deltalake(str(tmp_path), _rows("A", [1]))
    write_deltalake(str(tmp_path), _rows("A", [2]), mode="overwrite")
    write_deltalake(str(tmp_path), _rows("A", [3]), mode="append")
    first_file = DeltaTable(str(tmp_path), version=0).file_uris()[0]
    Path(first_file.removeprefix("file://")).unlink()
    found, travel = _scan(tmp_path)
    (missing,) = _by_kind(found)[FindingKind.MISSING_DATA_FILE]
    assert (missing.severity, missing.version) == ("warning", 0)
    assert missing.witness["broken_versions"] == [[0, 0]]
    assert travel["earliest_readable_version"] == 1


def test_it_does_not_report_a_vacuum_within_the_tables_own_retention(tmp_path):
    settings = {"delta.deletedFileRetentionDuration": "interval 0 hours"}
    write_deltalake(str(tmp_path), _rows("A", [1]), configuration=settings)
    write_deltalake(str(tmp_path), _rows("A", [2]), mode="overwrite")
    time.sleep(0.01)
    DeltaTable(str(tmp_path)).vacuum(retention_hours=0, dry_run=False)
    found, travel = _scan(tmp_path)
    assert not NEW_KINDS & {f.kind for f in found.findings}
    assert travel["missing_files"] == travel["missing_files_beyond_retention"] == 1
    assert travel["broken_versions"] == [] and travel["earliest_readable_version"] == 1


def test_it_judges_nothing_when_the_listing_hit_its_bounds(tmp_path):
    write_deltalake(str(tmp_path), _rows("A", [1]), partition_by=["day"])
    write_deltalake(str(tmp_path), _rows("B", [2]), mode="append")
    next((tmp_path / "day=B").glob("*.parquet")).unlink()
    found, travel = _scan(tmp_path, max_files=0)
    assert not NEW_KINDS & {f.kind for f in found.findings}
    assert not travel["judged"] and "limits" in travel["reason"]


def test_it_reads_the_retention_property_as_delta_writes_it():
    assert retention_ms({}) == 7 * 24 * 3_600_000
    assert retention_ms({"delta.deletedFileRetentionDuration": "interval 1 week"}) == 604_800_000
    assert retention_ms({"delta.deletedFileRetentionDuration": "interval 36 hours"}) == 129_600_000
    assert retention_ms({"delta.deletedFileRetentionDuration": "interval 0 hours"}) == 0


def test_it_reports_no_new_kind_on_any_test_table_and_a_log_cleanup_is_not_broken():
    judged = 0
    for log in sorted(TEST_TABLES.glob("*/*/_delta_log")):
        try:
            history = load_history(str(log.parent))
        except Exception:  # noqa: BLE001 - the broken-on-purpose tables (README) do not load
            continue
        found = scan_data(
            open_store(str(log.parent)), history, str(log.parent), now_ms=int(time.time() * 1000)
        )
        assert not NEW_KINDS & {f.kind for f in found.findings}, log.parent.name
        assert {f.kind for f in found.findings} <= SCAN_KINDS
        judged += found.reach.judged
    assert judged > 50
    vacuumed = TEST_TABLES / "golden" / "snapshot-vacuumed"
    _, travel = _scan(vacuumed)
    assert travel["judged"] and travel["broken_versions"] == []
    assert travel["earliest_readable_version"] == 5
    assert travel["missing_files"] == travel["missing_files_beyond_retention"] > 0


def test_it_follows_a_file_of_a_checkpoint_to_the_commit_that_removed_it(tmp_path):
    write_deltalake(str(tmp_path), _rows("A", [1]))
    (first_file,) = DeltaTable(str(tmp_path)).file_uris()  # known only to the checkpoint below
    write_deltalake(str(tmp_path), _rows("A", [2]), mode="append")
    DeltaTable(str(tmp_path)).create_checkpoint()
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()  # the log cleaned up to v1
    write_deltalake(str(tmp_path), _rows("A", [3]), mode="overwrite")
    Path(first_file.removeprefix("file://")).unlink()
    found, travel = _scan(tmp_path)
    assert travel["first_available_version"] == 1
    (missing,) = _by_kind(found)[FindingKind.MISSING_DATA_FILE]
    assert (missing.severity, missing.version) == ("warning", 1)
    assert missing.witness["broken_versions"] == [[1, 1]]


def test_it_does_not_judge_files_outside_the_table_root(tmp_path):
    adds = base_actions(tmp_path)
    elsewhere = changed_add(adds[0], path="s3://another-bucket/clone/part-0.parquet")
    write_commit(tmp_path, 2, elsewhere, info={"timestamp": int(time.time() * 1000)})
    found, travel = _scan(tmp_path)
    assert travel["judged"] and travel["missing_files"] == 0
    assert not NEW_KINDS & {f.kind for f in found.findings}


def test_it_does_not_blame_a_vacuum_for_a_transaction_that_committed_before_it(tmp_path):
    write_deltalake(str(tmp_path), _rows("A", [1, 2]), partition_by=["day"])
    write_deltalake(str(tmp_path), _rows("B", [3, 4]), mode="append")
    stale = DeltaTable(str(tmp_path))
    write_deltalake(str(tmp_path), _rows("A", [5]), mode="overwrite", predicate="day = 'A'")
    stale.delete("day = 'B' and id = 3")  # v3, read v1: committed before the VACUUM
    DeltaTable(str(tmp_path)).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False
    )
    found, _ = _scan(tmp_path)
    kinds = _by_kind(found)
    assert FindingKind.VACUUM_BROKE_SNAPSHOT not in kinds
    (missing,) = kinds[FindingKind.MISSING_DATA_FILE]
    assert missing.related_versions == [4]  # the VACUUM START
