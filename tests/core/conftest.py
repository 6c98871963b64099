"""Fixtures of the core layer (pure: no database, no servers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.predicate_logs import build_delta_rs_table


@pytest.fixture(scope="session")
def delta_rs_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The predicate tests' delta-rs table (tests/support/predicate_logs.py), written once:
    the tests only read it."""
    return build_delta_rs_table(tmp_path_factory.mktemp("delta-rs") / "events")
