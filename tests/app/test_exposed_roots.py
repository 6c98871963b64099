"""The product refuses to start with an allowed root that holds its own files.

A log steers reads inside AUDIT_ALLOWED_ROOTS: a root holding the SQLite database (its `-wal`
too), the var dir or the storage configuration would let a log name them as data files. The
settings refuse such a root at start (config/checks.py), as they refuse a weak secret key;
the defaults (./demo-tables, scripts/run.sh's demo folder) hold none of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.checks import exposed_product_files
from tests.support.paths import ROOT


def _start(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "AUDIT_", "DATABASE_URL"))
    }
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); from django.conf import settings as s; print(s.AUDIT_ALLOWED_ROOTS)"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _refused(done: subprocess.CompletedProcess, held: Path | str) -> None:
    assert done.returncode != 0
    [line] = [x for x in done.stderr.splitlines() if x.startswith("config.env.ConfigError")]
    assert f"holds {held}" in line


@pytest.fixture
def place(tmp_path) -> dict[str, str]:
    """A database, var dir and storage config of their own, and an empty lake."""
    (tmp_path / "lake").mkdir()
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "storage.toml").write_text("")
    return {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'data' / 'db.sqlite3'}",
        "AUDIT_VAR_DIR": str(tmp_path / "var"),
        "AUDIT_STORAGE_CONFIG": str(tmp_path / "cfg" / "storage.toml"),
    }


def test_it_starts_with_the_default_roots_and_a_root_holding_nothing_of_its_own(place, tmp_path):
    assert _start({}).returncode == 0  # the checkout's defaults
    done = _start({**place, "AUDIT_ALLOWED_ROOTS": f"{tmp_path / 'lake'},s3://bucket/x"})
    assert done.returncode == 0, done.stderr


def test_it_refuses_the_checkout_as_a_root_with_its_database():
    # scripts/run.sh's old default: the checkout, with db.sqlite3 (and its -wal) in it.
    _refused(_start({"AUDIT_ALLOWED_ROOTS": str(ROOT)}), ROOT / "db.sqlite3")


@pytest.mark.parametrize(
    ("root", "held"),
    [
        ("data", "data/db.sqlite3"),
        ("file_uri", "data/db.sqlite3"),
        ("", "cfg/storage.toml"),  # holds all three: the first named
        ("var", "var"),
        ("var/lake", "var"),
        ("cfg", "cfg/storage.toml"),
    ],
)
def test_it_refuses_a_root_holding_the_database_var_dir_or_storage_config(
    place, tmp_path, root, held
):
    where = (
        f"file://{tmp_path / 'data'}" if root == "file_uri" else str(tmp_path / root).rstrip("/")
    )
    done = _start({**place, "AUDIT_ALLOWED_ROOTS": f"{tmp_path / 'lake'},{where}"})
    _refused(done, tmp_path / held)


def test_it_refuses_a_root_holding_only_the_write_ahead_log(tmp_path):
    # The -wal file beside a database elsewhere: as readable as the database itself.
    db = tmp_path / "db.sqlite3"
    (tmp_path / "wal").mkdir()
    problems = exposed_product_files(
        [str(tmp_path / "wal")], [str(tmp_path / "wal" / "db.sqlite3-wal"), str(db)], []
    )
    assert problems == [
        f"AUDIT_ALLOWED_ROOTS entry {str(tmp_path / 'wal')!r} holds {tmp_path / 'wal'}/db.sqlite3-wal"
    ]
