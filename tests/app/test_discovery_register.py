"""`manage.py discover --json` and `--register`: new tables are registered; a table whose log
vanished is marked gone, keeping its history, and comes back when its log does (the walk
itself: tests/core/test_discovery.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from audit.ingest.tables import register_table
from audit.models import Commit, Table
from audit.tail.discovery import discover
from audit.tail.polling import tables_due
from audit.tail.step import tail_once
from tests.support.cli import manage
from tests.support.discovery_lake import lake_of
from tests.support.workers import database_url


@pytest.mark.django_db(transaction=True)
def test_the_cli_lists_tables_as_json_and_registers_the_new_ones(tmp_path, settings):
    root, expected = lake_of(tmp_path, n=12)
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    known = sorted(expected)[0]
    register_table(known)
    env = {**os.environ, "AUDIT_ALLOWED_ROOTS": str(tmp_path), "DATABASE_URL": database_url()}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return manage("discover", *args, env=env)

    run = cli(str(root), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert {t["uri"]: t["latest_version"] for t in data["tables"]} == expected
    assert {t["uri"] for t in data["tables"] if t["registered"]} == {known}
    assert Table.objects.count() == 1, "listing registers nothing"
    registered = cli(str(root), "--register")
    assert registered.returncode == 0, registered.stderr
    assert registered.stdout.count("\tadded") == 11
    assert "12 tables under" in registered.stdout
    assert Table.objects.count() == 12
    missing = cli(str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


@pytest.mark.django_db
def test_register_adds_new_tables_and_marks_vanished_ones_gone(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    root, expected = lake_of(tmp_path, n=15)
    first = discover(str(root), register=True)
    assert sorted(first.added) == sorted(expected)
    assert Table.objects.count() == 15
    victim = Table.objects.get(uri=sorted(expected)[3])
    while tail_once(victim.id).more:
        pass
    stored = Commit.objects.filter(table=victim).count()
    assert stored >= 1

    again = discover(str(root), register=True)
    assert again.added == [] and len(again.registered) == 15

    moved = tmp_path / "moved-log"
    shutil.move(Path(victim.uri) / "_delta_log", moved)
    gone = discover(str(root), register=True)
    assert gone.gone == [victim.uri]
    victim.refresh_from_db()
    assert victim.status == Table.Status.GONE
    assert Commit.objects.filter(table=victim).count() == stored, "history kept"
    assert victim.id not in tables_due()

    shutil.move(moved, Path(victim.uri) / "_delta_log")
    back = discover(str(root), register=True)
    assert back.revived == [victim.uri]
    victim.refresh_from_db()
    assert victim.status == Table.Status.INGESTING
