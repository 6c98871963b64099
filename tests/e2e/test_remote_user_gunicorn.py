"""AUDIT_REMOTE_USER_HEADER behind a real gunicorn (config/gunicorn.conf.py): the header names
a user only when the TCP peer gunicorn saw is one of AUDIT_TRUSTED_PROXIES. The test's own
requests come from 127.0.0.1, so the same request is a proxy's or a stranger's depending on
the list the server starts with."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.support.alerting import make_table
from tests.support.net import free_port
from tests.support.paths import ROOT
from tests.support.projects import into, join
from tests.support.workers import database_url

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def gunicorn(trusted: str, log: Path) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "AUDIT_REMOTE_USER_HEADER": "HTTP_X_REMOTE_USER",
        "AUDIT_TRUSTED_PROXIES": trusted,
        "WEB_CONCURRENCY": "1",
        "WEB_THREADS": "2",
        "LOG_LEVEL": "WARNING",
    }
    args = [
        str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi:application",
        "-c", str(ROOT / "config" / "gunicorn.conf.py"), "--bind", f"127.0.0.1:{port}",
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_gunicorn_honours_the_header_only_from_a_trusted_proxy(django_user_model, tmp_path):
    into(make_table("ledger", "/lake/fin/ledger"), "finance")
    join(django_user_model.objects.create_user("erin"), "finance")
    django_user_model.objects.create_superuser("root", "root@example.org", "password")
    named = {"X-Remote-User": "erin"}
    with gunicorn("192.0.2.1", tmp_path / "stranger.log") as base:  # not the test's address
        assert requests.get(f"{base}/api/tables/", headers=named, timeout=10).status_code == 401
        root = requests.get(f"{base}/api/alerts/channels/", headers={"X-Remote-User": "root"})
        assert root.status_code in (401, 403)
    with gunicorn("127.0.0.1", tmp_path / "proxy.log") as base:
        answer = requests.get(f"{base}/api/tables/", headers=named, timeout=10)
        assert answer.status_code == 200, answer.text
        assert [t["name"] for t in answer.json()["results"]] == ["ledger"]
