"""Hostile values never crash the core: one edit to a real table's commit file and every entry
point either answers or raises the one DeltaAuditError, never anything else.

The edits (tests/support/hostile_logs.py) are drawn by hypothesis over the small tables of
tests/data/delta-tables; derandomized, so CI runs the same examples every time.
"""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.core.audit import audit_history
from audit.core.changes import changes_from_history
from audit.core.diff import diff_versions
from audit.core.errors import DeltaAuditError
from audit.core.explain import explain_conflict
from audit.core.health import health_of_history
from audit.core.integrity import integrity_findings
from audit.core.orphans import referenced_paths, scan_orphans
from audit.core.report import build_report, render_text, write_json
from audit.core.summary import load_history
from audit.core.writers import writer_telemetry
from audit.health_report import add_health_and_changes
from tests.support.hostile_logs import Edit, edits, hostile_copy, small_tables
from tests.support.paths import EXCEPTIONS

TABLES = small_tables()
EXCEPTION_TEXT = (EXCEPTIONS / "databricks_append_real_commit.txt").read_text()


def run_every_entry_point(uri: str) -> None:
    """What `manage.py audit --json` does, then every other pass of the core on the same log."""
    history = load_history(uri)
    result = audit_history(history, check_data=True)
    report = build_report(history, result, include_files=True, stream_commits=True)
    add_health_and_changes(report, history)
    write_json(report, io.BytesIO())
    render_text(build_report(history, result))
    orjson.dumps(health_of_history(history))
    orjson.dumps(changes_from_history(history))
    orjson.dumps(writer_telemetry(history, result.commits))
    integrity_findings(history)
    explain_conflict(EXCEPTION_TEXT, history)
    scan_orphans(
        history.get_log().store,
        referenced_paths(history, uri),
        now_ms=int(time.time() * 1000),
        min_age_ms=0,
    )
    versions = [s.version for s in history.summaries]
    if len(versions) > 1:
        orjson.dumps(diff_versions(history.get_log(), versions[0], versions[-1]))


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(table=st.sampled_from(TABLES), edit=edits())
def test_it_never_lets_anything_but_the_one_error_out_of_the_core(table: Path, edit: Edit):
    with tempfile.TemporaryDirectory() as tmp:
        copy = hostile_copy(table, Path(tmp) / "t", edit)
        try:
            run_every_entry_point(str(copy))
        except DeltaAuditError as err:
            assert str(err) and "\n" not in str(err).strip()
