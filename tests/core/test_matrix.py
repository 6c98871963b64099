"""The conflict matrix, checked cell by cell against the reference page's two tables."""

from __future__ import annotations

import orjson
import pytest

from audit.core.conflicts.matrix import (
    INSERT,
    OPS,
    OPTIMIZE,
    UDM,
    MatrixCell,
    conflict_matrix,
    normalize_isolation_level,
    verdict_for,
)
from audit.core.operations import classify_operation, operation_family, uses_zorder
from tests.support.matrix_page import COMBINATIONS, WITH_RLC, WITHOUT_RLC, expected_verdict
from tests.support.paths import DELTA_TABLES

TABLES = DELTA_TABLES


PAIRS = [(a, b) for i, a in enumerate(OPS) for b in OPS[i:]]


def test_the_mirror_covers_every_printed_cell_of_both_tables():
    for page in (WITH_RLC, WITHOUT_RLC):
        assert len(page) == 6
        assert {frozenset(pair) for pair in page} == {frozenset(pair) for pair in PAIRS}


@pytest.mark.parametrize(("level", "rlc", "dv", "zorder"), COMBINATIONS)
def test_every_cell_matches_the_page(level, rlc, dv, zorder):
    cells = conflict_matrix(level, rlc, dv, zorder)
    assert [(c.a, c.b) for c in cells] == PAIRS
    for cell in cells:
        assert isinstance(cell, MatrixCell)
        want = expected_verdict(level, rlc, dv, zorder, cell.a, cell.b)
        assert cell.verdict == want, (level, rlc, dv, zorder, cell.a, cell.b)
        assert cell.note and len(cell.note) < 400


def test_it_answers_the_questions_people_ask():
    # Two blind appends never conflict; a MERGE and an append do under Serializable only.
    ser = conflict_matrix("Serializable", False, False, False)
    ws = conflict_matrix("WriteSerializable", False, False, False)
    assert verdict_for(ser, INSERT, INSERT) == "cannot_conflict"
    assert verdict_for(ser, UDM, INSERT) == "can_conflict"
    assert verdict_for(ws, INSERT, UDM) == "cannot_conflict"
    # Deletion vectors let OPTIMIZE run next to a MERGE, ZORDER BY takes that away again.
    assert verdict_for(conflict_matrix("WriteSerializable", False, True, False), UDM, OPTIMIZE) == (
        "cannot_conflict"
    )
    assert verdict_for(conflict_matrix("WriteSerializable", False, True, True), UDM, OPTIMIZE) == (
        "can_conflict"
    )
    rlc = conflict_matrix("Serializable", True, True, False)
    assert verdict_for(rlc, UDM, UDM) == "can_conflict_same_row"
    with pytest.raises(KeyError):
        verdict_for(rlc, "INSERT", "VACUUM")


def test_notes_carry_the_page_footnotes():
    cells = {(c.a, c.b): c.note for c in conflict_matrix("Serializable", False, False, True)}
    assert "footnote (1)" in cells[(INSERT, INSERT)]
    assert "identity columns" in cells[(INSERT, INSERT)]
    assert "REORG" in cells[(UDM, OPTIMIZE)]
    assert "ConcurrentDeleteDeleteException" in cells[(OPTIMIZE, OPTIMIZE)]
    rlc_without_dv = conflict_matrix("Serializable", True, False, False)
    assert all("needs deletion vectors" in c.note for c in rlc_without_dv)
    with_identity = conflict_matrix("Serializable", True, True, False, identity_columns=True)
    assert all("identity columns" in c.note for c in with_identity)
    # Identity columns do not change a verdict: the page's tables do not model them.
    assert [c.verdict for c in with_identity] == [
        c.verdict for c in conflict_matrix("Serializable", True, True, False)
    ]


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("Serializable", "Serializable"),
        ("serializable", "Serializable"),
        ("SERIALIZABLE", "Serializable"),
        ("WriteSerializable", "WriteSerializable"),
        ("writeSerializable", "WriteSerializable"),
        ("writeserializable", "WriteSerializable"),
        (" Write Serializable ", "WriteSerializable"),
    ],
)
def test_isolation_levels_are_accepted_case_insensitively(given, canonical):
    assert normalize_isolation_level(given) == canonical
    assert conflict_matrix(given, False, False, False) == conflict_matrix(
        canonical, False, False, False
    )


@pytest.mark.parametrize("bad", ["SnapshotIsolation", "", "serial", "<script>x</script>"])
def test_a_bad_isolation_level_is_a_clear_value_error(bad):
    with pytest.raises(ValueError, match="expected Serializable or WriteSerializable"):
        conflict_matrix(bad, False, False, False)


# ------------------------------------------------------------------ operations


def _commit_infos(table: str) -> dict[int, dict]:
    infos = {}
    for path in sorted((TABLES / table / "_delta_log").glob("*.json")):
        for line in path.read_bytes().splitlines():
            if line.strip():
                action = orjson.loads(line)
                if "commitInfo" in action:
                    infos[int(path.stem)] = action["commitInfo"]
    return infos


def _classify(info: dict) -> str | None:
    params = info.get("operationParameters") or {}
    return classify_operation(info.get("operation"), info.get("isBlindAppend"), params)


def test_it_classifies_the_commits_of_real_spark_tables():
    spark = _commit_infos("spark/delta-1.2.1")
    assert _classify(spark[0]) == INSERT  # WRITE Append, isBlindAppend true
    assert _classify(spark[1]) is None  # SET TBLPROPERTIES
    assert operation_family(spark[1]["operation"], True, spark[1]["operationParameters"]) == (
        "metadata"
    )
    assert _classify(spark[4]) == UDM  # UPDATE
    merge = _commit_infos("golden/basic-with-inserts-merge")
    assert _classify(merge[1]) == UDM
    restore = _commit_infos("golden/basic-with-inserts-overwrite-restore")
    ops = {v: (i["operation"], _classify(i)) for v, i in restore.items()}
    assert ("RESTORE", UDM) in ops.values()
    assert any(op == "WRITE" and kind == UDM for op, kind in ops.values())  # the overwrite


def test_it_sees_zorder_in_a_real_optimize_commit():
    infos = _commit_infos("golden/commit-info-containing-arbitrary-operationParams-types")
    optimize = infos[2]
    assert optimize["operation"] == "OPTIMIZE"
    assert uses_zorder(optimize["operationParameters"]) is True
    assert _classify(optimize) == OPTIMIZE
    assert _classify(infos[0]) == INSERT  # CREATE TABLE AS SELECT, blind
    assert uses_zorder({"predicate": "[]", "zOrderBy": "[]"}) is False
    assert uses_zorder({"zOrderBy": ["a", "b"]}) is True
    assert uses_zorder({"targetSize": "104857600", "predicate": "[]"}) is False  # delta-rs
    assert uses_zorder(None) is False


def test_it_classifies_what_delta_rs_writes(tmp_path):
    pa = pytest.importorskip("pyarrow")
    deltalake = pytest.importorskip("deltalake")
    data = pa.table({"id": [1, 2, 3], "d": ["a", "b", "a"]})
    uri = str(tmp_path / "t")
    deltalake.write_deltalake(uri, data, partition_by=["d"])
    deltalake.write_deltalake(uri, data, mode="append")
    deltalake.write_deltalake(uri, data, mode="overwrite")
    table = deltalake.DeltaTable(uri)
    table.delete("id = 2")
    deltalake.write_deltalake(uri, data, mode="append")  # two files per partition to compact
    table = deltalake.DeltaTable(uri)
    table.optimize.compact()
    table.alter.set_table_properties({"delta.appendOnly": "false"})
    table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    kinds = [
        (h["operation"], operation_family(h["operation"], None, h.get("operationParameters")))
        for h in sorted(deltalake.DeltaTable(uri).history(), key=lambda h: h["version"])
    ]
    assert kinds == [
        ("WRITE", INSERT),  # creating write, mode ErrorIfExists, no isBlindAppend recorded
        ("WRITE", INSERT),  # append
        ("WRITE", UDM),  # overwrite
        ("DELETE", UDM),
        ("WRITE", INSERT),
        ("OPTIMIZE", OPTIMIZE),
        ("SET TBLPROPERTIES", "metadata"),
        ("VACUUM START", "maintenance"),
        ("VACUUM END", "maintenance"),
    ]


@pytest.mark.parametrize(
    ("operation", "blind", "params", "kind"),
    [
        ("WRITE", True, {"mode": "Append"}, INSERT),
        ("WRITE", False, {"mode": "Append"}, UDM),  # INSERT ... SELECT from the same table
        ("WRITE", None, {"mode": "Append"}, INSERT),
        ("WRITE", True, {"mode": "Overwrite"}, UDM),
        ("WRITE", False, {"mode": "Overwrite", "predicate": "[\"(d = 'a')\"]"}, UDM),
        ("STREAMING UPDATE", True, {"outputMode": "Append"}, INSERT),
        ("STREAMING UPDATE", False, {"outputMode": "Complete"}, UDM),
        ("COPY INTO", True, {}, INSERT),
        ("CREATE OR REPLACE TABLE AS SELECT", False, {}, UDM),
        ("REPLACE TABLE", False, {}, UDM),
        ("TRUNCATE", False, {}, UDM),
        ("delete", None, {"predicate": "id = 2"}, UDM),
        ("MERGE", None, {"mergePredicate": "t.id = s.id"}, UDM),
        ("REORG", False, {"predicate": "[]", "applyPurge": "true"}, OPTIMIZE),
        ("REORG", False, {"icebergCompatVersion": "2"}, None),  # UPGRADE UNIFORM: protocol
        ("OPTIMIZE", False, {"zOrderBy": '["id"]'}, OPTIMIZE),
        ("CREATE TABLE", True, {}, None),
        ("create", None, {}, None),
        ("CONVERT", False, {}, None),
        ("CLONE", False, {}, None),
        ("ADD COLUMNS", True, {}, None),
        ("CHANGE COLUMN", True, {}, None),
        ("VACUUM START", None, {}, None),
        ("Manual Update", False, {}, None),
        (None, None, None, None),
        (42, None, "not a dict", None),
    ],
)
def test_classify_operation(operation, blind, params, kind):
    assert classify_operation(operation, blind, params) == kind


@pytest.mark.parametrize(
    ("operation", "family"),
    [
        ("CREATE TABLE", "metadata"),
        ("create", "metadata"),
        ("SET TBLPROPERTIES", "metadata"),
        ("CLONE", "metadata"),
        ("CONVERT", "metadata"),
        ("VACUUM END", "maintenance"),
        ("Manual Update", "other"),
        ("<script>alert(1)</script>", "other"),
        ("DELETE", UDM),
    ],
)
def test_operation_family(operation, family):
    assert operation_family(operation, None, {}) == family
