"""Delta's conflict rules re-run on hand-built commit summaries (no disk)."""

from __future__ import annotations

from audit.core.audit import audit_history
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.rules import recheck
from audit.core.conflicts.scope import read_scope
from audit.core.conflicts.window import concurrent_pairs
from audit.core.model import IdentityColumn
from audit.core.vocab import ConflictException
from tests.support.scenarios import history, summary

CONCURRENT_APPEND = ConflictException.CONCURRENT_APPEND
CONCURRENT_DELETE_DELETE = ConflictException.CONCURRENT_DELETE_DELETE
CONCURRENT_DELETE_READ = ConflictException.CONCURRENT_DELETE_READ
CONCURRENT_TRANSACTION = ConflictException.CONCURRENT_TRANSACTION
METADATA_CHANGED = ConflictException.METADATA_CHANGED
PROTOCOL_CHANGED = ConflictException.PROTOCOL_CHANGED

A = {"day": "a"}
B = {"day": "b"}


def _partitioned(*summaries, **kwargs):
    return history(list(summaries), partition_columns=["day"], **kwargs)


def _base():
    return summary(
        0, adds={"a0": A, "b0": B}, blind_append=False, parameters={"mode": "ErrorIfExists"}
    )


def _delete_a(version=2, read_version=0, **kwargs):
    return summary(
        version,
        "DELETE",
        read_version=read_version,
        predicate="day = 'a'",
        removes={"a0": A},
        adds={f"a{version}x": A},
        **kwargs,
    )


def _check(txn, winner, h):
    ctx = TableContext(h)
    return recheck(txn, winner, read_scope(txn, ctx, txn.read_version), ctx)


def test_it_applies_delta_rule_order_protocol_metadata_txn_then_files():
    txn = _delete_a(app_ids={"stream": 3})
    everything = summary(
        1,
        adds={"a1": A},
        blind_append=False,
        protocol_changed=True,
        metadata_changed=True,
        app_ids={"stream": 4},
    )
    h = _partitioned(_base(), everything, txn)
    assert _check(txn, everything, h).as_dict() == {
        "Serializable": PROTOCOL_CHANGED,
        "WriteSerializable": PROTOCOL_CHANGED,
    }
    everything.protocol_changed = False
    assert _check(txn, everything, h).serializable == METADATA_CHANGED
    everything.metadata_changed = False
    verdict = _check(txn, everything, h)
    assert (verdict.serializable, verdict.rule) == (CONCURRENT_TRANSACTION, "txn")
    everything.app_ids = {}
    assert _check(txn, everything, h).as_dict() == {
        "Serializable": CONCURRENT_APPEND,
        "WriteSerializable": CONCURRENT_APPEND,
    }


def test_it_exempts_blind_appends_under_write_serializable_only():
    append = summary(1, adds={"a1": A})
    txn = _delete_a()
    verdict = _check(txn, append, _partitioned(_base(), append, txn))
    assert verdict.as_dict() == {"Serializable": CONCURRENT_APPEND, "WriteSerializable": None}
    assert verdict.blind_append_exempt


def test_it_does_not_exempt_a_non_blind_append_or_a_txn_that_changes_metadata():
    reading_insert = summary(1, adds={"a1": A}, blind_append=False)
    txn = _delete_a()
    h = _partitioned(_base(), reading_insert, txn)
    assert _check(txn, reading_insert, h).write_serializable == CONCURRENT_APPEND
    blind = summary(1, adds={"a1": A})
    txn_with_metadata = _delete_a(metadata_changed=True)
    h = _partitioned(_base(), blind, txn_with_metadata)
    assert _check(txn_with_metadata, blind, h).write_serializable == CONCURRENT_APPEND


def test_it_finds_no_conflict_for_appends_into_another_partition():
    append = summary(1, adds={"b1": B}, blind_append=False)
    txn = _delete_a()
    assert not _check(txn, append, _partitioned(_base(), append, txn)).any


def test_it_raises_delete_read_when_the_winner_removed_files_in_the_read_scope():
    winner = summary(
        1, "UPDATE", read_version=0, predicate="day = 'a'", removes={"a0": A}, adds={"a1": A}
    )
    txn = summary(
        2,
        "DELETE",
        read_version=0,
        predicate="day = 'a' AND id = 3",
        removes={"a0": A},
        adds={"a2": A},
    )
    verdict = _check(txn, winner, _partitioned(_base(), winner, txn))
    # The winner's rewritten file lands in the txn's partition first: appends come before deletes.
    assert verdict.serializable == CONCURRENT_APPEND
    winner_delete_only = summary(
        1, "DELETE", read_version=0, predicate="day = 'a'", removes={"a0": A}
    )
    verdict = _check(txn, winner_delete_only, _partitioned(_base(), winner_delete_only, txn))
    assert verdict.as_dict() == {
        "Serializable": CONCURRENT_DELETE_READ,
        "WriteSerializable": CONCURRENT_DELETE_READ,
    }
    assert verdict.certain


def test_it_raises_delete_delete_for_two_compactions_of_the_same_files():
    first = summary(
        1,
        "OPTIMIZE",
        read_version=0,
        compaction_removes=("day=a/f0",),
        parameters={"predicate": "[]", "zOrderBy": "[]"},
    )
    second = summary(
        2,
        "OPTIMIZE",
        read_version=0,
        compaction_removes=("day=a/f0",),
        parameters={"predicate": "[]", "zOrderBy": "[]"},
    )
    verdict = _check(second, first, _partitioned(_base(), first, second))
    assert verdict.as_dict() == {
        "Serializable": CONCURRENT_DELETE_DELETE,
        "WriteSerializable": CONCURRENT_DELETE_DELETE,
    }


def test_it_lets_optimize_ignore_appends_and_deletion_vector_tables_ignore_optimize():
    append = summary(1, adds={"day=a/f1": A}, blind_append=False)
    optimize = summary(
        2,
        "OPTIMIZE",
        read_version=0,
        compaction_removes=("day=a/f0",),
        parameters={"zOrderBy": "[]"},
    )
    assert not _check(optimize, append, _partitioned(_base(), append, optimize)).any
    delete = summary(2, "DELETE", read_version=0, predicate="day = 'a'", removes={"day=a/f0": A})
    compaction = summary(
        1,
        "OPTIMIZE",
        read_version=0,
        compaction_removes=("day=a/f0",),
        parameters={"zOrderBy": "[]"},
    )
    plain = _partitioned(_base(), compaction, delete)
    assert _check(delete, compaction, plain).serializable == CONCURRENT_DELETE_READ
    with_dv = _partitioned(
        _base(), compaction, delete, properties={"delta.enableDeletionVectors": "true"}
    )
    assert not _check(delete, compaction, with_dv).any


def test_it_only_checks_metadata_and_transactions_for_a_blind_append_txn():
    delete = summary(1, "DELETE", read_version=0, predicate="day = 'a'", removes={"a0": A})
    blind = summary(2, adds={"a2": A}, read_version=0)
    h = _partitioned(_base(), delete, blind)
    assert not _check(blind, delete, h).any
    delete.metadata_changed = True
    assert _check(blind, delete, h).serializable == METADATA_CHANGED


def test_it_marks_same_file_dml_pairs_as_same_row_only_under_row_level_concurrency():
    dbr = {"engine": "databricks", "engine_info": "Databricks-Runtime/14.3.x-photon-scala2.12"}
    base = summary(0, adds={"f0": {}}, blind_append=False, parameters={"mode": "ErrorIfExists"})
    winner = summary(
        1, "UPDATE", read_version=0, predicate="id = 1", removes={"f0": {}}, adds={"f1": {}}, **dbr
    )
    txn = summary(
        2, "DELETE", read_version=0, predicate="id = 2", removes={"f0": {}}, adds={"f2": {}}, **dbr
    )
    dv = {"delta.enableDeletionVectors": "true"}
    ctx = TableContext(history([base, winner, txn], properties=dv))
    rlc = ctx.row_level_concurrency(txn, 0)
    verdict = recheck(
        txn, winner, read_scope(txn, ctx, 0), ctx, row_level_concurrency=rlc, deletion_vectors=True
    )
    assert rlc and verdict.same_row_only and verdict.serializable == CONCURRENT_APPEND
    spark_txn = summary(
        2, "DELETE", read_version=0, predicate="id = 2", removes={"f0": {}}, adds={"f2": {}}
    )
    assert not TableContext(
        history([base, winner, spark_txn], properties=dv)
    ).row_level_concurrency(spark_txn, 0)
    result = audit_history(history([base, winner, txn], properties=dv))
    assert "missed_conflict" not in {f.kind for f in result.findings}  # rows unseen: not definite


def test_it_infers_read_scopes():
    ctx = TableContext(_partitioned(_base()))
    assert read_scope(summary(1, adds={"a1": A}), ctx).kind == "none"
    by_partition = read_scope(
        summary(1, "DELETE", read_version=0, predicate="day = 'a' AND id > 3", removes={"x": B}),
        ctx,
    )
    assert by_partition.kind == "partitions"
    assert by_partition.contains((("day", "a"),)) and by_partition.contains(
        (("day", "b"),)
    )  # removed file
    assert not by_partition.contains((("day", "c"),))
    assert read_scope(summary(1, "DELETE", read_version=0, predicate="id > 3"), ctx).kind == "table"
    assert read_scope(summary(1, "DELETE", read_version=0, removes={"a0": A}), ctx).kind == "table"
    unpartitioned = TableContext(history([_base()]))
    assert (
        read_scope(
            summary(1, "DELETE", read_version=0, predicate="day = 'a'", removes={"a0": {}}),
            unpartitioned,
        ).kind
        == "table"
    )


def _reorder_history():
    return _partitioned(
        _base(),
        summary(1, adds={"a1": A}),
        summary(2, adds={"b2": B}),
        _delete_a(version=3, read_version=0),
        summary(4, adds={"a4": A}),
        _delete_a(version=5, read_version=3),
    )


def test_it_reports_a_reorder_with_the_blind_appends_in_the_read_scope():
    result = audit_history(_reorder_history())
    reorders = [f for f in result.findings if f.kind == "write_serializable_reorder"]
    assert [(f.version, f.related_versions) for f in reorders] == [(3, [1]), (5, [4])]
    assert "ConcurrentAppendException" in reorders[0].summary
    assert list(result.commits[3].concurrent_versions) == [1, 2]
    assert result.commits[3].verdicts == {
        1: {"Serializable": CONCURRENT_APPEND, "WriteSerializable": None},
        2: {"Serializable": None, "WriteSerializable": None},
    }
    never = [f for f in result.findings if f.kind == "never_existed_snapshot"]
    # Unconfirmed: no rows in the witness, only the log's dependency cycle.
    assert [
        (f.version, f.confirmed, "files" in f.witness, len(f.witness["cycle"])) for f in never
    ] == [
        (3, False, False, 2),
        (5, False, False, 2),
    ]


def test_it_does_not_report_a_reorder_for_a_serializable_commit_but_a_missed_conflict():
    h = _partitioned(
        _base(),
        summary(1, adds={"a1": A}),
        _delete_a(version=2, read_version=0, isolation_level="Serializable"),
    )
    kinds = [(f.kind, f.version) for f in audit_history(h).findings]
    assert ("write_serializable_reorder", 2) not in kinds and ("missed_conflict", 2) in kinds


def test_it_restricts_the_audit_to_a_window_of_versions():
    full = audit_history(_reorder_history())
    window = audit_history(_reorder_history(), versions=(4, 5))
    assert set(window.commits) == {4, 5}
    assert {f.version for f in window.findings if f.kind == "write_serializable_reorder"} == {5}
    assert [f.key for f in window.findings if f.version == 5] == [
        f.key for f in full.findings if f.version == 5
    ]
    # A window inside a commit's (read, version] interval keeps that commit.
    assert 3 in audit_history(_reorder_history(), versions=(2, 2)).commits


def test_it_is_deterministic():
    runs = [
        [
            (f.key, f.severity, f.summary, f.details)
            for f in audit_history(_reorder_history()).findings
        ]
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]
    keys = [(f[0][1], f[0][0]) for f in runs[0]]
    assert keys == sorted(keys)


def test_it_ignores_hostile_read_versions():
    txns = [
        _base(),
        summary(1, adds={"a1": A}),
        _delete_a(version=2, read_version=99),
        _delete_a(version=3, read_version=-7),
    ]
    result = audit_history(_partitioned(*txns))
    assert not result.commits[2].concurrent_versions and not result.commits[3].concurrent_versions


def test_it_reports_metadata_changes_that_in_flight_commits_survived():
    h = _partitioned(
        _base(),
        summary(1, "SET TBLPROPERTIES", metadata_changed=True, blind_append=False),
        _delete_a(version=2, read_version=0),
    )
    (finding,) = [f for f in audit_history(h).findings if f.kind == "concurrent_metadata_change"]
    assert (finding.version, finding.related_versions, finding.severity) == (1, [2], "critical")


def test_it_reports_an_isolation_setting_delta_rs_does_not_understand():
    rs = {"engine": "delta-rs", "engine_info": "delta-rs:py-1.6.6"}
    h = _partitioned(
        _base(),
        summary(1, adds={"a1": A}, **rs),
        properties={"delta.isolationLevel": "WriteSerializable"},
    )
    (finding,) = [f for f in audit_history(h).findings if f.kind == "isolation_setting_ignored"]
    assert finding.version == 1 and "Serializable" in finding.summary
    understood = _partitioned(
        _base(),
        summary(1, adds={"a1": A}, **rs),
        properties={"delta.isolationLevel": "writeSerializable"},
    )
    assert "isolation_setting_ignored" not in {f.kind for f in audit_history(understood).findings}


def test_it_reports_identity_columns_with_concurrent_commits():
    h = _reorder_history()
    h.state.identity_columns = [IdentityColumn("id", 1, 1, 10, False)]
    (finding,) = [f for f in audit_history(h).findings if f.kind == "identity_column_concurrency"]
    assert finding.version == 3


def test_it_reports_hotspots_from_three_overlapping_pairs():
    txns = [_base()]
    for v in range(1, 13, 2):
        txns += [
            summary(v, adds={f"a{v}": A}, blind_append=False),
            _delete_a(version=v + 1, read_version=v - 1),
        ]
    result = audit_history(_partitioned(*txns))
    (spot,) = [f for f in result.findings if f.kind == "conflict_hotspot"]
    assert spot.details["partition"] == "day=a" and spot.details["pairs"] == 6
    assert spot.details["exceptions"] == {CONCURRENT_APPEND: 12}
    assert spot.severity == "warning"
    assert result.hotspots and result.hotspots[0].operations == ("DELETE", "WRITE")


def test_it_yields_every_concurrent_pair():
    pairs = [
        (t.version, w.version, v.serializable) for t, w, v in concurrent_pairs(_reorder_history())
    ]
    assert pairs == [(3, 1, CONCURRENT_APPEND), (3, 2, None), (5, 4, CONCURRENT_APPEND)]
