"""The typed explanation (`explain` -> `Explanation`) and its dict, the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.core.explain import (
    CANONICAL_EXCEPTIONS,
    ConflictingCommit,
    Explanation,
    Operations,
    ReportedCommit,
    TableFacts,
    explain,
    explain_conflict,
)
from audit.core.history.summary import load_history
from audit.core.vocab import ConflictException, Engine, IsolationLevel, OperationClass

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "exceptions"
SPARK_TABLE = ROOT / "tests" / "data" / "delta-tables" / "spark" / "delta-1.2.1"
CONTRACT_KEYS = [
    "exception",
    "conflicting_version",
    "explanation",
    "fixes",
    "error_class",
    "engine",
    "message",
    "meaning",
    "partitions",
    "root_of_table",
    "files",
    "operations",
    "conflicting_commit",
    "reported_commit",
    "likely_peer_versions",
    "candidate_versions",
    "isolation_level",
    "table",
    "notes",
]


def corpus(name: str) -> str:
    return (CORPUS / name).read_text()


def test_the_old_exception_names_are_the_vocabulary():
    assert set(CANONICAL_EXCEPTIONS) == set(ConflictException)
    assert all(isinstance(name, ConflictException) for name in CANONICAL_EXCEPTIONS)
    # The six specific ones first, the generic one last (callers slice [:6]).
    assert CANONICAL_EXCEPTIONS[-1] is ConflictException.CONCURRENT_WRITE


def test_a_spark_append_without_a_table():
    result = explain(corpus("spark_append_partition.txt"))
    assert isinstance(result, Explanation)
    assert result.exception is ConflictException.CONCURRENT_APPEND
    assert result.engine is Engine.SPARK
    assert result.error_class is None
    assert result.conflicting_version == 3
    assert result.partitions == [{"date": "2024-01-01"}]
    assert result.root_of_table is False
    assert result.table is None and result.isolation_level is None
    assert result.conflicting_commit is None  # no history: nothing was found in one
    assert isinstance(result.operations, Operations)
    assert result.fixes and result.meaning and result.message


def test_a_truncated_databricks_json_is_a_partial_reported_commit():
    result = explain(corpus("truncated_json.txt"))
    assert result.exception is ConflictException.CONCURRENT_APPEND
    assert result.engine is Engine.DATABRICKS
    assert result.error_class == "DELTA_CONCURRENT_APPEND"
    assert result.partitions == [{"date": "2024-03-05", "country": "US"}]
    assert isinstance(result.reported_commit, ReportedCommit)
    assert result.reported_commit.complete is False
    assert result.reported_commit.as_dict()["complete"] is False
    assert any("cut off or invalid" in note for note in result.notes)


def test_a_delta_rs_protocol_change_carries_its_detail():
    result = explain(corpus("delta_rs_protocol_changed.txt"))
    assert result.exception is ConflictException.PROTOCOL_CHANGED
    assert result.engine is Engine.DELTA_RS
    assert result.conflicting_version is None
    assert result.reported_commit is None


def test_a_text_that_is_no_conflict_has_only_the_four_contract_fields():
    result = explain(corpus("not_delta_java_cme.txt"))
    assert result.exception is None and result.conflicting_version is None
    assert result.fixes == []
    assert list(result.as_dict()) == CONTRACT_KEYS[:4]


def test_located_in_a_real_table_the_tree_is_typed_all_the_way_down():
    history = load_history(str(SPARK_TABLE))
    result = explain(corpus("databricks_append_real_commit.txt"), history)
    assert isinstance(result.conflicting_commit, ConflictingCommit)
    assert result.conflicting_commit.found_by == "version"
    assert result.conflicting_commit.commit.version == 3
    assert result.conflicting_commit.commit.kind == OperationClass.INSERT
    assert result.operations == Operations("WRITE", OperationClass.INSERT)
    assert result.likely_peer_versions == [4]
    assert isinstance(result.table, TableFacts)
    assert result.table.partition_columns == []
    assert result.isolation_level == IsolationLevel.SERIALIZABLE
    located = result.as_dict()["conflicting_commit"]
    assert located["txn_id"] == "8e95e72f-dee7-4e0b-abb6-a47b4bcc46d2"
    assert list(located)[-1] == "found_by"


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.txt")))
@pytest.mark.parametrize("with_table", [False, True])
def test_explain_conflict_is_the_typed_result_as_a_dict(name, with_table):
    text = corpus(name)
    history = load_history(str(SPARK_TABLE)) if with_table else None
    as_dict = explain(text, history).as_dict()
    result = explain_conflict(text, history)
    assert result == as_dict
    # The contract's key order and serialised bytes do not depend on the enums inside.
    assert json.dumps(result, default=str) == json.dumps(as_dict, default=str)
    if result["exception"] is not None:
        assert list(result) == CONTRACT_KEYS
        assert json.loads(json.dumps(result))["exception"] == str(result["exception"])
