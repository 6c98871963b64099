"""Damaged logs give a DeltaAuditError whose one-line message names the useful fact
(version, file, line), never another exception; harmless oddities are tolerated."""

from __future__ import annotations

import orjson
import pytest

from audit.core.errors import DeltaAuditError
from audit.core.log import (
    iter_commits,
    list_log,
    parse_commit,
    read_checkpoint,
    read_commit,
    replay_log,
)
from audit.core.storage.stores import open_store
from tests.support.logutil import commit_file, copy_table, table, write_history


def _error_of(call) -> str:
    with pytest.raises(DeltaAuditError) as err:
        call()
    message = str(err.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "t"
    write_history(path, 8)
    return path


def test_a_truncated_json_line_names_commit_line_and_file(history):
    data = commit_file(history, 5).read_bytes()
    commit_file(history, 5).write_bytes(data[: len(data) - 40])
    message = _error_of(lambda: replay_log(str(history)))
    assert "commit 5" in message and "00000000000000000005.json" in message
    last_line = len(data[:-40].split(b"\n"))
    assert "not valid JSON" in message and f"line {last_line}" in message


def test_non_utf8_bytes_are_reported_as_such(history):
    data = commit_file(history, 3).read_bytes().replace(b'"operation"', b'"op\xff\xfeeration"', 1)
    commit_file(history, 3).write_bytes(data)
    message = _error_of(lambda: list(iter_commits(str(history))))
    assert "commit 3" in message and "not valid UTF-8" in message and "line 1" in message


def test_a_missing_version_in_the_middle_is_named(history):
    commit_file(history, 4).unlink()
    message = _error_of(lambda: list_log(str(history)))
    assert "missing version 4" in message and "00000000000000000004.json" in message
    assert "version 4" in _error_of(lambda: replay_log(str(history)))


def test_the_golden_non_contiguous_table_is_refused():
    message = _error_of(lambda: list_log(str(table("golden/versions-not-contiguous"))))
    assert "missing version 1" in message


def _damage_checkpoint(path, data: bytes) -> str:
    listing = list_log(str(path))
    version = max(listing.checkpoints)
    [name] = listing.checkpoints[version]
    (path / "_delta_log" / name).write_bytes(data)
    return name


@pytest.mark.parametrize(
    "garbage", [b"not a parquet file at all", b"PAR1" + b"\0" * 64 + b"PAR1", b""]
)
def test_a_corrupt_checkpoint_is_skipped_when_commits_allow(tmp_path, garbage):
    path = copy_table("golden/checkpoint", tmp_path)
    name = _damage_checkpoint(path, garbage)
    listing = list_log(str(path))
    message = _error_of(lambda: read_checkpoint(open_store(str(path)), 10, listing.checkpoints[10]))
    assert "checkpoint 10" in message and name in message
    assert set(replay_log(str(path)).files) == {"15"}  # rebuilt from commits 0..14


def test_a_corrupt_checkpoint_without_earlier_commits_is_an_error(tmp_path):
    path = copy_table("golden/checkpoint", tmp_path)
    name = _damage_checkpoint(path, b"garbage")
    for version in range(10):
        commit_file(path, version).unlink()
    message = _error_of(lambda: replay_log(str(path)))
    assert name in message and "checkpoint 10" in message


def test_a_checkpoint_with_a_wrong_column_type_is_unreadable(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = copy_table("golden/checkpoint", tmp_path)
    pq.write_table(
        pa.table({"add": ["oops"], "protocol": [None]}),
        path / "_delta_log/00000000000000000010.checkpoint.parquet",
    )
    listing = list_log(str(path))
    message = _error_of(lambda: read_checkpoint(open_store(str(path)), 10, listing.checkpoints[10]))
    assert "checkpoint 10" in message and "add" in message
    assert set(replay_log(str(path)).files) == {"15"}


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b'{"version": "ten"}', b"[1, 2]", b'{"version": 99, "size": 3}'],
    ids=["empty", "garbage", "bad-version", "not-object", "points-at-missing-checkpoint"],
)
def test_a_bad_last_checkpoint_is_only_an_ignored_hint(tmp_path, content):
    path = copy_table("golden/checkpoint", tmp_path)
    (path / "_delta_log/_last_checkpoint").write_bytes(content)
    listing = list_log(str(path))
    assert listing.checkpoints == {10: ["00000000000000000010.checkpoint.parquet"]}
    assert set(replay_log(str(path)).files) == {"15"}


def test_the_golden_corrupted_last_checkpoint_tables_read_by_listing():
    state = replay_log(str(table("golden/corrupted-last-checkpoint-kernel")))
    assert state.version == 11 and len(state.files) == 2
    assert list_log(str(table("golden/corrupted-last-checkpoint-kernel"))).last_checkpoint is None


def test_a_directory_without_delta_log_is_not_a_delta_table():
    message = _error_of(lambda: list_log(str(table("golden/no-delta-log-folder"))))
    assert "is not a Delta table: no _delta_log" in message


def test_an_empty_delta_log_is_not_a_delta_table(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000000.json.crc").write_bytes(b"")
    assert "is not a Delta table" in _error_of(lambda: replay_log(str(tmp_path)))


def test_a_path_that_does_not_exist_says_so(tmp_path):
    missing = tmp_path / "nope"
    assert f"{missing} does not exist" in _error_of(lambda: replay_log(str(missing)))
    assert "does not exist" in _error_of(lambda: replay_log(f"file://{missing}"))


def test_an_unknown_action_type_is_tolerated(history):
    with commit_file(history, 2).open("ab") as fh:
        fh.write(b'\n{"fancyNewAction":{"x":1}}\n')
    commit = read_commit(str(history), 2)
    assert commit.unknown_actions == ["fancyNewAction"]
    assert len(replay_log(str(history)).files) > 0


def test_an_empty_commit_file_is_an_error(history):
    commit_file(history, 6).write_bytes(b"")
    message = _error_of(lambda: replay_log(str(history)))
    assert "commit 6" in message and "00000000000000000006.json is empty" in message
    commit_file(history, 6).write_bytes(b"\n \n")
    assert "is empty" in _error_of(lambda: read_commit(str(history), 6))


@pytest.mark.parametrize(
    ("line", "fact"),
    [
        (b"[1, 2]", "is not a JSON object"),
        (b'{"add": "x"}', "'add' is not a JSON object"),
        (b'{"add": {"size": 1}}', "add action without a path"),
        (b'{"remove": {"path": 7}}', "remove action without a path"),
        (b'{"protocol": {"minReaderVersion": "1"}}', "protocol action without"),
        (b'{"txn": {"appId": "a"}}', "txn action without"),
        (b'{"domainMetadata": {"configuration": "{}"}}', "domainMetadata action without a domain"),
    ],
)
def test_a_malformed_action_names_its_line(line, fact):
    data = b'{"commitInfo":{"operation":"WRITE"}}\n' + line + b"\n"
    message = _error_of(lambda: parse_commit(12, data))
    assert message.startswith("commit 12: line 2 of 00000000000000000012.json") and fact in message


def test_odd_but_harmless_values_are_tolerated():
    data = b"\n".join(
        orjson.dumps(a)
        for a in [
            {
                "add": {
                    "path": "a",
                    "size": "big",
                    "partitionValues": {"d": 5},
                    "dataChange": "yes",
                    "tags": [1],
                }
            },
            {"add": None},
            {"metaData": {"partitionColumns": "d", "configuration": {"k": 1}, "format": "parquet"}},
        ]
    )
    commit = parse_commit(0, b"\r\n" + data + b"\r\n\r\n")
    [add] = commit.adds
    assert (add.size, add.partition_values, add.data_change, add.tags) == (
        None,
        {"d": "5"},
        True,
        {},
    )
    assert commit.metadata.partition_columns == [] and commit.metadata.configuration == {"k": "1"}


def test_a_commit_file_that_is_a_directory_is_an_error(history):
    commit_file(history, 7).unlink()
    commit_file(history, 7).mkdir()
    message = _error_of(lambda: replay_log(str(history)))
    assert "00000000000000000007.json" in message
