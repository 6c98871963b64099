"""audit.ingest as a package: the old names still import, the tail step calls through it."""

from __future__ import annotations

import importlib

import pytest

from audit import ingest
from audit.models import Table

# Every name other modules, tests and benches import from audit.ingest.
NAMES = [
    "register_table",
    "tail_once",
    "TailResult",
    "tables_due",
    "store_history_chunk",
    "reaudit",
    "finding_key",
    "LockLost",
    "upsert_findings",
    "rebuild_rollups",
    "refresh_rollups",
    "mark_error",
    "mark_up_to_date",
    "_has_commit",
    "TABLE_LEVEL_KINDS",
    "refresh_table_findings",
    "keep_lock",
    "commit_values",
    "settings_snapshot",
    "run_audit",
    "plan_next_chunk",
    "finding_fields",
    "json_safe",
    "clean_text",
    "ChunkPlan",
    "load_window",
    "store_next_chunk",
    "record_history_gap",
    "table_findings_due",
    "FINDING_FIELDS",
    "MAX_PARTITIONS_PER_COMMIT",
    "INT64_MAX",
]


@pytest.mark.parametrize("name", NAMES)
def test_every_name_still_imports_from_audit_ingest(name):
    assert hasattr(importlib.import_module("audit.ingest"), name)


@pytest.mark.django_db
def test_the_tail_step_calls_run_audit_and_upsert_findings_through_the_package(
    delta_table_factory, monkeypatch
):
    path = delta_table_factory("t", commits=3)
    table, _ = ingest.register_table(str(path))
    calls = []
    real_run_audit, real_upsert = ingest.run_audit, ingest.upsert_findings

    def run_audit(history, versions):
        calls.append("run_audit")
        return real_run_audit(history, versions)

    def upsert_findings(*args, **kwargs):
        calls.append("upsert_findings")
        return real_upsert(*args, **kwargs)

    monkeypatch.setattr(ingest, "run_audit", run_audit)
    monkeypatch.setattr(ingest, "upsert_findings", upsert_findings)
    result = ingest.tail_once(table.id, chunk=10)
    assert (result.status, result.stored, result.last_seen_version) == ("ok", 3, 2)
    assert "run_audit" in calls and "upsert_findings" in calls


@pytest.mark.django_db
def test_a_broken_log_is_recorded_as_one_line(delta_table_factory):
    path = delta_table_factory("t", commits=2)
    table, _ = ingest.register_table(str(path))
    (path / "_delta_log" / "00000000000000000001.json").write_text("{not json\n\n")
    result = ingest.tail_once(table.id)
    table.refresh_from_db()
    assert result.status == "error" and "\n" not in result.message
    assert table.status == Table.Status.ERROR and table.last_error == result.message
