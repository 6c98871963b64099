"""Commit summaries: recorded vs derived facts, engines, partitions, and windowed histories."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit.core import serialize
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.scope import read_scope
from audit.core.history.commit_summary import (
    EMPTY,
    decode_parameters,
    detect_engine,
    effective_isolation_level,
    summarize_commit,
)
from audit.core.history.digest import Interner
from audit.core.history.summarize import rederive_isolation, summarize_commits
from audit.core.history.summary import history_from_log, load_history
from audit.core.log import open_log, parse_commit
from tests.support import scenarios
from tests.support.hand_commits import write_commit
from tests.support.paths import DELTA_TABLES

TABLES = DELTA_TABLES


def commit_of(version: int, *actions: dict) -> bytes:
    return b"\n".join(orjson.dumps(a) for a in actions)


def test_it_takes_in_commit_timestamp_over_the_commit_info_timestamp():
    data = commit_of(
        3,
        {"commitInfo": {"timestamp": 1000, "inCommitTimestamp": 2000, "operation": "WRITE"}},
        {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "dataChange": True}},
    )
    summary = summarize_commit(parse_commit(3, data))
    assert summary.timestamp == 2000
    assert summary.facts["timestamp"] == "recorded"


def test_it_falls_back_to_the_file_time_and_says_so():
    commit = parse_commit(
        0, commit_of(0, {"add": {"path": "a", "partitionValues": {}, "dataChange": True}})
    )
    commit.file_modification_time = 123
    summary = summarize_commit(commit)
    assert (summary.timestamp, summary.facts["timestamp"]) == (123, "derived")


def test_it_decodes_json_encoded_operation_parameters_and_keeps_plain_text():
    params = decode_parameters(
        {
            "partitionBy": '["p"]',
            "mode": "Append",
            "predicate": '["(id#1 > 5)"]',
            "odd": "[not json",
        }
    )
    assert params == {
        "partitionBy": ["p"],
        "mode": "Append",
        "predicate": ["(id#1 > 5)"],
        "odd": "[not json",
    }


@pytest.mark.parametrize(
    "info, engine",
    [
        ({"engineInfo": "Apache-Spark/3.5.0 Delta-Lake/3.0.0"}, "spark"),
        ({"engineInfo": "Databricks-Runtime/14.3.x-photon-scala2.12"}, "databricks"),
        ({"engineInfo": "delta-rs:py-1.6.6", "clientVersion": "delta-rs.py-1.6.6"}, "delta-rs"),
        ({"engineInfo": "trino/435"}, "other"),
        ({"isBlindAppend": True, "isolationLevel": "Serializable"}, "spark"),
        ({}, "unknown"),
    ],
)
def test_it_detects_the_writer_engine(info, engine):
    assert detect_engine(info) == engine


@pytest.mark.parametrize(
    "engine, value, level",
    [
        ("delta-rs", "writeSerializable", "WriteSerializable"),
        ("delta-rs", "WriteSerializable", "Serializable"),  # delta-rs does not parse it
        ("delta-rs", None, "Serializable"),
        ("databricks", None, "WriteSerializable"),
        ("databricks", "Serializable", "Serializable"),
        ("spark", None, "Serializable"),
        ("unknown", None, None),
    ],
)
def test_the_effective_isolation_level_depends_on_the_engine(engine, value, level):
    properties = {} if value is None else {"delta.isolationLevel": value}
    assert effective_isolation_level(engine, properties) == level


def test_it_records_spark_facts_and_derives_delta_rs_ones(tmp_path):
    spark = load_history(str(TABLES / "golden" / "basic-with-inserts-updates"))
    update = spark.summary(1)
    assert update.facts == {
        "timestamp": "recorded",
        "read_version": "recorded",
        "blind_append": "recorded",
        "isolation_level": "recorded",
    }
    assert update.predicate is not None and "#" not in update.predicate.sql

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1], "p": ["x"]}), partition_by=["p"])
    write_deltalake(path, pa.table({"a": [2], "p": ["y"]}), mode="append")
    write_deltalake(
        path,
        pa.table({"a": [3], "p": ["y"]}),
        mode="append",
        commit_properties=CommitProperties(
            custom_metadata={"isBlindAppend": True, "readVersion": 1}
        ),
    )
    DeltaTable(path).delete("p = 'x'")
    history = load_history(path)
    append, recorded, delete = history.summary(1), history.summary(2), history.summary(3)
    assert (append.blind_append, append.facts["blind_append"]) == (True, "derived")
    assert (append.isolation_level, append.facts["isolation_level"]) == ("Serializable", "derived")
    assert append.added_partitions == frozenset({(("p", "y"),)})
    assert (recorded.blind_append, recorded.facts["blind_append"]) == (True, "recorded")
    assert recorded.read_version == 1
    assert delete.blind_append is False and delete.removed_partitions == frozenset({(("p", "x"),)})
    assert delete.predicate.columns == frozenset({"p"})


def test_an_overwrite_is_never_a_blind_append(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1]}))
    write_deltalake(path, pa.table({"a": [2]}), mode="overwrite")
    assert load_history(path).summary(1).blind_append is False


def test_a_window_of_history_ends_in_the_same_state_as_a_full_load(tmp_path):
    path = str(tmp_path / "t")
    for i in range(8):
        write_deltalake(
            path, pa.table({"a": [i], "p": [f"v{i % 3}"]}), partition_by=["p"], mode="append"
        )
        if i % 3 == 2:
            DeltaTable(path).delete(f"a = {i - 1}")
    log = open_log(path)
    full = history_from_log(log)
    window = history_from_log(log, start=5)
    assert [s.version for s in window.summaries] == list(range(5, full.latest_version + 1))
    assert window.state.files.keys() == full.state.files.keys() == log.snapshot().files.keys()
    assert window.state.version == full.state.version
    assert window.partition_columns_at(6) == ["p"]


def _action(kind: str, path: str, day: str, data_change: bool) -> dict:
    return {kind: {"path": path, "partitionValues": {"day": day}, "dataChange": data_change}}


def test_it_keeps_what_a_compaction_added_and_the_partitions_it_removed_from():
    # Not Hive-style: the partitions are only in partitionValues, not in the paths.
    commit = parse_commit(
        7,
        commit_of(
            7,
            {"commitInfo": {"operation": "OPTIMIZE", "readVersion": 6}},
            _action("remove", "x/part-1.parquet", "a", False),
            _action("remove", "y/part-2.parquet", "b", False),
            _action("add", "x/part-3.parquet", "a", False),
            _action("add", "y/part-4.parquet", "b", False),
        ),
    )
    compaction = summarize_commit(commit)
    assert compaction.compacted_paths == {"x/part-3.parquet", "y/part-4.parquet"}
    assert compaction.compacted_removed_partitions == {(("day", "a"),), (("day", "b"),)}
    assert not compaction.data_change and not compaction.added_paths
    assert not compaction.removed_partitions
    assert compaction.removed_paths_all == {"x/part-1.parquet", "y/part-2.parquet"}
    # The audit reads the compaction's scope from them (it used to parse `day=a/` paths).
    history = scenarios.history(
        [scenarios.summary(6, adds={"x/part-1.parquet": {"day": "a"}}), compaction],
        partition_columns=["day"],
    )
    scope = read_scope(compaction, TableContext(history), 6)
    assert scope.kind == "partitions" and scope.partitions == {(("day", "a"),), (("day", "b"),)}


def test_commits_that_compact_nothing_share_one_empty_set():
    mixed = summarize_commit(
        parse_commit(
            3,
            commit_of(
                3,
                {"commitInfo": {"operation": "WRITE"}},
                _action("add", "new.parquet", "a", True),
                _action("remove", "old.parquet", "a", True),
            ),
        )
    )
    assert mixed.added_paths == {"new.parquet"} and mixed.removed_partitions == {(("day", "a"),)}
    assert mixed.compacted_paths is EMPTY and mixed.compacted_removed_partitions is EMPTY


def test_compaction_fields_survive_the_row_round_trip_and_default_for_older_rows():
    compaction = summarize_commit(
        parse_commit(
            2,
            commit_of(
                2,
                {"commitInfo": {"operation": "OPTIMIZE"}},
                _action("remove", "x/1.parquet", "a", False),
                _action("add", "x/2.parquet", "a", False),
            ),
        )
    )
    row = serialize.summary_to_row(compaction)
    assert serialize.summary_from_row(row) == compaction
    assert serialize.summary_from_row(serialize.summary_to_row(compaction, paths=False)) == (
        dataclasses.replace(
            compaction, compacted_paths=EMPTY, removed_paths_all=frozenset(), added_paths=EMPTY
        )
    )
    nested = orjson.loads(row["nested"])
    del nested["compacted_paths"], nested["compacted_removed_partitions"]
    older = serialize.summary_from_row({**row, "nested": orjson.dumps(nested).decode()})
    assert older.compacted_paths is EMPTY and older.compacted_removed_partitions is EMPTY


def _appends(path: str, count: int) -> None:
    write_deltalake(path, pa.table({"a": [0], "p": ["x"]}), partition_by=["p"])
    for i in range(1, count):
        write_deltalake(path, pa.table({"a": [i], "p": ["x"]}), mode="append")


def test_a_whole_log_s_summaries_share_their_facts_and_parameters(tmp_path):
    path = str(tmp_path / "t")
    _appends(path, 1)
    # Hand-written appends: delta-rs writes its parameters in no fixed key order (and a
    # different order is a different dict: the report keeps the log's order).
    info = {"operationParameters": {"mode": "Append", "partitionBy": '["p"]'}}
    for version in (1, 2, 3):
        write_commit(Path(path), version, info=info)
    summaries = load_history(path).summaries
    first, *rest = summaries[1:]
    # Equal appends: one dict for all of them after the first (which holds its own as JSON
    # text, commit_record.pack_parameters), not one per commit.
    for other in rest:
        assert other.facts is first.facts
        assert other.operation_parameters is rest[0].operation_parameters
        assert other.operation_parameters == first.operation_parameters
        assert other.app_ids is first.app_ids == {}
    assert first.facts == {
        "timestamp": "recorded",
        "read_version": "unknown",
        "blind_append": "derived",
        "isolation_level": "unknown",
    }
    assert first.operation_parameters == {"mode": "Append", "partitionBy": ["p"]}


def test_re_deriving_isolation_leaves_the_other_summaries_shared_facts_alone(tmp_path):
    path = str(tmp_path / "t")
    _appends(path, 3)
    one, two = load_history(path).summaries[1:]
    assert one.facts is two.facts
    rederive_isolation([one], {"delta.isolationLevel": "snapshotIsolation"}, Interner())
    assert one.isolation_level == "SnapshotIsolation"
    assert one.facts is not two.facts and one.facts == two.facts  # its own copy, same facts
    one.facts["isolation_level"] = "unknown"
    assert two.facts["isolation_level"] == "derived"


def test_summaries_for_the_spark_job_share_no_dicts(tmp_path):
    # workers/spark/job.py re-derives facts in place on what summarize_commits returns.
    path = str(tmp_path / "t")
    _appends(path, 3)
    one, two = list(summarize_commits(open_log(path).iter_commits(), [], []))[1:]
    assert one.facts == two.facts and one.facts is not two.facts
    assert one.operation_parameters is not two.operation_parameters
    assert one.app_ids is not two.app_ids


def test_a_history_finds_its_summaries_by_version_in_or_out_of_order(tmp_path):
    path = str(tmp_path / "t")
    _appends(path, 4)
    history = load_history(path)
    assert [history.summary(v).version for v in range(4)] == [0, 1, 2, 3]
    assert history.summary(4) is None and history.summary(-1) is None
    one, two, three, four = history.summaries
    shuffled = dataclasses.replace(history, summaries=[two, one, four, three])
    assert [shuffled.summary(v) for v in range(4)] == [one, two, three, four]
    gappy = dataclasses.replace(history, summaries=[one, three, four])
    assert (gappy.summary(1), gappy.summary(2), gappy.summary(3)) == (None, three, four)
