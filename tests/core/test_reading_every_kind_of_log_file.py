"""The log reader on each kind of log file: checkpoints, compaction files, cleaned-up logs,
time travel, table configuration (clustering, identity, txn, domains) and storage URIs."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from audit.core.errors import DeltaAuditError
from audit.core.log import (
    DeltaLog,
    iter_commits,
    list_log,
    open_log,
    parse_commit,
    read_checkpoint,
    read_commit,
    replay_log,
)
from audit.core.storage.stores import ArrowStore, LocalStore, open_store
from tests.support.logutil import (
    absolute_live_paths,
    batch,
    commit_file,
    copy_table,
    replay_from_scratch,
    table,
    write_history,
)

# --------------------------------------------------------------------------- checkpoints


def _same_state(a, b) -> None:
    assert a.version == b.version
    assert set(a.files) == set(b.files)
    assert a.metadata == b.metadata
    assert a.protocol == b.protocol
    assert a.txns == b.txns


def test_it_reads_a_classic_checkpoint_and_the_commits_after_it():
    path = table("golden/checkpoint")
    listing = list_log(str(path))
    assert listing.checkpoints == {10: ["00000000000000000010.checkpoint.parquet"]}
    assert listing.last_checkpoint["version"] == 10
    checkpoint = read_checkpoint(open_store(str(path)), 10, listing.checkpoints[10])
    assert checkpoint.metadata is not None and checkpoint.protocol is not None
    assert len(checkpoint.adds) == 1
    _same_state(replay_log(str(path)), replay_from_scratch(path))
    assert set(replay_log(str(path)).files) == {"15"}


def test_it_reads_a_multi_part_checkpoint():
    path = table("golden/multi-part-checkpoint")
    listing = list_log(str(path))
    assert listing.checkpoints == {
        1: [
            "00000000000000000001.checkpoint.0000000001.0000000002.parquet",
            "00000000000000000001.checkpoint.0000000002.0000000002.parquet",
        ]
    }
    checkpoint = read_checkpoint(open_store(str(path)), 1, listing.checkpoints[1])
    assert len(checkpoint.adds) == 10
    assert checkpoint.metadata.configuration == {"delta.checkpointInterval": "1"}


def test_it_ignores_an_incomplete_multi_part_checkpoint(tmp_path):
    path = copy_table("golden/multi-part-checkpoint", tmp_path)
    (path / "_delta_log/00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    listing = list_log(str(path))
    assert listing.checkpoints == {}
    assert len(replay_log(str(path)).files) == 10  # rebuilt from the commits


@pytest.mark.parametrize("name", ["golden/v2-checkpoint-parquet", "golden/v2-checkpoint-json"])
def test_it_reads_v2_checkpoints_with_sidecars(name):
    path = table(name)
    listing = list_log(str(path))
    [top] = listing.checkpoints[2]
    assert top.startswith("00000000000000000002.checkpoint.") and top.count(".") == 3
    checkpoint = read_checkpoint(open_store(str(path)), 2, listing.checkpoints[2])
    # Every add lives in the two sidecar files, none in the top-level checkpoint file.
    assert len(checkpoint.adds) == 4
    assert checkpoint.protocol.reader_features == ["v2Checkpoint"]
    assert checkpoint.unknown_actions == []
    state = replay_log(str(path))
    assert set(state.files) == {a.path for a in checkpoint.adds}
    _same_state(state, replay_from_scratch(path))


@pytest.mark.parametrize("name", ["golden/v2-checkpoint-parquet", "golden/v2-checkpoint-json"])
def test_it_falls_back_to_commits_when_a_sidecar_is_missing(name, tmp_path):
    path = copy_table(name, tmp_path)
    sidecars = sorted((path / "_delta_log/_sidecars").glob("*.parquet"))
    sidecars[0].unlink()
    listing = list_log(str(path))
    with pytest.raises(DeltaAuditError, match=sidecars[0].name):
        read_checkpoint(open_store(str(path)), 2, listing.checkpoints[2])
    assert len(replay_log(str(path)).files) == 4


def test_it_lists_several_checkpoints_and_prefers_the_latest():
    path = table("golden/only-checkpoint-files")
    listing = list_log(str(path))
    assert sorted(listing.checkpoints) == [1, 2]
    _same_state(replay_log(str(path)), replay_from_scratch(path))
    _same_state(replay_log(str(path), 1), replay_from_scratch(path, 1))


def test_it_recovers_metadata_when_the_checkpoint_lacks_it():
    # The checkpoint has no metaData; all commits are there, so replay starts from 0.
    for name in (
        "golden/deltalog-state-reconstruction-from-checkpoint-missing-metadata",
        "golden/deltalog-state-reconstruction-from-checkpoint-missing-protocol",
    ):
        state = replay_log(str(table(name)))
        assert state.metadata is not None and state.protocol is not None, name


def test_it_reports_missing_metadata_and_protocol_as_none():
    assert (
        replay_log(str(table("golden/deltalog-state-reconstruction-without-metadata"))).metadata
        is None
    )
    assert (
        replay_log(str(table("golden/deltalog-state-reconstruction-without-protocol"))).protocol
        is None
    )


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    "name",
    [
        "golden/canonicalized-paths-normal-a",
        "golden/canonicalized-paths-normal-b",
        "golden/canonicalized-paths-special-a",
        "golden/canonicalized-paths-special-b",
    ],
)
def test_it_matches_removes_to_adds_across_path_spellings(name):
    # add "/some/path", remove "file:/some/path" or "file:///some/path": the same file.
    path = str(table(name))
    assert len(replay_log(path, 0).files) == 1
    assert replay_log(path, 1).files == {}


def test_it_decodes_paths_once():
    state = replay_log(str(table("golden/log-replay-special-characters-b")))
    assert set(state.files) == {"special p@#h"}
    state = replay_log(str(table("golden/hive/deltatbl-special-chars-in-partition-column")))
    # Raw "c2=+%20%253D%25250/..." decodes once; the '+' stays, the Hive escapes stay.
    assert {p.split("/")[0] for p in state.files} == {"c2=+ %3D%250", "c2=+ %3D%251"}


def test_it_keeps_a_file_removed_and_re_added_in_one_commit():
    # log-replay-dv-key-cases: each commit adds the file with a new DV *before* removing the old.
    state = replay_log(str(table("golden/log-replay-dv-key-cases")))
    assert len(state.files) == 1
    assert next(iter(state.files.values())).deletion_vector is not None


# --------------------------------------------------------------------------- compaction files


def _write_compaction(path: Path, start: int, end: int) -> str:
    """A valid `start.end.compacted.json` per PROTOCOL.md: the reconciled actions of the range."""
    adds, removes, metadata, protocol = {}, {}, None, None
    for version in range(start, end + 1):
        for line in commit_file(path, version).read_bytes().splitlines():
            action = orjson.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action
                removes.pop(action["add"]["path"], None)
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
                removes[action["remove"]["path"]] = action
            elif "metaData" in action:
                metadata = action
            elif "protocol" in action:
                protocol = action
    lines = [a for a in (protocol, metadata) if a] + list(adds.values()) + list(removes.values())
    name = f"{start:020d}.{end:020d}.compacted.json"
    (path / "_delta_log" / name).write_bytes(b"\n".join(orjson.dumps(a) for a in lines) + b"\n")
    return name


def test_it_tolerates_compaction_files_without_changing_results(tmp_path):
    path = tmp_path / "t"
    write_history(path, 6)
    before_state = replay_log(str(path))
    before_commits = list(iter_commits(str(path)))
    name = _write_compaction(path, 1, 4)
    listing = list_log(str(path))
    assert listing.compactions == [(1, 4, name)]
    assert listing.commit_versions == list(range(6))
    _same_state(replay_log(str(path)), before_state)
    assert list(iter_commits(str(path))) == before_commits
    for version in range(6):
        assert set(replay_log(str(path), version).files) == set(
            replay_from_scratch(path, version).files
        )


def test_it_tolerates_compaction_files_written_by_deltalake(tmp_path):
    path = tmp_path / "t"
    dt = write_history(path, 5)
    dt.compact_logs(1, 3)
    listing = list_log(str(path))
    assert [c[:2] for c in listing.compactions] == [(1, 3)]
    assert absolute_live_paths(path, replay_log(str(path))) == set(DeltaTable(path).file_uris())


# --------------------------------------------------------------------------- cleaned-up logs


def _cleaned_table(tmp_path: Path, delete_checkpoint_commit: bool) -> Path:
    path = tmp_path / "t"
    dt = write_history(path, 10)
    dt.create_checkpoint()  # at version 9
    for i in range(2):
        write_deltalake(path, batch([100 + i]), mode="append", partition_by=["date"])
    last = 8 if not delete_checkpoint_commit else 9
    for version in range(last + 1):
        commit_file(path, version).unlink()
    return path


@pytest.mark.parametrize("delete_checkpoint_commit", [False, True])
def test_it_reports_the_first_available_version_of_a_cleaned_up_log(
    tmp_path, delete_checkpoint_commit
):
    path = _cleaned_table(tmp_path, delete_checkpoint_commit)
    listing = list_log(str(path))
    assert listing.first_available_version == 9
    assert listing.latest_version == 11
    assert listing.commit_versions == ([10, 11] if delete_checkpoint_commit else [9, 10, 11])
    state = replay_log(str(path))
    assert absolute_live_paths(path, state) == set(DeltaTable(path).file_uris())
    assert replay_log(str(path), 9).version == 9
    assert [c.version for c in iter_commits(str(path))] == listing.commit_versions


def test_it_refuses_versions_removed_by_log_cleanup(tmp_path):
    path = _cleaned_table(tmp_path, delete_checkpoint_commit=False)
    for call in (
        lambda: replay_log(str(path), 5),
        lambda: read_commit(str(path), 3, list_log(str(path))),
        lambda: list(iter_commits(str(path), None, 2, 11)),
    ):
        with pytest.raises(DeltaAuditError, match="removed by log cleanup") as err:
            call()
        assert "starts at version 9" in str(err.value)


def test_it_refuses_versions_after_the_latest():
    with pytest.raises(DeltaAuditError, match="version 7 does not exist.*latest version .* is 3"):
        replay_log(str(table("golden/snapshot-data3")), 7)


# --------------------------------------------------------------------------- time travel


def test_it_time_travels_like_deltalake(tmp_path):
    path = tmp_path / "t"
    write_history(path, 9)
    DeltaTable(path).create_checkpoint()  # at 8: later versions start from it
    write_deltalake(path, batch([7, 8]), mode="overwrite", partition_by=["date"])
    write_deltalake(path, batch([9]), mode="append", partition_by=["date"])
    for version in range(0, 11):
        ours = absolute_live_paths(path, replay_log(str(path), version))
        assert ours == set(DeltaTable(path, version=version).file_uris()), version


@pytest.mark.parametrize(
    "name",
    [
        "golden/snapshot-data2-deleted",
        "golden/basic-with-inserts-deletes-checkpoint",
        "spark/delta-1.2.1",
    ],
)
def test_it_time_travels_like_deltalake_on_spark_tables(name):
    path = table(name)
    for version in range(list_log(str(path)).latest_version + 1):
        ours = absolute_live_paths(path, replay_log(str(path), version))
        assert ours == set(DeltaTable(str(path), version=version).file_uris()), version


# --------------------------------------------------------------------------- table configuration


def test_it_reads_identity_columns_from_the_schema():
    state = replay_log(str(table("spark/identity_test_written_by_version_5")))
    [column] = state.identity_columns
    assert (column.name, column.start, column.step, column.high_water_mark) == ("id", 1, 1, 4)
    assert column.allow_explicit_insert is True


def _write_log(path: Path, commits: list[list[dict]]) -> Path:
    log = path / "_delta_log"
    log.mkdir(parents=True)
    for version, actions in enumerate(commits):
        commit_file(path, version).write_bytes(b"\n".join(orjson.dumps(a) for a in actions))
    return path


_SCHEMA = orjson.dumps(
    {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
).decode()
_CREATE = [
    {
        "commitInfo": {
            "timestamp": 1,
            "operation": "CREATE TABLE",
            "operationParameters": {"clusterBy": '["a"]'},
        }
    },
    {
        "protocol": {
            "minReaderVersion": 1,
            "minWriterVersion": 7,
            "writerFeatures": ["domainMetadata", "clustering"],
        }
    },
    {
        "metaData": {
            "id": "x",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": _SCHEMA,
            "partitionColumns": [],
            "configuration": {"delta.isolationLevel": "Serializable"},
        }
    },
]


def test_it_reads_clustering_columns_from_domain_metadata(tmp_path):
    clustering = {
        "domainMetadata": {
            "domain": "delta.clustering",
            "configuration": '{"clusteringColumns":[["a"],["s","b"]]}',
            "removed": False,
        }
    }
    unrelated = {"domainMetadata": {"domain": "my.domain", "configuration": "{}", "removed": False}}
    removal = {"domainMetadata": {"domain": "my.domain", "configuration": "{}", "removed": True}}
    path = _write_log(tmp_path / "t", [[*_CREATE, clustering, unrelated], [removal]])
    state0, state1 = replay_log(str(path), 0), replay_log(str(path), 1)
    assert state0.clustering_columns == ["a", "s.b"]
    assert set(state0.domain_metadata) == {"delta.clustering", "my.domain"}
    assert set(state1.domain_metadata) == {"delta.clustering"}
    assert state1.properties == {"delta.isolationLevel": "Serializable"}


def test_it_falls_back_to_commit_info_cluster_by(tmp_path):
    append = [{"commitInfo": {"operation": "WRITE", "operationParameters": {"clusterBy": "[]"}}}]
    path = _write_log(tmp_path / "t", [_CREATE, append])
    assert replay_log(str(path)).clustering_columns == ["a"]


def test_it_keeps_the_latest_txn_per_app_id(tmp_path):
    path = tmp_path / "t"
    for version in (1, 2):
        props = CommitProperties(app_transactions=[Transaction(app_id="job-7", version=version)])
        write_deltalake(path, batch([version]), mode="append", commit_properties=props)
    state = replay_log(str(path))
    assert state.txns["job-7"].version == 2
    assert read_commit(str(path), 1).txns[0].app_id == "job-7"


def test_it_parses_every_commit_field(tmp_path):
    line = {
        "add": {
            "path": "date=2024-01-01/a%20b.parquet",
            "partitionValues": {"date": "2024-01-01", "n": None},
            "size": 10,
            "modificationTime": 5,
            "dataChange": False,
            "stats": '{"numRecords":1}',
            "tags": {"k": "v"},
            "deletionVector": {
                "storageType": "u",
                "pathOrInlineDv": "x",
                "offset": 1,
                "sizeInBytes": 2,
                "cardinality": 3,
            },
            "baseRowId": 4,
            "clusteringProvider": "liquid",
        }
    }
    cdc = {
        "cdc": {
            "path": "_change_data/c%3D1.parquet",
            "partitionValues": {},
            "size": 3,
            "dataChange": False,
        }
    }
    remove = {
        "remove": {
            "path": "old.parquet",
            "deletionTimestamp": 9,
            "dataChange": True,
            "extendedFileMetadata": True,
            "size": 4,
        }
    }
    data = b"\n".join(
        orjson.dumps(a) for a in [{"commitInfo": {"operation": "MERGE"}}, line, cdc, remove]
    )
    commit = parse_commit(3, data)
    [add] = commit.adds
    assert add.path == "date=2024-01-01/a b.parquet"
    assert add.partition_values == {"date": "2024-01-01", "n": None}
    assert (add.size, add.modification_time, add.data_change, add.base_row_id) == (10, 5, False, 4)
    assert (add.tags, add.clustering_provider) == ({"k": "v"}, "liquid")
    assert add.deletion_vector["cardinality"] == 3
    assert commit.cdcs[0].path == "_change_data/c=1.parquet"
    assert commit.removes[0].extended_file_metadata is True
    assert commit.commit_info == {"operation": "MERGE"}


def test_it_uses_the_file_time_only_when_a_commit_has_no_timestamp():
    path = str(table("spark/delta-0.1.0"))  # written before commitInfo existed
    commit = read_commit(path, 0, list_log(path))
    assert commit.commit_info is None
    assert commit.file_modification_time == os.stat(commit_file(Path(path), 0)).st_mtime_ns // 10**6


# --------------------------------------------------------------------------- storage and API


def test_it_opens_file_uris_and_delta_log_paths():
    path = table("golden/checkpoint")
    for uri in (f"file://{path.resolve()}", f"{path}/_delta_log", f"{path}/"):
        store = open_store(uri)
        assert isinstance(store, LocalStore)
        assert list_log(store).latest_version == 14


def test_it_reads_through_a_pyarrow_filesystem_too():
    # The remote code path (s3://, abfss://, gs://) exercised with pyarrow's local filesystem.
    for name in (
        "golden/checkpoint",
        "golden/v2-checkpoint-parquet",
        "golden/multi-part-checkpoint",
    ):
        path = table(name).resolve()
        store = ArrowStore(f"file://{path}")
        _same_state(replay_log(store), replay_log(str(path)))
        assert list_log(store).file_modification_times  # object-store listings carry mtimes


def test_delta_log_wraps_listing_commits_and_snapshots(tmp_path):
    path = tmp_path / "t"
    write_history(path, 3)
    log = open_log(str(path))
    assert isinstance(log, DeltaLog)
    assert (log.latest_version, log.first_available_version) == (2, 0)
    assert log.read_commit(1).version == 1
    assert [c.version for c in log.iter_commits(start=1)] == [1, 2]
    assert log.snapshot(1).version == 1
    write_deltalake(path, batch([50]), mode="append", partition_by=["date"])
    assert log.latest_version == 2  # until refreshed
    assert log.refresh().latest_version == 3
    assert len(log.snapshot().files) == len(DeltaTable(path).file_uris())


@pytest.mark.slow
def test_it_streams_a_long_log_in_order(tmp_path):
    from bench.gen_log import generate

    path = tmp_path / "long"
    generate(str(path), 1_500)
    log = open_log(str(path))
    versions = [c.version for c in log.iter_commits()]
    assert versions == list(range(1_500))
    assert sorted(log.listing.checkpoints) == list(range(100, 1_500, 100))
    assert absolute_live_paths(path, log.snapshot()) == set(DeltaTable(path).file_uris())
    _same_state(log.snapshot(), replay_from_scratch(path))
