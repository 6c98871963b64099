"""Shared fixtures and personas, visible to every layer (tests/core, tests/app, tests/e2e).

- `delta_table_factory`: makes deltalake tables under tmp_path (which is also made an allowed
  root, so `add_table` / `register_table` accept them).
- `owner`, `member`, `outsider`, `admin`: users in the spirit of healthchecks' hc/test.py
  (alice, bob, charlie, dana): the superuser, a regular user, one who should see nothing
  private, and a staff user who is not the superuser. Bob and charlie are viewers of the
  default project (where tables made without a project go): they read, change nothing, and
  see no other project (tests/support/projects.py).
- `receiver`: a real HTTP server on loopback that records the alerts it is sent.

Worker processes (`celery_workers`) and object-store servers (`s3_server`, `azurite_server`) are
fixtures of tests/e2e/conftest.py; helpers shared by several layers live in tests/support/.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from deltalake import write_deltalake

from tests.support.paths import ROOT
from tests.support.receiver import Receiver
from tests.support.tables import rows

# Names tests imported from here before the layers: kept so `from tests.conftest import ...`
# still works (new code imports them from tests.support).
from tests.support.waiting import wait_for  # noqa: F401
from tests.support.workers import REDIS_URL, database_url, redis_reachable  # noqa: F401

# The alert receiver of the tests listens on loopback, which alert channels refuse by default;
# worker processes started by the tests inherit this (tests of the refusal turn it off).
os.environ.setdefault("AUDIT_ALLOW_PRIVATE_WEBHOOKS", "true")


def pytest_configure(config):
    # The SQLite test database is a file (see config/settings.py) so worker processes share it;
    # one per pytest process, so concurrent test runs in one checkout do not clobber each other.
    from django.conf import settings

    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = os.environ["AUDIT_ALLOW_PRIVATE_WEBHOOKS"] == "true"
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


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_superuser("alice", "alice@example.org", "password")


@pytest.fixture
def member(django_user_model):
    user = django_user_model.objects.create_user("bob", "bob@example.org", "password")
    return _viewer_of_default(user)


def _viewer_of_default(user):
    from tests.support.projects import join  # Django's: imported only where a user is made

    return join(user)


@pytest.fixture
def outsider(django_user_model):
    user = django_user_model.objects.create_user("charlie", "charlie@example.org", "password")
    return _viewer_of_default(user)


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user("dana", password="password", is_staff=True)


# --------------------------------------------------------------------------- alert receiver


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()
