"""Real `celery -A workers worker --beat` processes on the test database.

The broker is Redis when reachable, else kombu's SQLAlchemy transport on a SQLite file; the
`celery_workers` fixture (tests/e2e/conftest.py) builds the environment and stops them after.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

from tests.support.paths import ROOT

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/14")


def redis_reachable(url: str = REDIS_URL) -> bool:
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    try:
        with socket.create_connection((host, int(port or 6379)), timeout=0.5):
            return True
    except OSError:
        return False


def database_url() -> str:
    """A DATABASE_URL naming the database the tests are using right now."""
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{s['NAME']}"
    user = quote(s.get("USER") or "")
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    host = s.get("HOST") or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{user}{password}@{host}{port}/{s['NAME']}"


class Workers:
    """Start, kill (SIGKILL) and stop `celery -A workers worker --beat` processes."""

    def __init__(self, tmp: Path, env: dict[str, str]):
        self.tmp = tmp
        self.env = env
        self.procs: dict[str, subprocess.Popen] = {}

    def start(
        self,
        name: str = "w1",
        *,
        beat: bool = True,
        loglevel: str = "INFO",
        concurrency: int = 2,
        **env: str,
    ) -> subprocess.Popen:
        if self.env["CELERY_BROKER_URL"].startswith("sqla+"):
            declare = "import workers, django; django.setup(); import workers.tasks as t; t.declare_default_queue()"
            subprocess.run(
                [sys.executable, "-c", declare], cwd=ROOT, env={**self.env, **env}, check=True
            )
        from django.conf import settings

        # The tail re-checks AUDIT_ALLOWED_ROOTS before reading: give the worker the test's roots
        # (delta_table_factory makes tmp_path one) unless the caller passes its own.
        env.setdefault("AUDIT_ALLOWED_ROOTS", ",".join(settings.AUDIT_ALLOWED_ROOTS))
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        args = [
            sys.executable, "-m", "celery", "-A", "workers", "worker",
            "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h", "--concurrency", str(concurrency),
            "--loglevel", loglevel, "--without-gossip", "--without-mingle",
        ]  # fmt: skip
        if beat:
            args += ["--beat", "--schedule", str(self.tmp / f"beat-{name}")]
        proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill() reaches pool children and beat
        )
        self.procs[name] = proc
        return proc

    def kill(self, name: str = "w1") -> None:
        """SIGKILL the worker and everything it started, as a crash would."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in self.tmp.glob("*.log"))
