"""The core's front door (audit/core/runs/table.py): a table opened once gives the history and
the audit the functions it wires give, under its options, with no read of its own."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.log import open_log
from audit.core.runs.table import LOG_ONLY, AuditedTable, AuditOptions, open_table
from audit.core.runs.tailwindow import audit_tail_chunk
from tests.support import revealing_tables
from tests.support.paths import DELTA_TABLES

TABLE = DELTA_TABLES / "golden" / "basic-with-inserts-deletes-checkpoint"


def _ids(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"r{i}" for i in ids]})


def _keys(findings) -> list[tuple]:
    return [(f.kind, f.version, f.related_versions, f.summary) for f in findings]


def test_it_audits_a_table_as_the_functions_it_wires(tmp_path):
    revealing_tables.build_metadata_change_then_stale_overwrite(str(tmp_path))
    table = open_table(str(tmp_path), options=LOG_ONLY)
    history = table.history()
    by_hand = load_history(str(tmp_path))
    assert [s.version for s in history.summaries] == [s.version for s in by_hand.summaries]
    found = _keys(table.audit(history).findings)
    assert found and found == _keys(audit_history(by_hand, check_data=False).findings)
    table = open_table(str(TABLE), options=LOG_ONLY)
    # a history from a version on, and up to one
    assert [s.version for s in table.history(start=1, end=2).summaries] == [1, 2]


def test_it_audits_under_its_options(tmp_path):
    write_deltalake(str(tmp_path), _ids(1, 2, 3))
    first, second = DeltaTable(str(tmp_path)), DeltaTable(str(tmp_path))
    write_deltalake(first, _ids(42), mode="append")
    write_deltalake(second, _ids(42), mode="append")  # the key 42 twice
    keyed = open_table(str(tmp_path), options=AuditOptions(key_columns=("id",)))
    found = keyed.audit(keyed.history()).findings
    assert [f.version for f in found if f.kind == "duplicate_key"] == [2]
    plain = open_table(str(tmp_path))
    history = plain.history()
    result = plain.audit(history)
    assert not [f for f in result.findings if f.kind == "duplicate_key"]
    # the tail's table-level refresh: the key looked for after an audit without it
    assert [f.version for f in plain.key_findings(history, result, ["id"])] == [2]


def test_it_works_out_options_once_and_only_when_an_audit_needs_them():
    asked: list[str] = []

    def options_of(uri: str) -> AuditOptions:
        asked.append(uri)
        return LOG_ONLY

    table = open_table(str(TABLE), options=options_of)
    history = table.history()
    table.window(2, 3)
    assert asked == []  # opening and reading histories ask nothing (the tail's idle steps)
    table.audit(history)
    table.audit(history, versions=(2, 3))
    assert asked == [table.uri]


def test_its_window_audit_is_the_tails(tmp_path):
    revealing_tables.build_metadata_change_then_stale_overwrite(str(tmp_path))
    table = AuditedTable(open_log(str(tmp_path)), LOG_ONLY)
    latest = table.log.listing.latest_version
    history, result, lo = table.audit_window(latest, latest)

    def run(h, versions):
        return audit_history(h, check_data=False, versions=versions)

    tail_history, tail_result, tail_lo = audit_tail_chunk(
        open_log(str(tmp_path)), latest, latest, run
    )
    assert lo == tail_lo < latest  # the new commit revealed a finding before it
    assert [s.version for s in history.summaries] == [s.version for s in tail_history.summaries]
    assert _keys(result.findings) == _keys(tail_result.findings)
