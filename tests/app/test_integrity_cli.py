"""`manage.py audit --json` reports log-integrity findings and `--fail-on` gates on them (the
findings themselves: tests/core/test_integrity.py)."""

from __future__ import annotations

import json

from tests.support.hand_commits import base_actions, changed_add, write_commit


def test_audit_json_reports_integrity_findings_and_fails_the_gate(tmp_path):
    """`manage.py audit --json --fail-on critical`, as a CI job runs it."""
    from tests.support.cli import run_audit

    adds = base_actions(tmp_path)
    write_commit(tmp_path, 2, changed_add(adds[0]))
    done = run_audit(str(tmp_path), "--json", "--fail-on", "critical")
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    (dup,) = [f for f in findings if f["kind"] == "duplicate_active_file"]
    assert (dup["version"], dup["severity"]) == (2, "critical")
    assert dup["witness"]["paths"] == [adds[0]["path"]]
