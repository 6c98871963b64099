"""`manage.py audit --json` carries the health and change history sections (the
core's numbers against deltalake's: tests/core/test_health_core.py)."""

from __future__ import annotations

import pytest

from audit.core.health.compute import (
    health_at,
)
from audit.core.log import open_log
from tests.support.health_tables import (
    V_PROPS,
    V_PROTOCOL,
    V_SCHEMA,
    build_evolving_table,
    dry_run_vacuum,
)


@pytest.fixture(scope="module")
def evolving(tmp_path_factory) -> str:
    return str(build_evolving_table(tmp_path_factory.mktemp("health") / "t"))


def test_cli_json_carries_health_and_changes(evolving):
    from tests.support.cli import run_audit

    proc = run_audit(evolving, "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    report = json.loads(proc.stdout)
    # The readable range (time_travel) and the commit times (timestamps) come from the
    # listing of the data folders.
    assert report["health"] == health_at(open_log(evolving)) | {
        "recommendations": report["health"]["recommendations"],
        "time_travel": report["health"]["time_travel"],
        "timestamps": report["health"]["timestamps"],
    }
    assert report["health"]["timestamps"]["file_times"] == "agree"
    assert report["health"]["time_travel"]["judged"]
    assert report["health"]["time_travel"]["broken_versions"] == []
    assert report["health"]["tombstones"]["vacuumable_count"] == len(dry_run_vacuum(evolving))
    assert [(c["version"], c["kind"]) for c in report["changes"]] == [
        (V_SCHEMA, "schema"),
        (V_PROPS, "properties"),
        (V_PROTOCOL, "protocol"),
    ]
    assert all(c["by"]["engine"].startswith("delta-rs:") for c in report["changes"])
