"""Production refuses unsafe settings at start (a short or placeholder secret key) and turns on
secure cookies and HSTS with a real one (the rest of the security suite: test_security.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import manage
from tests.support.paths import ROOT

pytestmark = pytest.mark.django_db


def run_settings(env: dict[str, str], code: str = "") -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "AUDIT_ENV"))}
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); from django.conf import settings as s; " + (code or "pass")
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


GOOD_KEY = "k" * 20 + "-Zq8#p2LmN4vR7xT1wY"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DJANGO_DEBUG": "true", "DJANGO_SECRET_KEY": GOOD_KEY}, "DJANGO_DEBUG must be false"),
        ({}, "set DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": ""}, "set DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "short"}, "32+ characters"),
        ({"DJANGO_SECRET_KEY": "dev-insecure-secret-key-change-me"}, "set DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "change-me-to-a-long-random-string"}, "set DJANGO_SECRET_KEY"),
    ],
)
def test_production_refuses_to_start_with_unsafe_settings(env, message):
    out = run_settings({"AUDIT_ENV": "production", **env})
    assert out.returncode != 0
    assert message in out.stderr and "refusing to start" in out.stderr
    check = manage(
        "check",
        env={**{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
             "AUDIT_ENV": "production", **env},
        timeout=60,
    )  # fmt: skip
    assert check.returncode != 0 and "refusing to start" in check.stderr


def test_production_with_a_real_key_starts_with_secure_cookies():
    out = run_settings(
        {"AUDIT_ENV": "production", "DJANGO_SECRET_KEY": GOOD_KEY},
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0)",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "True"]


def test_it_reads_the_embedded_database_through_a_memory_map(tmp_path):
    """SQLite's default 2 MB page cache re-read a big index page by page with a system call
    each (the health history of a million points cost 2.5x its CPU); the map keeps them."""
    code = (
        "from django.db import connection; c = connection.cursor(); "
        "print(c.execute('PRAGMA mmap_size').fetchone()[0], "
        "c.execute('PRAGMA journal_mode').fetchone()[0])"
    )
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    done = run_settings({"DATABASE_URL": url}, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2147418112", "wal"]
