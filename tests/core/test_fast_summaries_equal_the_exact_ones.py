"""The fast summary paths (digest.py, parallel.py) against the exact one (parse_commit).

`summarize_log` reduces action dicts without building file objects, and `parallel=True`
summarises the later part of a history in a forked child. Both must give the summaries,
config timelines, errors and `audit --json` output of parsing every commit exactly.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from audit.core.audit import audit_history
from audit.core.errors import DeltaAuditError
from audit.core.history import parallel
from audit.core.history.digest import Interner, digest_refs
from audit.core.history.summary import History, load_history, summarize_commits
from audit.core.integrity.refs import refs_of_commit
from audit.core.log import iter_commit_files, open_log, parse_commit
from audit.core.report import build_report
from tests.support.paths import DELTA_TABLES, ROOT, every_suite_table

TABLES = DELTA_TABLES
BENCH = ROOT / "bench"


def _reference(path: Path) -> tuple[list, list, list]:
    """Summaries and timelines by parsing every commit into objects (the exact path)."""
    log = open_log(str(path))
    metadata, protocol = [], []
    summaries = list(summarize_commits(log.iter_commits(), metadata, protocol))
    return summaries, metadata, protocol


def _outcome(path: Path, **kwargs) -> object:
    try:
        history = load_history(str(path), **kwargs)
    except DeltaAuditError as err:
        return f"error: {err}"
    return history.summaries, history.metadata_timeline, history.protocol_timeline


def _report(history: History) -> bytes:
    report = build_report(history, audit_history(history, check_data=False), include_files=True)
    return orjson.dumps(report, option=orjson.OPT_NON_STR_KEYS)


@pytest.fixture
def split_small_logs(monkeypatch):
    """Make every log of a few commits long enough to be split across two processes, and the
    child send its part in several frames."""
    monkeypatch.setattr(parallel, "MIN_PARALLEL_COMMITS", 3)
    monkeypatch.setattr(parallel, "FRAME_COMMITS", 4)


def test_every_test_table_is_summarised_alike_by_every_path(split_small_logs):
    tables = every_suite_table()
    assert len(tables) > 50  # the walk found the copied tables
    split = 0
    for path in tables:
        try:
            expected: object = _reference(path)
        except DeltaAuditError as err:
            expected = f"error: {err}"
        assert _outcome(path) == expected, path
        assert _outcome(path, parallel=True) == expected, path
        split += isinstance(expected, tuple) and len(expected[0]) >= 3
    assert split > 20  # enough tables were long enough to take the forked path


@pytest.fixture(scope="module")
def bench_log(tmp_path_factory) -> Path:
    """A Spark-style log of the bench generator: partitions, rewrites, OPTIMIZE, checkpoints."""
    sys.path.insert(0, str(BENCH))
    try:
        from gen_log import generate
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path_factory.mktemp("bench") / "log"
    generate(str(path), 1500)
    return path


def test_the_bench_log_gives_the_same_report_on_every_path(bench_log, split_small_logs):
    exact = History(
        table_uri=open_log(str(bench_log)).uri,
        listing=open_log(str(bench_log)).listing,
        state=open_log(str(bench_log)).snapshot(),
        summaries=(reference := _reference(bench_log))[0],
        metadata_timeline=reference[1],
        protocol_timeline=reference[2],
    )
    expected = _report(exact)
    assert b'"write_serializable_reorder"' in expected  # the log does exercise the audit
    assert _report(load_history(str(bench_log))) == expected
    assert _report(load_history(str(bench_log), parallel=True)) == expected


def test_an_unreadable_commit_in_the_forked_part_gives_the_sequential_error(
    bench_log, tmp_path, split_small_logs
):
    path = tmp_path / "log"
    shutil.copytree(bench_log, path)
    (path / "_delta_log" / f"{1400:020d}.json").write_bytes(b'{"commitInfo": {}}\n{"add": 3}\n')
    with pytest.raises(DeltaAuditError) as sequential:
        load_history(str(path))
    with pytest.raises(DeltaAuditError) as forked:
        load_history(str(path), parallel=True)
    assert "line 2" in str(sequential.value)
    assert str(forked.value) == str(sequential.value)


def _frames_taken(monkeypatch) -> list[tuple]:
    """The child's frames as the parent merges them."""
    taken: list[tuple] = []
    take = parallel._Merge.take
    monkeypatch.setattr(
        parallel._Merge, "take", lambda self, frame: taken.append(frame) or take(self, frame)
    )
    return taken


def test_the_child_sends_its_part_in_frames(bench_log, split_small_logs, monkeypatch):
    monkeypatch.setattr(parallel, "FRAME_COMMITS", 100)
    taken = _frames_taken(monkeypatch)
    history = load_history(str(bench_log), parallel=True)
    child_part = int(len(history.summaries) * parallel.CHILD_SHARE)
    assert len(taken) == -(-child_part // 100)
    assert sum(len(frame[0][0]) for frame in taken) == child_part


@pytest.mark.parametrize("how", ["killed", "cut short"])
def test_a_child_that_dies_after_some_frames_leaves_the_rest_to_the_parent(
    bench_log, split_small_logs, monkeypatch, how
):
    """Frames already merged are kept; the parent summarises what the child did not send, so
    the report is the sequential one whichever way the child stopped."""
    expected = _report(load_history(str(bench_log)))
    monkeypatch.setattr(parallel, "FRAME_COMMITS", 100)
    sent = [0]

    def dying_writer(frames, write_fd):
        """Writes two frames whole, then the child dies: before the third frame is written
        ("killed") or half way through it ("cut short")."""
        with os.fdopen(write_fd, "wb") as pipe:
            while (payload := frames.get()) is not None:
                sent[0] += 1
                if sent[0] == 3:
                    if how == "cut short":
                        pipe.write(payload[: len(payload) // 2])
                    pipe.flush()
                    os._exit(9)
                pipe.write(payload)

    monkeypatch.setattr(parallel, "_write_frames", dying_writer)
    taken = _frames_taken(monkeypatch)
    assert _report(load_history(str(bench_log), parallel=True)) == expected
    assert len(taken) == 2


def _delta_rs_log(path: Path, commits: int, isolation_set_at: int) -> None:
    """delta-rs appends (no isolationLevel recorded) with the table property set at one version."""
    log_dir = path / "_delta_log"
    log_dir.mkdir(parents=True)
    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    )

    def metadata(configuration: dict) -> dict:
        return {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": configuration,
                "createdTime": 1,
            }
        }

    for version in range(commits):
        info = {
            "timestamp": 1000 + version,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append"},
            "clientVersion": "delta-rs.0.25.0",
        }
        actions: list[dict] = [{"commitInfo": info}]
        if version == 0:
            actions += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, metadata({})]
        if version == isolation_set_at:
            actions.append(metadata({"delta.isolationLevel": "writeSerializable"}))
        actions.append(
            {
                "add": {
                    "path": f"f{version}.parquet",
                    "partitionValues": {},
                    "size": 10,
                    "dataChange": True,
                }
            }
        )
        data = b"\n".join(orjson.dumps(a) for a in actions)
        (log_dir / f"{version:020d}.json").write_bytes(data + b"\n")


@pytest.mark.parametrize("isolation_set_at", range(1, 10))
def test_the_forked_part_derives_isolation_from_the_properties_in_force(
    tmp_path, split_small_logs, isolation_set_at
):
    _delta_rs_log(tmp_path, 10, isolation_set_at)
    history = load_history(str(tmp_path), parallel=True)
    levels = [s.isolation_level for s in history.summaries]
    assert levels == ["Serializable"] * isolation_set_at + ["WriteSerializable"] * (
        10 - isolation_set_at
    )
    assert _outcome(tmp_path, parallel=True) == _reference(tmp_path)


def test_the_streamed_report_is_byte_identical_to_one_dump(bench_log, monkeypatch):
    import io

    from audit.core import report
    from audit.core.report import CommitEntries, write_json

    monkeypatch.setattr(CommitEntries, "CHUNK", 7)  # many chunks, the last one short
    monkeypatch.setattr(report, "_LIST_CHUNK", 3)  # the findings a slice at a time too
    for path in [bench_log, *every_suite_table()[:40]]:
        try:
            history = load_history(str(path))
        except DeltaAuditError:
            continue
        result = audit_history(history, check_data=False)
        for files in (False, True):
            whole = build_report(history, result, include_files=files)
            streamed = build_report(history, result, include_files=files, stream_commits=True)
            out = io.BytesIO()
            write_json(streamed, out)
            assert out.getvalue() == orjson.dumps(whole, option=orjson.OPT_NON_STR_KEYS) + b"\n"


def test_a_streamed_list_that_needs_the_sanitiser_is_sanitised_whole(monkeypatch):
    import io

    from audit.core import report
    from audit.core.jsonsafe import json_text

    monkeypatch.setattr(report, "_LIST_CHUNK", 2)
    # A NUL in the first slice, a sum past 64 bits in the last: `_dumps` sanitises the whole
    # list (the NUL too), so the slices written as they come would differ.
    items = [{"s": "a\x00b"}, {"n": 1}, {"n": 2}, {"n": 2**70}]
    out = io.BytesIO()
    report.write_json({"findings": items}, out)
    assert out.getvalue() == b'{"findings":' + json_text(items).encode() + b"}\n"
    assert b"\\u0000" not in out.getvalue()


def _refs_on_both_paths(path: Path) -> tuple[int, int]:
    """Compare digest_refs's refs with those of the parsed commits; (commits, refs) compared."""
    log = open_log(str(path))
    interner, compared, refs = Interner(), 0, 0
    for version, data in iter_commit_files(log.store, log.listing):
        digested = digest_refs(version, data, interner)
        if digested is None:
            continue  # the exact path takes it (refs_of_commit)
        expected = refs_of_commit(parse_commit(version, data))
        assert digested[2:] == expected, (path, version)
        compared, refs = compared + 1, refs + len(expected[0]) + len(expected[1])
    return compared, refs


def test_the_digest_s_integrity_refs_equal_those_of_the_parsed_commits(bench_log):
    # Coercions included: dataChange absent or not a bool, empty or odd deletion vectors,
    # stats and baseRowId of the wrong type, URL-encoded paths.
    compared = refs = 0
    for path in [*every_suite_table(), bench_log]:
        try:
            done = _refs_on_both_paths(path)
        except DeltaAuditError:
            continue  # an unreadable log: the exact path's error, compared above
        compared, refs = compared + done[0], refs + done[1]
    assert compared > 1500 and refs > 3000


def test_the_digest_s_refs_coerce_odd_values_as_the_parsed_commit_does():
    odd = [
        {"commitInfo": {"operation": "WRITE"}},
        {"add": {"path": "a%20b.parquet", "size": 1, "partitionValues": {}}},  # no dataChange
        {"add": {"path": "c.parquet", "dataChange": "false", "deletionVector": {}}},
        {"add": {"path": "d.parquet", "dataChange": False, "deletionVector": [1]}},
        {"add": {"path": "e.parquet", "stats": {"numRecords": 1}, "baseRowId": "3"}},
        {"add": {"path": "f.parquet", "stats": '{"numRecords":2}', "baseRowId": 4}},
        {"remove": {"path": "g%2Fh.parquet", "dataChange": None, "deletionVector": {}}},
        {"remove": {"path": "i.parquet", "dataChange": False, "deletionVector": {"x": 1}}},
    ]
    data = b"\n".join(orjson.dumps(action) for action in odd)
    digested = digest_refs(7, data, Interner())
    assert digested is not None  # the digest takes it: the coercions are its own
    adds, removes = refs_of_commit(parse_commit(7, data))
    assert digested[2:] == (adds, removes)
    assert [a.data_change for a in adds] == [True, True, False, True, True]
    assert [r.path for r in removes] == ["g/h.parquet", "i.parquet"]
