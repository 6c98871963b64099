"""Declared key columns and duplicate_key findings (audit/core/data/keys.py), on tables written by
deltalake and on Spark-style logs written by hand (concurrent MERGEs that both insert a key)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.audit import audit_history
from audit.core.data.keys import parse_key_columns
from audit.core.errors import DeltaAuditError
from audit.core.history.summary import load_history
from tests.support import dv_tables as t


def _dups(path, keys=("id",)):
    result = audit_history(load_history(str(path)), key_columns=list(keys))
    return [f for f in result.findings if f.kind == "duplicate_key"]


def _ids(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"r{i}" for i in ids]})


def test_it_finds_a_key_two_writers_loaded_at_one_version_both_appended(tmp_path):
    write_deltalake(str(tmp_path), _ids(1, 2, 3))
    first, second = DeltaTable(str(tmp_path)), DeltaTable(str(tmp_path))
    write_deltalake(first, _ids(42), mode="append")
    write_deltalake(second, _ids(42), mode="append")  # blind: never conflicts
    (finding,) = _dups(tmp_path)
    assert (finding.version, finding.related_versions) == (2, [1])
    assert finding.severity == "critical" and finding.confirmed
    witness = finding.witness
    assert witness["duplicate_keys"] == 1 and witness["extra_rows"] == 1
    assert witness["sample_keys"][0]["key"] == {"id": 42}
    assert witness["sample_keys"][0]["versions"] == [1, 2]
    assert len(witness["files"]) == 2
    # delta-rs records no read version on appends: the log cannot tell concurrency.
    assert finding.details["concurrency"] == "unknown"


def test_it_finds_nothing_without_declared_keys_or_with_unique_keys(tmp_path):
    write_deltalake(str(tmp_path), _ids(1, 2, 3))
    write_deltalake(str(tmp_path), _ids(4, 5), mode="append")
    write_deltalake(str(tmp_path), _ids(3, 6), mode="append")
    DeltaTable(str(tmp_path)).delete("id = 3 AND v = 'r3'")  # both rows of key 3 go
    write_deltalake(str(tmp_path), _ids(3), mode="append")
    assert _dups(tmp_path) == []
    assert [f for f in audit_history(load_history(str(tmp_path))).findings
            if f.kind == "duplicate_key"] == []  # fmt: skip


def _merge_log(path):
    """v0: ids 0..9; v1 and v2: MERGEs that both read v0 and both insert id 42; v3 (read v2)
    appends id 7 again (a writer's own bug)."""
    path.mkdir()
    files = {0: _ids(*range(10)), 1: _ids(42), 2: _ids(42), 3: _ids(7)}
    for version, data in files.items():
        pq.write_table(data, path / f"f{version}.parquet")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True},
        {"name": "v", "type": "string", "nullable": True}]}  # fmt: skip

    def add(version):
        stats = {"numRecords": files[version].num_rows,
                 "minValues": {"id": min(files[version]["id"].to_pylist())},
                 "maxValues": {"id": max(files[version]["id"].to_pylist())}}  # fmt: skip
        return {"add": {"path": f"f{version}.parquet", "partitionValues": {}, "size": 1,
                        "modificationTime": 1, "dataChange": True, "stats": json.dumps(stats)}}  # fmt: skip

    t.commit(path, 0,
             {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps(schema), "partitionColumns": [],
                           "configuration": {}, "createdTime": 1}},
             add(0), operation="WRITE", isBlindAppend=True)  # fmt: skip
    merge = {"operation": "MERGE", "isolationLevel": "WriteSerializable", "isBlindAppend": False,
             "operationParameters": {"predicate": json.dumps(["(t.id = s.id)"])}}  # fmt: skip
    t.commit(path, 1, add(1), readVersion=0, **merge)
    t.commit(path, 2, add(2), readVersion=0, **merge)
    t.commit(path, 3, add(3), readVersion=2, operation="WRITE", isBlindAppend=True,
             isolationLevel="WriteSerializable", operationParameters={"mode": "Append"})  # fmt: skip


def test_it_names_concurrent_merges_that_both_inserted_a_key_with_their_cycle(tmp_path):
    _merge_log(tmp_path / "t")
    concurrent, sequential = _dups(tmp_path / "t")
    assert (concurrent.version, concurrent.related_versions) == (2, [1])
    assert concurrent.details["concurrency"] == "concurrent"
    assert concurrent.witness["sample_keys"][0]["key"] == {"id": 42}
    edges = [(e["from"], e["to"], e["type"]) for e in concurrent.witness["cycle"]]
    assert edges == [(2, 1, "rw"), (1, 2, "ww")]
    assert concurrent.witness["anomaly"] == "G-single"
    assert (sequential.version, sequential.related_versions) == (3, [0])
    assert sequential.details["concurrency"] == "sequential"
    assert "cycle" not in sequential.witness


def test_it_applies_deletion_vectors_before_counting_keys(tmp_path):
    t.create(tmp_path)  # ids 0..9 in one file
    pq.write_table(_ids(3), tmp_path / "again.parquet")
    again = t.add()
    again["add"] = {**again["add"], "path": "again.parquet", "stats": t.stats(1)}
    t.commit(tmp_path, 1, again, operation="WRITE", isBlindAppend=True, readVersion=0)
    assert len(_dups(tmp_path)) == 1
    # Deleting row 3 of the first file by deletion vector leaves one live row of id 3.
    t.delete(tmp_path, 2, 1, 3, t.remove(), t.add(t.stored_dv(tmp_path, [3])))
    assert _dups(tmp_path) == []


def test_it_reads_key_columns_as_written_on_the_command_line():
    assert parse_key_columns("id, k2") == ["id", "k2"]
    assert parse_key_columns(None) == []
    with pytest.raises(DeltaAuditError):
        parse_key_columns("id,,k2")


def test_it_accepts_only_lists_of_column_names_as_stored_keys():
    from audit.core.data.keys import valid_key_columns

    assert valid_key_columns(["id", " k2 "]) == ["id", "k2"]
    assert valid_key_columns("id,k2") == ["id", "k2"]
    for bad in (["id", ""], [1], {"id": 1}):
        with pytest.raises(DeltaAuditError):
            valid_key_columns(bad)


def test_it_keys_on_partition_columns_too_and_never_on_nulls(tmp_path):
    def batch(day, *ids):
        return pa.table({"day": [day] * len(ids), "id": pa.array(ids, pa.int64())})

    write_deltalake(str(tmp_path), batch("d1", 1, 2), partition_by=["day"])
    write_deltalake(str(tmp_path), batch("d2", 1, 2), mode="append")  # other day: other key
    write_deltalake(str(tmp_path), batch("d1", None, 5, 7), mode="append")
    write_deltalake(str(tmp_path), batch("d1", None, 6), mode="append")  # NULL twice: no key
    assert _dups(tmp_path, ("day", "id")) == []
    write_deltalake(str(tmp_path), batch("d2", 2), mode="append")
    (finding,) = _dups(tmp_path, ("day", "id"))
    assert finding.version == 4
    assert finding.witness["sample_keys"][0]["key"] == {"day": "d2", "id": 2}


def test_it_reads_every_file_when_one_has_no_key_statistics(tmp_path):
    write_deltalake(str(tmp_path), _ids(1, 2))
    write_deltalake(str(tmp_path), _ids(1, 2), mode="append")  # overlaps v0: a candidate pair
    write_deltalake(str(tmp_path), _ids(5, 6), mode="append")
    write_deltalake(str(tmp_path), _ids(5), mode="append")
    log = tmp_path / "_delta_log" / f"{3:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for line in lines:
        line.get("add", {}).pop("stats", None)  # a writer that wrote no statistics
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    found = {f.version: f.witness["duplicate_keys"] for f in _dups(tmp_path)}
    assert found == {1: 2, 3: 1}  # ids 1 and 2 at v1, id 5 at v3
