"""Reads stay inside the table's own location, end to end: a table whose log names a data
file outside it shows none of its rows, neither in `manage.py audit --json` (a subprocess, as
a user runs it) nor in the API's finding detail; a shallow clone still confirms when its
source is granted (`--read-root` on the CLI, the project's read roots on the server), and
only then: lying under AUDIT_ALLOWED_ROOTS is not enough."""

from __future__ import annotations

import json
import os

import pytest
from django.core.cache import cache
from django.core.management import call_command

from audit.core.storage.roots import REFUSED
from audit.models import DEFAULT_PROJECT, Finding, project_named
from tests.support.cli import manage
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.outside_table import SECRET, build_outside


def _cli_finding(table, env_roots: str | None = None, *extra: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "AUDIT_ALLOWED_ROOTS"}
    if env_roots is not None:
        env["AUDIT_ALLOWED_ROOTS"] = env_roots
    done = manage("audit", "--json", str(table), *extra, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [finding] = [f for f in report["findings"] if f["kind"] == "never_existed_snapshot"]
    return finding, done.stdout


@pytest.mark.parametrize("how", ["absolute", "relative", "file_uri"])
def test_it_keeps_rows_outside_the_roots_out_of_the_cli_report(tmp_path, how):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", how)

    finding, stdout = _cli_finding(table)

    assert SECRET not in stdout
    assert finding["confirmed"] is False
    assert [r["reason"] for r in finding["witness"]["not_read"]] == [REFUSED]


def test_it_confirms_a_shallow_clone_from_the_cli_given_its_read_root(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "clones" / "source", "absolute")

    finding, stdout = _cli_finding(table, None, "--read-root", str(tmp_path / "clones"))

    assert finding["confirmed"] is True and SECRET in stdout
    assert finding["witness"]["row_count"] == 3


def test_it_does_not_read_the_allowed_roots_from_the_cli_without_a_read_root(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "clones" / "source", "absolute")

    finding, stdout = _cli_finding(table, env_roots=str(tmp_path))

    assert finding["confirmed"] is False and SECRET not in stdout
    assert [r["reason"] for r in finding["witness"]["not_read"]] == [REFUSED]


def test_it_reads_the_audited_tables_own_files_from_the_cli_outside_the_roots(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", "same")

    finding, _ = _cli_finding(table, env_roots=str(tmp_path / "nowhere"))

    assert finding["confirmed"] is True and finding["witness"]["row_count"] == 3


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["absolute", "relative", "file_uri"])
def test_it_keeps_rows_outside_the_roots_out_of_the_finding_detail(settings, tmp_path, how, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "lake")]
    settings.AUDIT_CHECK_DATA = True
    cache.clear()
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", how)
    ingest_table(table)
    finding = Finding.objects.get(kind="never_existed_snapshot")

    response = session_client(member).get(f"/api/findings/{finding.id}/")

    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    body = response.json()
    assert body["confirmed"] is False
    assert [r["reason"] for r in body["witness"]["not_read"]] == [REFUSED]


@pytest.mark.django_db
def test_it_confirms_a_shallow_clone_into_a_granted_root_in_the_api(settings, tmp_path, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "lake"), str(tmp_path / "clones")]
    settings.AUDIT_CHECK_DATA = True
    cache.clear()
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "clones" / "source", "absolute")
    project_named(DEFAULT_PROJECT)
    call_command("project_roots", DEFAULT_PROJECT, "--add", str(tmp_path / "clones"))
    ingest_table(table)
    finding = Finding.objects.get(kind="never_existed_snapshot")

    body = session_client(member).get(f"/api/findings/{finding.id}/").json()

    assert body["confirmed"] is True and body["witness"]["row_count"] == 3
