"""Repairs are proven, not printed: on tables real deltalake writers made, the incident's
deltalake repair statements are run as a user would (exec with `table_uri` and
`storage_options={}`); the table then holds exactly the rows its serial history gives
(computed here from what each commit wrote), and a new audit finds the damage gone."""

from __future__ import annotations

import os

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit.core.vocab import IncidentCause as C
from tests.support import scenarios
from tests.support.incidents import audit_incidents, by_cause, run_deltalake, table_rows
from tests.support.scenarios import DAY1, DAY2, WRITE_SERIALIZABLE

BLIND = CommitProperties(custom_metadata={"isBlindAppend": True})


def _row(day: str, i: int, value: str | None = None) -> tuple:
    return (day, i, value if value is not None else f"v{i}")


def _repaired(path, cause: str) -> None:
    """Run the incident's repair; a new audit of the same incident finds nothing wrong now."""
    _, incidents = audit_incidents(path)
    incident = by_cause(incidents, cause)
    assert incident.damage.rows_wrong_now and incident.damage.exact
    assert any(s.engine == "deltalake" for s in incident.repair)
    run_deltalake(incident.repair, path)
    _, after = audit_incidents(path)
    (again,) = [i for i in after if i.id == incident.id]
    assert (again.damage.rows_wrong_now, again.damage.exact, again.damage.files) == (0, True, [])
    assert not again.repair  # nothing left to take out
    return incident


def test_it_repairs_a_stale_full_overwrite(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))  # v2's DAY2 rows survived v3
    incident = _repaired(tmp_path, C.STALE_WRITE_UNCHECKED)
    assert incident.damage.rows_extra == 2 and incident.damage.partitions == [f"day={DAY2}"]
    # Serially: [1,2,3] [4,5] in DAY1, [40,41] in DAY2, then the overwrite with [99].
    assert table_rows(tmp_path) == [_row(DAY1, 99)]


def test_it_repairs_a_stale_unconditional_delete(tmp_path):
    scenarios.build_stale_unconditional_delete(str(tmp_path))  # v2's rows survived v3
    _repaired(tmp_path, C.STALE_WRITE_UNCHECKED)
    assert table_rows(tmp_path) == []  # the delete came last: nothing is left


def test_it_keeps_the_rows_of_a_file_a_stale_delete_should_have_kept(tmp_path):
    path = str(tmp_path)
    write_deltalake(path, scenarios.rows(DAY1, [1, 2, 3]), configuration=WRITE_SERIALIZABLE)
    write_deltalake(path, scenarios.rows(DAY1, [4, 5]), mode="append")  # v1
    stale = DeltaTable(path)
    write_deltalake(path, scenarios.rows(DAY1, [2, 10, 11]), mode="append", commit_properties=BLIND)
    stale.delete("id >= 4")  # v3 read v1: 10 and 11 survive, 2 rightly stays
    incident = _repaired(tmp_path, C.STALE_WRITE_WRITE_SERIALIZABLE)
    assert incident.damage.rows_extra == 2
    assert table_rows(tmp_path) == sorted(
        [_row(DAY1, 1), _row(DAY1, 2), _row(DAY1, 2), _row(DAY1, 3)]
    )


def test_it_repairs_a_stale_update_racing_an_append(tmp_path):
    scenarios.build_stale_update(str(tmp_path))  # v3 set value='updated' where id >= 3
    incident = _repaired(tmp_path, C.STALE_WRITE_WRITE_SERIALIZABLE)
    assert (incident.damage.rows_extra, incident.damage.rows_missing) == (2, 2)
    updated = [_row(DAY1, i, "updated") for i in (3, 4, 5, 50, 51)]
    assert table_rows(tmp_path) == sorted([_row(DAY1, 1), _row(DAY1, 2), *updated])


def test_it_repairs_a_stale_overwrite_that_an_optimize_raced(tmp_path):
    scenarios.build_stale_overwrite_after_optimize(str(tmp_path))
    _repaired(tmp_path, C.STALE_WRITE_UNCHECKED)
    # v0-v3 appended, v4 compacted them (no data change), v5 overwrote with [99].
    assert table_rows(tmp_path) == [_row(DAY1, 99)]


def test_it_restores_a_table_whose_latest_version_lost_a_file(tmp_path):
    for n in range(3):
        write_deltalake(str(tmp_path), scenarios.rows(DAY1, [n]), mode="append")
    os.remove(DeltaTable(str(tmp_path)).file_uris()[1])  # v1's file, referenced by v1 and v2
    _, incidents = audit_incidents(tmp_path)
    incident = by_cause(incidents, C.FILES_MISSING)
    assert incident.damage.rows_missing == 1 and incident.damage.files
    [deltalake] = [s for s in incident.repair if s.engine == "deltalake"]
    assert deltalake.code.endswith("dt.restore(0)\n")  # v0 is the last readable version
    run_deltalake(incident.repair, tmp_path)
    assert table_rows(tmp_path) == [_row(DAY1, 0)]
    _, after = audit_incidents(tmp_path)
    (again,) = [i for i in after if i.id == incident.id]
    assert again.damage.rows_wrong_now == 0 and not again.repair


def test_it_stops_when_a_file_it_would_remove_is_gone_since(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))
    _, incidents = audit_incidents(tmp_path)
    incident = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    DeltaTable(str(tmp_path)).delete(f"day = '{DAY2}'")  # someone removed the file meanwhile
    before = DeltaTable(str(tmp_path)).version()
    with pytest.raises(RuntimeError, match="no longer live"):
        run_deltalake(incident.repair, tmp_path)
    assert DeltaTable(str(tmp_path)).version() == before


def _dv_table(path) -> None:
    """Databricks-style, by hand: v0 file A (ids 0-9); v1 blind append of file B (10-19);
    v2 a stale DELETE of even ids (read v0) marks A's evens in a vector, B's evens survive;
    v3 deletes id 12 from B by a vector."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support import dv_tables as dv

    dv.create(path)
    first = path / "_delta_log" / f"{0:020d}.json"  # deltalake's kernel wants field metadata
    first.write_text(
        first.read_text().replace(
            '\\"nullable\\": true}', '\\"nullable\\": true, \\"metadata\\": {}}'
        )
    )
    pq.write_table(pa.table({"id": pa.array(range(10, 20), pa.int64())}), path / "part-b.parquet")
    b = {"path": "part-b.parquet", "partitionValues": {}, "dataChange": True,
         "size": (path / "part-b.parquet").stat().st_size, "modificationTime": 1, "stats": dv.stats()}  # fmt: skip
    dv.commit(path, 1, {"add": b}, operation="WRITE", isBlindAppend=True,
              operationParameters={"mode": "Append"})  # fmt: skip
    evens = json.dumps(["((id % 2) = 0)"])
    dv.commit(path, 2, dv.remove(), dv.add(dv.inline_dv([0, 2, 4, 6, 8])), operation="DELETE",
              operationParameters={"predicate": evens}, readVersion=0,
              isolationLevel="WriteSerializable", isBlindAppend=False)  # fmt: skip
    gone = {"remove": {"path": b["path"], "deletionTimestamp": 5, "dataChange": True}}
    dv.delete(path, 3, 2, 12, gone, {"add": {**b, "deletionVector": dv.inline_dv([2])}})


def test_it_counts_through_deletion_vectors_and_leaves_the_repair_to_spark(tmp_path, capsys):
    _dv_table(tmp_path)
    _, incidents = audit_incidents(tmp_path)
    incident = by_cause(incidents, C.STALE_WRITE_WRITE_SERIALIZABLE)
    # B's evens are wrong but 12, which B's vector deletes: 10, 14, 16, 18.
    assert (incident.damage.rows_extra, incident.damage.exact) == (4, True)
    assert [s.engine for s in incident.repair] == ["spark-sql"]
    assert "deltalake opens no table" in incident.repair[0].does_not
    assert incident.repair[0].code == (
        f"DELETE FROM delta.`{tmp_path}` WHERE ((`id` % 2) = 0) "
        "AND _metadata.file_name IN ('part-b.parquet')"
    )
    run_deltalake(incident.inspect, tmp_path)  # reads the files directly: no table to open
    shown = capsys.readouterr().out
    assert "'id': 10" in shown and "'id': 18" in shown
    assert "'id': 12" not in shown and "'id': 11" not in shown
