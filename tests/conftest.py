"""Shared fixtures: real Delta tables, users, and a real Celery worker process.

- `delta_table_factory`: makes deltalake tables under tmp_path (which is also made an allowed
  root, so `add_table` / `register_table` accept them).
- `owner`, `member`, `outsider`: users in the spirit of healthchecks' hc/test.py (alice, bob,
  charlie): an administrator, a regular user, and one who should see nothing private.
- `celery_workers`: starts `celery -A workers worker --beat` subprocesses on the test database
  (a file for SQLite, test_<name> on PostgreSQL) with Redis if reachable, else kombu's
  SQLAlchemy transport on a SQLite file. Use with `transactional_db`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
from deltalake import write_deltalake

# Object-store protocol servers (moto S3, Azurite), session-scoped: see tests/objstore.py.
from tests.objstore import azurite_server, s3_server  # noqa: E402, F401

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/14")


def pytest_configure(config):
    # The SQLite test database is a file (see config/settings.py) so worker processes share it;
    # one per pytest process, so concurrent test runs in one checkout do not clobber each other.
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3" and not os.environ.get("AUDIT_TEST_SQLITE"):
        (ROOT / "var").mkdir(exist_ok=True)
        db.setdefault("TEST", {})["NAME"] = str(ROOT / "var" / f"test-db-{os.getpid()}.sqlite3")
    elif db["ENGINE"] != "django.db.backends.sqlite3" and not db.get("TEST", {}).get("NAME"):
        # test_<name>_<pid>: two test runs against one server (CI matrix, a developer's two
        # terminals) must not drop each other's database.
        db.setdefault("TEST", {})["NAME"] = f"test_{db['NAME']}_{os.getpid()}"


def pytest_unconfigure(config):
    for leftover in (ROOT / "var").glob(f"test-db-{os.getpid()}.sqlite3*"):
        leftover.unlink(missing_ok=True)


# --------------------------------------------------------------------------- Delta tables


def rows(n: int = 3, *, day: str = "2024-01-01", start: int = 0) -> pa.Table:
    return pa.table(
        {
            "day": [day] * n,
            "id": pa.array(range(start, start + n), pa.int64()),
            "amount": pa.array([(start + i) * 7 % 500 for i in range(n)], pa.int64()),
        }
    )


@pytest.fixture
def delta_table_factory(tmp_path, settings) -> Callable[..., Path]:
    """`make(name, partition_by=None, configuration=None, commits=1)` -> path of a new table."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]

    def make(
        name: str = "table",
        *,
        partition_by: list[str] | None = None,
        configuration: dict[str, str] | None = None,
        commits: int = 1,
    ) -> Path:
        path = tmp_path / name
        write_deltalake(str(path), rows(), partition_by=partition_by, configuration=configuration)
        for i in range(commits - 1):
            write_deltalake(str(path), rows(start=10 * (i + 1)), mode="append")
        return path

    return make


# --------------------------------------------------------------------------- users


@pytest.fixture(autouse=True)
def _forget_api_tokens_and_cached_pages():
    """API tokens and response bodies are remembered per process for a few seconds; not
    across tests (ids and versions repeat from one test's tables to the next)."""
    from django.core.cache import cache

    from audit.api.authentication import forget_tokens

    forget_tokens()
    cache.clear()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_superuser("alice", "alice@example.org", "password")


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "password")


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("charlie", "charlie@example.org", "password")


# --------------------------------------------------------------------------- worker processes


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

    def start(self, name: str = "w1", *, beat: bool = True, **env: str) -> subprocess.Popen:
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
            "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h", "--concurrency", "2",
            "--loglevel", "INFO", "--without-gossip", "--without-mingle",
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


@pytest.fixture
def celery_workers(transactional_db, tmp_path) -> Iterator[Workers]:
    broker = REDIS_URL if redis_reachable() else f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_DEFAULT_QUEUE": f"test-{uuid.uuid4().hex[:10]}",  # no leftovers from other runs
        "AUDIT_TAIL_INTERVAL_SECONDS": "0.5",
        "AUDIT_FULL_CHECK_SECONDS": "1",
        "AUDIT_LOCK_SECONDS": "3",
        # Tables copied from tests/data have old commits: no idle backoff unless a test asks.
        "AUDIT_IDLE_AFTER_SECONDS": "0",
        "PYTHONUNBUFFERED": "1",
    }
    workers = Workers(tmp_path, env)
    yield workers
    workers.stop_all()


def wait_for(
    condition: Callable[[], object], timeout: float, *, message: str = "", every: float = 0.2
):
    """Poll `condition` until it returns something truthy; fail with `message` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout}s: {message}")
