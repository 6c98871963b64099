"""The incident status periods are settings (AUDIT_INCIDENT_QUIET_VERSIONS, _QUIET_SECONDS,
_RESOLVE_SECONDS) that the tail's stored incidents and the one-shot command share: a stale
DELETE under WriteSerializable (a recurring cause) is open under the defaults (its last
occurrence is fewer than 100 versions back), and resolved when no version and no time must
pass (quiet at once, and its writer has not written since)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from audit.core.incidents.status import StatusRules
from audit.incidents.models import Incident
from audit.tail.step import reaudit
from audit.trust.limits import incident_rules
from tests.support import scenarios
from tests.support.ingested import ingest_table
from tests.support.paths import ROOT
from tests.support.tail_views import cli_json

pytestmark = pytest.mark.django_db


def statuses(table, path) -> tuple[set[str], set[str]]:
    stored = set(Incident.objects.filter(table=table).values_list("status", flat=True))
    report = cli_json(path, "--no-data")
    return stored, {i["status"] for i in report["incidents"]}


def test_the_core_defaults_are_the_declared_ones():
    assert incident_rules() == StatusRules()


def test_it_judges_incidents_by_the_settings_in_the_tail_and_the_cli(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_CHECK_DATA = False
    built = tmp_path / "built"
    scenarios.build_ws_reorder_matching(str(built))
    path = shutil.copytree(built, tmp_path / "reorder")
    table = ingest_table(str(path), name="reorder")
    assert statuses(table, path) == ({"open"}, {"open"})

    settings.AUDIT_INCIDENT_QUIET_VERSIONS = 0
    settings.AUDIT_INCIDENT_QUIET_SECONDS = -5  # a negative period counts as none
    reaudit(table.id)
    # Quiet at once, and its writer has not written since: resolved, in both.
    assert statuses(table, path) == ({"resolved"}, {"resolved"})


def test_the_standalone_command_reads_them_from_the_environment(tmp_path):
    """`manage.py audit` runs without Django's apps: the settings reach it all the same."""
    path = tmp_path / "reorder"
    scenarios.build_ws_reorder_matching(str(path))

    def statuses_of(**env: str) -> set[str]:
        out = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "audit", str(path), "--json", "--no-data"],
            cwd=ROOT,
            env={**os.environ, "AUDIT_ALLOWED_ROOTS": str(tmp_path), **env},
            capture_output=True,
            check=True,
        )
        return {i["status"] for i in json.loads(out.stdout)["incidents"]}

    assert statuses_of() == {"open"}
    quiet_now = {"AUDIT_INCIDENT_QUIET_VERSIONS": "0", "AUDIT_INCIDENT_QUIET_SECONDS": "0"}
    assert statuses_of(**quiet_now) == {"resolved"}
