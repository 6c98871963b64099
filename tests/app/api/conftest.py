"""Fixtures of the REST API tests: ingested tables (written once per session, copied per test),
API clients of the personas, and the broker replaced by a list."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deltalake import write_deltalake
from django.core.cache import cache
from rest_framework.test import APIClient

from audit.models import Table
from audit.reads import analysis
from tests.support import scenarios
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.tables import rows


@pytest.fixture(autouse=True)
def fresh_caches(settings, tmp_path):
    # Users are created and logged in per test: PBKDF2 would cost ~1 s each time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    analysis._HISTORIES.clear()
    yield
    cache.clear()
    analysis._HISTORIES.clear()


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Tail tasks the API queued (the broker is replaced by a list)."""
    from workers.tasks import tail_table

    calls: list[int] = []
    monkeypatch.setattr(tail_table, "apply_async", lambda args, **kw: calls.append(args[0]))
    return calls


@pytest.fixture(scope="session")
def built_tables(tmp_path_factory) -> Path:
    """The Delta tables, written once; each test ingests its own copy."""
    root = tmp_path_factory.mktemp("api-tables")
    scenarios.build_ws_reorder_matching(str(root / "reorder"))
    write_deltalake(str(root / "long"), rows())
    for i in range(24):
        write_deltalake(str(root / "long"), rows(start=10 * (i + 1)), mode="append")
    return root


def copy_of(built_tables: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(built_tables / name, tmp_path / name))


@pytest.fixture
def reorder_table(built_tables, tmp_path) -> Table:
    """A stale DELETE under WriteSerializable after a blind append (findings at v3)."""
    return ingest_table(copy_of(built_tables, tmp_path, "reorder"), name="reorder")


@pytest.fixture
def long_table(built_tables, tmp_path) -> Table:
    """25 sequential appends (v0..v24), for pagination and the timeline."""
    return ingest_table(copy_of(built_tables, tmp_path, "long"), name="long")


@pytest.fixture
def admin_client(owner) -> APIClient:
    return session_client(owner)


@pytest.fixture
def member_client(member) -> APIClient:
    return session_client(member)
