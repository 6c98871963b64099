"""Conflict-exception explanations: parsing every wording, locating commits, tailored fixes."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from audit.core.explain import (
    APPEND,
    CANONICAL_EXCEPTIONS,
    DELETE_DELETE,
    DELETE_READ,
    METADATA,
    PROTOCOL,
    TRANSACTION,
    WRITE,
    explain_conflict,
    likely_peer_versions,
    locate_conflicting_commit,
    parse_exception,
    parse_partition_hint,
)
from audit.core.model import CommitSummary, Metadata, TableState
from tests.support.paths import DELTA_TABLES, EXCEPTIONS

CORPUS = EXCEPTIONS
TABLES = DELTA_TABLES


def corpus(name: str) -> str:
    return (CORPUS / name).read_text()


# ------------------------------------------------------------------ the corpus, file by file
# file -> (exception, error_class, engine, version, partitions, root_of_table)
EXPECTED = {
    "spark_append_partition.txt": (APPEND, None, "spark", 3, [{"date": "2024-01-01"}], False),
    "oss_append_error_class_root.txt": (APPEND, "DELTA_CONCURRENT_APPEND", "spark", None, [], True),
    "databricks_append_real_commit.txt": (
        APPEND,
        "DELTA_CONCURRENT_APPEND",
        "databricks",
        3,
        [],
        True,
    ),
    "databricks_append_new_wording.txt": (
        APPEND,
        "DELTA_CONCURRENT_APPEND.WITHOUT_HINT",
        "databricks",
        3,
        [],
        False,
    ),
    "delta_connect_pytest_append.txt": (APPEND, None, "databricks", None, [], True),
    "delta_rs_append.txt": (APPEND, None, "delta-rs", None, [], False),
    "pyspark_py4j_delete_read.txt": (
        DELETE_READ,
        None,
        "spark",
        2,
        [{"date": "2024-01-01"}],
        False,
    ),
    "oss_delete_read_error_class.txt": (
        DELETE_READ,
        "DELTA_CONCURRENT_DELETE_READ",
        "spark",
        2,
        [{"part": "2"}],
        False,
    ),
    "databricks_delete_read_auto_optimize.txt": (
        DELETE_READ,
        "DELTA_CONCURRENT_DELETE_READ",
        "databricks",
        1182,
        [{"country": "DE"}],
        False,
    ),
    "delta_rs_delete_read.txt": (DELETE_READ, None, "delta-rs", None, [], False),
    "spark_delete_delete.txt": (DELETE_DELETE, None, "spark", 57, [{"country": "US"}], False),
    "databricks_delete_delete_zorder.txt": (
        DELETE_DELETE,
        "DELTA_CONCURRENT_DELETE_DELETE",
        "databricks",
        412,
        [],
        True,
    ),
    "delta_rs_delete_delete.txt": (DELETE_DELETE, None, "delta-rs", None, [], False),
    "delta_rs_delete_delete_rust.txt": (DELETE_DELETE, None, "delta-rs", None, [], False),
    "spark_metadata_changed.txt": (METADATA, None, "spark", 1, [], False),
    "databricks_metadata_changed_tahoe.txt": (METADATA, None, "databricks", 1, [], False),
    "oss_metadata_changed_error_class.txt": (
        METADATA,
        "DELTA_METADATA_CHANGED",
        "spark",
        18,
        [],
        False,
    ),
    "delta_rs_metadata_changed.txt": (METADATA, None, "delta-rs", None, [], False),
    "oss_protocol_changed_empty_dir.txt": (
        PROTOCOL,
        "DELTA_PROTOCOL_CHANGED",
        "spark",
        0,
        [],
        False,
    ),
    "databricks_protocol_changed.txt": (
        PROTOCOL,
        "DELTA_PROTOCOL_CHANGED",
        "databricks",
        96,
        [],
        False,
    ),
    "delta_rs_protocol_changed.txt": (PROTOCOL, None, "delta-rs", None, [], False),
    "spark_concurrent_transaction.txt": (TRANSACTION, None, "spark", 3, [], False),
    "databricks_concurrent_transaction_error_class.txt": (
        TRANSACTION,
        "DELTA_CONCURRENT_TRANSACTION",
        "databricks",
        20451,
        [],
        False,
    ),
    "delta_rs_concurrent_transaction.txt": (TRANSACTION, None, "delta-rs", None, [], False),
    "oss_concurrent_write.txt": (WRITE, "DELTA_CONCURRENT_WRITE", "spark", None, [], False),
    "delta_rs_version_exists.txt": (WRITE, None, "delta-rs", 7, [], False),
    "truncated_json.txt": (
        APPEND,
        "DELTA_CONCURRENT_APPEND",
        "databricks",
        3,
        [{"date": "2024-03-05", "country": "US"}],
        False,
    ),
    "hostile_script.txt": (
        APPEND,
        None,
        "spark",
        9,
        [{"region": "<script>alert('x')</script>"}],
        False,
    ),
}
NOT_CONFLICTS = ["not_delta_java_cme.txt", "not_delta_python.txt"]


def test_the_corpus_and_the_expectations_agree():
    files = {p.name for p in CORPUS.glob("*.txt")}
    assert files == set(EXPECTED) | set(NOT_CONFLICTS)


def test_every_exception_is_covered_in_at_least_two_wordings():
    by_exception: dict[str, set[str]] = {}
    for expected in EXPECTED.values():
        by_exception.setdefault(expected[0], set()).add(expected[2])
    for exception in CANONICAL_EXCEPTIONS[:6]:
        engines = by_exception[exception]
        assert {"spark", "databricks"} <= engines or len(engines) >= 2, exception
        assert "delta-rs" in engines, exception  # delta-rs has all six


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_parses_each_wording(name):
    exception, error_class, engine, version, partitions, root = EXPECTED[name]
    parsed = parse_exception(corpus(name))
    assert parsed is not None
    assert parsed.exception == exception
    assert parsed.error_class == error_class
    assert parsed.engine == engine
    assert parsed.version == version
    assert parsed.partitions == partitions
    assert parsed.root_of_table is root
    assert parsed.message and "\n" not in parsed.message and len(parsed.message) <= 1000
    assert "Conflicting commit" not in parsed.message
    assert not parsed.message.startswith(("io.delta", "com.databricks", ":", "["))


@pytest.mark.parametrize("name", NOT_CONFLICTS)
def test_unrelated_text_is_not_a_conflict(name):
    assert parse_exception(corpus(name)) is None
    result = explain_conflict(corpus(name))
    assert result == {
        "exception": None,
        "conflicting_version": None,
        "explanation": result["explanation"],
        "fixes": [],
    }
    assert result["explanation"].startswith("This is not a Delta conflict exception")


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "   \n",
        "hello world",
        '{"version": 3}',
        "Conflicting commit: {",
        "[DELTA_FOO] nope",
        "Version mismatch",
    ],
)
def test_garbage_is_none(garbage):
    assert parse_exception(garbage) is None


def test_non_text_is_none():
    assert parse_exception(None) is None  # type: ignore[arg-type]
    assert explain_conflict(b"bytes")["exception"] is None  # type: ignore[arg-type]


def test_it_reads_files_and_the_conflicting_commit_json():
    parsed = parse_exception(corpus("pyspark_py4j_delete_read.txt"))
    assert parsed.files == ["part-00001-563449ea-73e4-4d7d-8ba8-53fee1f8a5ff.c000.snappy.parquet"]
    assert parsed.conflicting_commit_complete is True
    commit = parsed.conflicting_commit
    assert commit["operation"] == "DELETE"
    assert commit["txnId"] == "a9487f5e-84c9-44d8-a6d6-f7444e8405a9"
    assert commit["operationParameters"] == {"predicate": '["(col1#1939 = 2)"]'}
    databricks = parse_exception(corpus("databricks_delete_read_auto_optimize.txt"))
    assert databricks.conflicting_commit["job"]["jobName"] == "orders_ingest"
    assert databricks.conflicting_commit["operationParameters"]["auto"] is True
    assert databricks.files == [
        "country=DE/part-00003-9f0c4f5e-1d7e-4b43-8a0e-6f6f2a0c1b2d.c000.snappy.parquet"
    ]


def test_databricks_new_wording_gives_operation_and_table():
    parsed = parse_exception(corpus("databricks_append_new_wording.txt"))
    assert parsed.concurrent_operation == "WRITE"
    assert parsed.table_name == "main.sales.orders"
    assert parsed.message.startswith("Transaction conflict detected.")


def test_a_truncated_json_keeps_its_complete_top_level_fields():
    parsed = parse_exception(corpus("truncated_json.txt"))
    assert parsed.conflicting_commit_complete is False
    commit = parsed.conflicting_commit
    assert commit["version"] == 3
    assert commit["operation"] == "WRITE"
    assert commit["readVersion"] == 2
    assert commit["isBlindAppend"] is True
    assert "operationMetrics" not in commit and "operationParameters" not in commit
    result = explain_conflict(corpus("truncated_json.txt"))
    assert any("cut off" in note for note in result["notes"])
    assert result["reported_commit"]["complete"] is False


def test_a_number_cut_off_at_the_end_is_not_trusted():
    text = 'io.delta.exceptions.ConcurrentAppendException: x\nConflicting commit: {"timestamp":16,"version":12'
    parsed = parse_exception(text)
    assert parsed.conflicting_commit == {"timestamp": 16}
    assert parsed.version is None


def test_invalid_json_like_a_redacted_kb_article_still_gives_fields():
    text = (
        "com.databricks.sql.transaction.tahoe.MetadataChangedException: The metadata of the Delta "
        'table has been changed by a concurrent update. Conflicting commit: {"version":xxxx,'
        '"timestamp":xxx,"operation":"SET TBLPROPERTIES","operationParameters":{"properties":'
        '{"delta.autoOptimize":"true"}},"isolationLevel":"SnapshotIsolation","isBlindAppend":true}'
        " Refer to https://docs.azuredatabricks.net/delta/isolation-level.html for more details."
    )
    parsed = parse_exception(text)
    assert parsed.exception == METADATA
    assert parsed.conflicting_commit_complete is False
    assert parsed.conflicting_commit == {
        "operation": "SET TBLPROPERTIES",
        "isolationLevel": "SnapshotIsolation",
        "isBlindAppend": True,
    }
    assert parsed.version is None


def test_names_inside_the_json_do_not_decide_the_exception():
    parsed = parse_exception(corpus("hostile_script.txt"))
    assert parsed.exception == APPEND  # userName says ConcurrentDeleteDeleteException
    assert parsed.conflicting_commit_complete is True  # "}{" inside a string did not end it
    assert parsed.conflicting_commit["operationParameters"]["predicate"] == "[\"x = '}{'\"]"
    assert parsed.conflicting_commit["txnId"] == "<script>"


def test_hostile_strings_stay_text_and_lose_control_characters():
    result = explain_conflict(corpus("hostile_script.txt"))
    flat = json.dumps(result)
    assert "\x1b" not in result["explanation"]
    assert "<script>alert('x')</script>" in result["explanation"]  # data, shown as data
    assert "t.region = '<script>alert(''x'')</script>'" in " ".join(result["fixes"])  # quoted
    assert json.loads(flat) == result


def test_huge_input_is_bounded_and_fast():
    header = corpus("spark_append_partition.txt")
    start = time.perf_counter()
    parsed = parse_exception(header + "x" * 5_000_000)
    assert parsed is not None and parsed.exception == APPEND and parsed.input_truncated
    assert parse_exception("a" * 3_000_000) is None
    pathological = (
        "Files were added to " * 50_000
        + "part-" * 50_000
        + "(for example " * 20_000
        + "Conflicting commit: {"
        + '"a":' * 50_000
        + "[" * 100_000
    )
    parse_exception(pathological)
    assert time.perf_counter() - start < 3  # measured ~0.3 s


def test_partition_hints_split_on_known_columns():
    assert parse_partition_hint("[date=2024-01-01, country=US]") == {
        "date": "2024-01-01",
        "country": "US",
    }
    tricky = "city=Paris, France, zone=a=b"
    assert parse_partition_hint(tricky, ["city", "zone"]) == {
        "city": "Paris, France",
        "zone": "a=b",
    }
    assert parse_partition_hint("d=__HIVE_DEFAULT_PARTITION__") == {"d": None}


# ------------------------------------------------------------------ explanations without a table


def test_the_contract_keys_and_fixes_for_each_exception():
    wanted = {
        "spark_append_partition.txt": "t.date = '2024-01-01'",
        "databricks_delete_read_auto_optimize.txt": "auto compaction",
        "databricks_delete_delete_zorder.txt": "ZORDER BY",
        "spark_delete_delete.txt": "two compactions",
        "oss_metadata_changed_error_class.txt": "ADD COLUMNS (version 18)",
        "oss_protocol_changed_empty_dir.txt": "Create the table once",
        "delta_rs_protocol_changed.txt": "upgrade",
        "spark_concurrent_transaction.txt": "checkpointLocation",
        "delta_rs_version_exists.txt": "max_commit_retries",
        "delta_rs_append.txt": "Partition the table",
    }
    for name, phrase in wanted.items():
        result = explain_conflict(corpus(name))
        assert {"exception", "conflicting_version", "explanation", "fixes"} <= set(result)
        assert result["exception"] == EXPECTED[name][0]
        assert result["fixes"], name
        assert phrase.lower() in " ".join(result["fixes"]).lower(), (name, result["fixes"])
        assert result["explanation"].startswith(result["exception"])
        json.dumps(result)


def test_without_a_table_the_reported_commit_drives_the_explanation():
    result = explain_conflict(corpus("spark_append_partition.txt"))
    assert result["conflicting_version"] == 3
    assert result["conflicting_commit"] is None  # not located: no table
    assert result["reported_commit"]["txnId"] == "2b8c1a77-4a5e-4a8b-9d5e-5a2f8e0c1d11"
    assert result["operations"] == {"conflicting": "WRITE", "conflicting_kind": "INSERT"}
    assert "blind append" in result["explanation"]
    assert any("'delta.isolationLevel' = 'WriteSerializable'" in fix for fix in result["fixes"])
    # The table is partitioned (the hint says so): no "partition the table" advice.
    assert not any(fix.startswith("Partition the table") for fix in result["fixes"])


# ------------------------------------------------------------------ a history built by hand


def make_summary(version: int, **overrides) -> CommitSummary:
    values = dict(
        version=version,
        timestamp=1_700_000_000_000 + version * 60_000,
        operation="WRITE",
        operation_parameters={"mode": "Append"},
        operation_metrics={},
        read_version=version - 1 if version else None,
        isolation_level="Serializable",
        blind_append=True,
        facts={"read_version": "recorded", "isolation_level": "recorded"},
        engine="spark",
        engine_info="Apache-Spark/3.5.0 Delta-Lake/3.1.0",
        txn_id=f"txn-{version}",
        user_id=None,
        user_name=None,
        job=None,
        cluster_id=None,
        files_added=1,
        files_removed=0,
        bytes_added=100,
        bytes_removed=0,
        data_change=True,
        added_partitions=frozenset(),
        removed_partitions=frozenset(),
        removed_paths=frozenset(),
        removed_paths_all=frozenset(),
        added_paths=frozenset(),
        predicate=None,
        metadata_changed=False,
        protocol_changed=False,
        app_ids={},
        domains=frozenset(),
        has_deletion_vectors=False,
    )
    values.update(overrides)
    return CommitSummary(**values)


@dataclass
class FakeHistory:
    table_uri: str
    state: TableState
    summaries: list[CommitSummary]


def fake_history(summaries, partition_columns=(), properties=None) -> FakeHistory:
    metadata = Metadata(
        id="t",
        schema_string=None,
        partition_columns=list(partition_columns),
        configuration=dict(properties or {}),
    )
    state = TableState(version=summaries[-1].version, metadata=metadata, protocol=None, files={})
    return FakeHistory("memory://t", state, summaries)


def spark_text(version: int, **fields) -> str:
    commit = {"version": version, "operation": "WRITE", "isBlindAppend": True, **fields}
    return (
        "io.delta.exceptions.ConcurrentAppendException: Files were added to partition "
        "[date=2024-01-01] by a concurrent update. Please try the operation again.\n"
        f"Conflicting commit: {json.dumps(commit)}\nRefer to https://docs.delta.io for details."
    )


def test_it_locates_by_version_and_finds_the_peers():
    summaries = [make_summary(0), make_summary(1), make_summary(2)]
    summaries += [
        make_summary(3, operation="MERGE", blind_append=False, read_version=1),
        make_summary(4, operation="DELETE", blind_append=False, read_version=2),
        make_summary(5, operation="UPDATE", blind_append=False, read_version=4),
    ]
    history = fake_history(summaries, partition_columns=["date"])
    result = explain_conflict(spark_text(2, txnId="txn-2"), history)
    assert result["conflicting_commit"]["found_by"] == "version"
    assert result["conflicting_commit"]["version"] == 2
    # [read_version, version) contains 2 for v3 (1..3) and v4 (2..4), not v5 (4..5)
    assert result["likely_peer_versions"] == [3, 4]
    assert likely_peer_versions(summaries, 2) == [3, 4]
    assert result["notes"] == []
    assert "partitioned by date" in result["explanation"]


def test_a_version_that_does_not_match_is_reported():
    history = fake_history(
        [make_summary(0), make_summary(1), make_summary(2, operation="OPTIMIZE")]
    )
    result = explain_conflict(spark_text(2, txnId="other"), history)
    assert result["conflicting_commit"]["version"] == 2
    assert any("does not match" in note and "OPTIMIZE" in note for note in result["notes"])


def test_it_locates_by_txn_id_then_by_timestamp():
    summaries = [make_summary(v) for v in range(6)]
    history = fake_history(summaries)
    parsed = parse_exception(spark_text(99, txnId="txn-4"))
    found, how, notes = locate_conflicting_commit(parsed, summaries)
    assert (found.version, how) == (4, "txnId")
    assert "Version 99 is not in this table's history" in notes[0]
    stamp = summaries[3].timestamp + 1_500
    text = (
        spark_text(0)
        .replace('"version": 0, ', "")
        .replace('"operation"', f'"timestamp": {stamp}, "operation"')
    )
    result = explain_conflict(text, history)
    assert result["conflicting_commit"]["found_by"] == "timestamp"
    assert result["conflicting_version"] == 3


def test_without_any_locator_it_lists_candidates():
    summaries = [
        make_summary(0),
        make_summary(1, operation="SET TBLPROPERTIES", metadata_changed=True),
    ]
    summaries += [make_summary(2), make_summary(3)]
    history = fake_history(summaries)
    result = explain_conflict(corpus("delta_rs_metadata_changed.txt"), history)
    assert result["conflicting_version"] is None
    assert result["candidate_versions"] == [1]


def test_fixes_follow_the_table():
    summaries = [make_summary(0), make_summary(1)]
    unpartitioned_dv = fake_history(summaries, properties={"delta.enableDeletionVectors": "true"})
    fixes = " ".join(
        explain_conflict(corpus("oss_append_error_class_root.txt"), unpartitioned_dv)["fixes"]
    )
    assert "Row-level concurrency already applies" in fixes
    plain = fake_history(summaries)
    fixes = " ".join(explain_conflict(corpus("oss_append_error_class_root.txt"), plain)["fixes"])
    assert "enable deletion vectors" in fixes and "Partition the table" in fixes
    ws = fake_history(summaries, properties={"delta.isolationLevel": "WriteSerializable"})
    result = explain_conflict(spark_text(1, txnId="txn-1"), ws)
    assert result["isolation_level"] == "WriteSerializable"
    assert any("failing writer enforced Serializable" in fix for fix in result["fixes"])
    delta_rs = explain_conflict(corpus("delta_rs_append.txt"), ws)
    assert delta_rs["isolation_level"] == "Serializable"  # delta-rs misreads the property
    assert any("expects 'writeSerializable'" in fix for fix in delta_rs["fixes"])


# ------------------------------------------------------------------ real tables, real loader


def test_it_explains_a_databricks_text_against_a_real_spark_table():
    from audit.core.history.summary import load_history

    history = load_history(str(TABLES / "spark" / "delta-1.2.1"))
    result = explain_conflict(corpus("databricks_append_real_commit.txt"), history)
    assert result["exception"] == APPEND
    assert result["conflicting_version"] == 3
    located = result["conflicting_commit"]
    assert located["found_by"] == "version"
    assert located["txn_id"] == "8e95e72f-dee7-4e0b-abb6-a47b4bcc46d2"
    assert located["operation"] == "WRITE" and located["kind"] == "INSERT"
    assert result["notes"] == []
    assert result["likely_peer_versions"] == [4]  # the UPDATE that read version 3
    assert result["table"]["partition_columns"] == []
    assert result["isolation_level"] == "Serializable"
    fixes = " ".join(result["fixes"])
    assert "'delta.isolationLevel' = 'WriteSerializable'" in fixes
    assert "Partition the table" in fixes


def test_it_explains_against_a_partitioned_table_with_deletion_vectors():
    from audit.core.history.summary import load_history

    history = load_history(str(TABLES / "golden" / "dv-partitioned-with-checkpoint"))
    result = explain_conflict(corpus("oss_delete_read_error_class.txt"), history)
    assert result["conflicting_commit"]["txn_id"] == "a9487f5e-84c9-44d8-a6d6-f7444e8405a9"
    fixes = " ".join(result["fixes"])
    assert "t.part = '2'" in fixes
    assert "liquid clustering" in fixes


def _delta_rs_conflict(tmp_path: Path, make_conflict) -> tuple[str, str]:
    pa = pytest.importorskip("pyarrow")
    deltalake = pytest.importorskip("deltalake")
    uri = str(tmp_path / "t")
    data = pa.table({"id": [1, 2, 3], "d": ["a", "b", "a"]})
    deltalake.write_deltalake(uri, data, partition_by=["d"])
    stale = deltalake.DeltaTable(uri)
    with pytest.raises(Exception) as err:
        make_conflict(deltalake, uri, data, stale)
    return uri, f"{type(err.value).__module__}.{type(err.value).__name__}: {err.value}"


@pytest.mark.parametrize(
    ("scenario", "exception"),
    [
        ("append", APPEND),
        ("delete_read", DELETE_READ),
        ("metadata", METADATA),
    ],
)
def test_it_explains_real_delta_rs_conflicts(tmp_path, scenario, exception):
    def conflict(deltalake, uri, data, stale):
        if scenario == "append":
            deltalake.write_deltalake(uri, data, mode="append")
            stale.delete("id = 1")
        elif scenario == "delete_read":
            deltalake.DeltaTable(uri).delete("d = 'a'")
            stale.delete("d = 'a'")
        else:
            deltalake.DeltaTable(uri).alter.add_columns([deltalake.Field("z", "string")])
            stale.alter.set_table_properties({"delta.appendOnly": "false"})

    from audit.core.history.summary import load_history

    uri, text = _delta_rs_conflict(tmp_path, conflict)
    parsed = parse_exception(text)
    assert parsed is not None, text
    assert (parsed.exception, parsed.engine) == (exception, "delta-rs")
    result = explain_conflict(text, load_history(uri))
    # Latest first: the commit that beat the stale writer.
    assert result["candidate_versions"][0] == 1
    assert result["table"]["partition_columns"] == ["d"]
