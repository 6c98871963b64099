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
from audit.core.data.orphans import referenced_paths, scan_orphans
from audit.core.errors import DeltaAuditError
from audit.core.explain import explain_conflict
from audit.core.health.changes import changes_from_history
from audit.core.health.compute import health_of_history
from audit.core.health.diff import diff_versions
from audit.core.history.summary import load_history
from audit.core.integrity.checks import integrity_findings
from audit.core.jsonsafe import json_text
from audit.core.report import build_report, render_text, write_json
from audit.core.runs.sections import add_health_and_changes
from audit.core.writers import writer_telemetry
from tests.support.cli import run_audit
from tests.support.hostile_logs import Edit, edits, hostile_copy, small_tables
from tests.support.paths import DELTA_TABLES, EXCEPTIONS

TABLES = small_tables()
EXCEPTION_TEXT = (EXCEPTIONS / "databricks_append_real_commit.txt").read_text()


def run_every_entry_point(uri: str) -> None:
    """What `manage.py audit --json` does, then every other pass of the core on the same log,
    its answer made JSON the way the API and the ingest make it (jsonsafe.json_text)."""
    history = load_history(uri)
    result = audit_history(history, check_data=True)
    report = build_report(history, result, include_files=True, stream_commits=True)
    add_health_and_changes(report, history)
    write_json(report, io.BytesIO())
    render_text(build_report(history, result))
    json_text(health_of_history(history))
    json_text(changes_from_history(history))
    json_text(writer_telemetry(history, result.commits))
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
        json_text(diff_versions(history.get_log(), versions[0], versions[-1]))


@settings(
    max_examples=1000,
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


CLI_EDITS = (
    Edit(commit=1, line=0, leaf=0, key="numAddedFiles", value=str(10**27)),
    Edit(commit=1, line=0, leaf=0, key="readVersion", value="²"),
    Edit(commit=1, line=0, leaf=0, key="timestamp", value=str(2**62)),
    Edit(commit=1, line=0, leaf=0, new_line='{"add": "x"}'),
)


def test_it_answers_the_cli_with_a_report_or_one_line_never_a_traceback(tmp_path: Path):
    source = DELTA_TABLES / "golden" / "basic-with-inserts-updates"
    for n, edit in enumerate(CLI_EDITS):
        copy = hostile_copy(source, tmp_path / str(n), edit)
        done = run_audit(str(copy), "--json")
        assert done.returncode in (0, 1, 2), (edit, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 1, edit
        if done.returncode == 0:
            assert orjson.loads(done.stdout)["table"]["version"] == 1
        else:
            assert done.stderr.startswith("error: "), edit
