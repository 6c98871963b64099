"""Log-integrity findings (audit/core/integrity/checks.py).

Positive cases are real delta-rs tables followed by one hand-built commit file each (engines
that break the log are rare on demand); the zero-false-positive test runs every golden table,
every demo table and every scenario table of the suite.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.integrity.checks import integrity_findings
from audit.core.vocab import INTEGRITY_KINDS
from tests.support import scenarios
from tests.support.hand_commits import base_actions, changed_add, log_file, write_commit
from tests.support.logutil import all_table_dirs
from tests.support.tables import rows

PROTOCOL_DV = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors"],
}
# A deletion vector deleting one row (its bytes are never read by the integrity checks).
INLINE_DV = {
    "storageType": "u",
    "pathOrInlineDv": "x",
    "offset": 1,
    "sizeInBytes": 36,
    "cardinality": 1,
}


def _remove(add: dict[str, Any], *, data_change: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "remove": {
            "path": add["path"],
            "deletionTimestamp": 1,
            "dataChange": data_change,
            "partitionValues": add["partitionValues"],
            "size": add["size"],
            **extra,
        }
    }


def _found(path: Path) -> list[Any]:
    return [f for f in audit_history(load_history(str(path))).findings if f.kind in INTEGRITY_KINDS]


def _stats(records: int) -> str:
    return json.dumps({"numRecords": records, "minValues": {}, "maxValues": {}, "nullCount": {}})


# --------------------------------------------------------------------------- each kind


def test_duplicate_add_is_found_at_its_version(tmp_path):
    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, changed_add(adds[0]))
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version, finding.severity) == (
        "duplicate_active_file",
        2,
        "critical",
    )
    assert finding.related_versions == [0]
    assert finding.witness["paths"] == [adds[0]["path"]]


def test_remove_of_unknown_path_is_found(tmp_path):
    adds = base_actions(tmp_path)
    ghost = {**adds[0], "path": "day=2024-01-01/never-written.parquet"}
    write_commit(tmp_path, 2, _remove(ghost), info={"operation": "DELETE"})
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version) == ("remove_of_unknown_file", 2)
    assert finding.witness["paths"] == ["day=2024-01-01/never-written.parquet"]


def test_second_remove_of_one_file_is_found(tmp_path):
    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, _remove(adds[0]), info={"operation": "DELETE"})
    write_commit(tmp_path, 3, _remove(adds[0]), info={"operation": "DELETE", "readVersion": 2})
    assert [(f.kind, f.version) for f in _found(tmp_path)] == [("remove_of_unknown_file", 3)]


def test_stale_remove_of_a_concurrently_removed_file_is_left_to_the_isolation_audit(tmp_path):
    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, _remove(adds[0]), info={"operation": "DELETE", "readVersion": 1})
    write_commit(tmp_path, 3, _remove(adds[0]), info={"operation": "DELETE", "readVersion": 1})
    assert _found(tmp_path) == []


def test_optimize_that_drops_rows_is_found(tmp_path):
    adds = base_actions(tmp_path)  # 3 + 2 rows in two files
    compacted = {**adds[0], "path": "day=2024-01-01/compacted.parquet", "stats": _stats(4)}
    write_commit(
        tmp_path,
        2,
        _remove(adds[0], data_change=False),
        _remove(adds[1], data_change=False),
        changed_add(compacted, dataChange=False),
        info={
            "operation": "OPTIMIZE",
            "operationMetrics": {"numAddedFiles": "1", "numRemovedFiles": "2"},
        },
    )
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version, finding.severity) == (
        "row_count_changed_by_rewrite",
        2,
        "critical",
    )
    assert (finding.witness["rows_before"], finding.witness["rows_after"]) == (5, 4)


def test_rewrite_counts_rows_deleted_by_deletion_vectors(tmp_path):
    """Live rows = numRecords minus the DV's cardinality: a purge that keeps them is legal."""
    adds = base_actions(tmp_path)
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 1,
    }
    write_commit(tmp_path, 2, {"protocol": PROTOCOL_DV}, info={"operation": "UPGRADE PROTOCOL"})
    write_commit(
        tmp_path,
        3,
        _remove(adds[0]),
        changed_add(adds[0], deletionVector=dv),
        info={"operation": "DELETE"},
    )
    purged = {**adds[0], "path": "day=2024-01-01/purged.parquet", "stats": _stats(2)}
    write_commit(
        tmp_path,
        4,
        _remove(adds[0], data_change=False, deletionVector=dv),
        changed_add(purged, dataChange=False),
        info={"operation": "REORG"},
    )
    assert _found(tmp_path) == []


def test_metrics_that_lie_are_found(tmp_path):
    adds = base_actions(tmp_path)
    new = {**adds[0], "path": "day=2024-01-01/new.parquet"}
    write_commit(
        tmp_path,
        2,
        _remove(adds[0]),
        changed_add(new),
        info={
            "operation": "DELETE",
            "operationMetrics": {"numAddedFiles": 1, "numRemovedFiles": 3},
        },
    )
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version, finding.severity) == ("metrics_mismatch", 2, "warning")
    assert finding.witness["metrics"] == {"numRemovedFiles": {"reported": 3, "actions": 1}}


def test_deletion_vector_without_the_feature_is_found(tmp_path):
    adds = base_actions(tmp_path)  # delta-rs writes protocol 1/2
    dv = INLINE_DV
    write_commit(
        tmp_path,
        2,
        _remove(adds[0]),
        changed_add(adds[0], deletionVector=dv),
        info={"operation": "DELETE"},
    )
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version) == ("protocol_violation", 2)
    assert "deletionVectors" in finding.summary
    assert finding.witness["paths"] == [adds[0]["path"]]


# --------------------------------------------------------------------------- legal histories


def test_legal_reuses_of_a_path_are_not_findings(tmp_path):
    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, {"protocol": PROTOCOL_DV}, info={"operation": "UPGRADE PROTOCOL"})
    dv = INLINE_DV
    # A new deletion vector: the add line before the remove line, in one commit.
    write_commit(
        tmp_path,
        3,
        changed_add(adds[0], deletionVector=dv),
        _remove(adds[0]),
        info={"operation": "DELETE"},
    )
    # Statistics recomputed: the same file re-added without a data change.
    write_commit(
        tmp_path,
        4,
        changed_add(adds[1], dataChange=False, stats=_stats(2)),
        info={"operation": "COMPUTE STATS"},
    )
    # Removed, then added back by a later commit (golden: delete-re-add-same-file-...).
    write_commit(tmp_path, 5, _remove(adds[1]), info={"operation": "DELETE"})
    write_commit(tmp_path, 6, changed_add(adds[1]))
    assert _found(tmp_path) == []


def test_checkpoint_boundary_is_legal(tmp_path):
    """Log cleanup: removes of files added before the first available version are fine."""
    base_actions(tmp_path)
    dt = DeltaTable(str(tmp_path))
    dt.create_checkpoint()  # at v1
    for version in (0,):
        log_file(tmp_path, version).unlink()
    write_deltalake(str(tmp_path), rows(4), mode="overwrite")  # v2 removes v0's and v1's files
    history = load_history(str(tmp_path))
    assert history.first_available_version == 1
    assert integrity_findings(history) == []
    # ...and still judged after the boundary.
    adds = [
        json.loads(line)["add"]
        for line in log_file(tmp_path, 2).read_text().splitlines()
        if '"add"' in line
    ]
    write_commit(tmp_path, 3, changed_add(adds[0]))
    assert [(f.kind, f.version) for f in _found(tmp_path)] == [("duplicate_active_file", 3)]


# --------------------------------------------------------------------------- no false positives


@pytest.mark.parametrize("name,path", all_table_dirs(), ids=[n for n, _ in all_table_dirs()])
def test_no_integrity_findings_on_golden_tables(name, path):
    try:
        history = load_history(str(path))
    except Exception:  # noqa: BLE001  (unreadable on purpose: corrupt / empty test tables)
        pytest.skip("not a readable table")
    assert integrity_findings(history) == []


SCENARIOS = [
    (name, fn)
    for name, fn in inspect.getmembers(scenarios, inspect.isfunction)
    if name.startswith("build_")
]


@pytest.mark.slow
def test_no_integrity_findings_on_scenario_and_demo_tables(tmp_path):
    from audit.demo import create_demo_tables

    found: Counter[str] = Counter()
    tables = []
    for name, build in SCENARIOS:
        path = tmp_path / name
        build(str(path))
        tables.append(path)
    tables += create_demo_tables(tmp_path / "demo", rounds=3)
    assert len(tables) >= len(SCENARIOS) + 3
    for path in tables:
        for finding in integrity_findings(load_history(str(path))):
            found[f"{path.name}:{finding.kind}@{finding.version}"] += 1
    assert not found, found


def test_a_tap_on_the_commit_stream_and_the_audit_s_re_read_agree(tmp_path):
    """The one-shot audit checks integrity on the action dicts of its own digest pass; the
    re-read of a history built elsewhere and a tap on any commit stream (the Spark path) give
    the same findings."""
    import dataclasses

    from audit.core.integrity.checks import IntegrityTap
    from audit.core.log import open_log

    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, changed_add(adds[0]), _remove({**adds[0], "path": "ghost.parquet"}))
    history = load_history(str(tmp_path))
    assert history.integrity is not None  # checked in the summaries' pass: no second read
    reread = [(f.kind, f.version) for f in integrity_findings(history)]
    assert reread == [("remove_of_unknown_file", 2), ("duplicate_active_file", 2)]
    without = dataclasses.replace(history, integrity=None)
    assert [(f.kind, f.version) for f in integrity_findings(without)] == reread

    log = open_log(str(tmp_path))
    tap = IntegrityTap(log, 0)
    for _ in tap.observe(log.iter_commits(0, None)):
        pass
    tapped = dataclasses.replace(history, integrity=tap.findings)
    assert [(f.kind, f.version) for f in integrity_findings(tapped)] == reread
    # A window (the tail) is not checked: integrity kinds are whole-table.
    assert load_history(str(tmp_path), start=1).integrity is None


def test_the_forked_child_s_commits_are_checked_as_the_sequential_pass_does(tmp_path, monkeypatch):
    """parallel.py: the child sends what the checks read of its commits and the parent
    replays them after its own half, so findings on both sides of the split are the same as
    the re-read's (the files active at the split come from the parent's half)."""
    import dataclasses

    from audit.core.history import parallel

    adds = base_actions(tmp_path)  # v0, v1
    dv = INLINE_DV
    new = {**adds[0], "path": "day=2024-01-01/new.parquet"}
    write_commit(tmp_path, 2, changed_add(new), info={"operation": "WRITE"})
    write_commit(tmp_path, 3, _remove({**adds[0], "path": "ghost.parquet"}))
    write_commit(tmp_path, 4, changed_add(adds[1]))  # duplicate of a v0/v1 file: child side
    write_commit(tmp_path, 5, _remove(new), info={"operation": "DELETE", "readVersion": 4})
    write_commit(
        tmp_path,
        6,
        _remove(adds[0]),
        changed_add(adds[0], deletionVector=dv),
        info={"operation": "DELETE", "operationMetrics": {"numRemovedFiles": 3}},
    )
    write_commit(tmp_path, 7, _remove(new), info={"operation": "DELETE", "readVersion": 6})
    monkeypatch.setattr(parallel, "MIN_PARALLEL_COMMITS", 2)
    received = []
    take = parallel._Merge.take
    monkeypatch.setattr(
        parallel._Merge, "take", lambda self, frame: received.append(frame) or take(self, frame)
    )
    forked = load_history(str(tmp_path), parallel=True)
    assert received and received[0][3]  # the child's records came
    sequential = load_history(str(tmp_path))
    reread = integrity_findings(dataclasses.replace(sequential, integrity=None))
    assert {(f.kind, f.version) for f in reread} >= {
        ("remove_of_unknown_file", 3),
        ("duplicate_active_file", 4),
        ("protocol_violation", 6),
        ("metrics_mismatch", 6),
        ("remove_of_unknown_file", 7),
    }
    assert integrity_findings(forked) == integrity_findings(sequential) == reread
    # The child's commit sizes come back too: health needs no stat listing of the log.
    from audit.core.health.compute import log_sizes

    assert forked.listing.commit_sizes == log_sizes(forked.get_log())


# --------------------------------------------------------------------------- add-only commits
# Most commits only add new paths and take IntegrityChecker's fast path; these add-only
# commits each break one rule and must still be judged by the full checks.


def test_an_add_only_commit_with_lying_file_metrics_is_found(tmp_path):
    adds = base_actions(tmp_path)
    new = {**adds[0], "path": "day=2024-01-01/new.parquet"}
    write_commit(
        tmp_path,
        2,
        changed_add(new),
        info={"operation": "WRITE", "operationMetrics": {"numAddedFiles": 2}},
    )
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version) == ("metrics_mismatch", 2)
    assert finding.witness["metrics"] == {"numAddedFiles": {"reported": 2, "actions": 1}}


def test_an_add_only_commit_adding_one_new_path_twice_is_a_duplicate(tmp_path):
    adds = base_actions(tmp_path)
    new = {**adds[0], "path": "day=2024-01-01/new.parquet"}
    write_commit(tmp_path, 2, changed_add(new), changed_add(new))
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version) == ("duplicate_active_file", 2)
    assert finding.witness["paths"] == [new["path"]]


def test_an_add_only_commit_with_row_ids_on_an_old_protocol_is_found(tmp_path):
    adds = base_actions(tmp_path)
    new = {**adds[0], "path": "day=2024-01-01/new.parquet", "baseRowId": 7}
    write_commit(tmp_path, 2, changed_add(new))
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version) == ("protocol_violation", 2)
    assert "rowTracking" in finding.summary


def test_paths_added_by_the_fast_path_are_live_for_later_commits(tmp_path):
    adds = base_actions(tmp_path)
    new = {**adds[0], "path": "day=2024-01-01/new.parquet"}
    write_commit(tmp_path, 2, changed_add(new))
    write_commit(tmp_path, 3, _remove(new), info={"operation": "DELETE", "readVersion": 2})
    write_commit(tmp_path, 4, changed_add(new))  # re-added after its remove: legal
    assert _found(tmp_path) == []
    write_commit(tmp_path, 5, changed_add(new))  # active since v4: a duplicate
    (finding,) = _found(tmp_path)
    assert (finding.kind, finding.version, finding.related_versions) == (
        "duplicate_active_file",
        5,
        [4],
    )
