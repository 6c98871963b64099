"""The Spark fleet path against the Python path: same summaries, same audits, same stored rows.

One SparkSession (local[2]) and one fleet job serve the whole module: the job audits every
table of tests/data/delta-tables plus delta-rs scenario tables with findings, with tiny chunks
so every table's log is split across tasks; each test then compares one slice of the result.
"""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import Commit, Table
from audit.models import Finding as FindingRow
from tests.support import scenarios
from tests.support.paths import DELTA_TABLES

DATA = DELTA_TABLES
CHUNK = 2  # commits per Spark task: forces every multi-commit log across several tasks


SCENARIOS = {
    "ws_reorder_matching": scenarios.build_ws_reorder_matching,
    "ws_reorder_not_matching": scenarios.build_ws_reorder_not_matching,
    "disjoint_partitions": scenarios.build_disjoint_partitions,
    "stale_unconditional_delete": scenarios.build_stale_unconditional_delete,
    "stale_full_overwrite": scenarios.build_stale_full_overwrite,
    "stale_update": scenarios.build_stale_update,
    "stale_merge": scenarios.build_stale_merge,
    "sequential": scenarios.build_sequential,
    "stale_overwrite_after_optimize": scenarios.build_stale_overwrite_after_optimize,
    "stale_predicated_delete_after_optimize": (
        scenarios.build_stale_predicated_delete_after_optimize
    ),
}


def data_tables() -> list[str]:
    return sorted(str(p.parent) for p in DATA.glob("*/**/_delta_log") if p.is_dir())


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def spark():
    from workers.spark_session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def scenario_tables(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("spark-scenarios")
    tables = {}
    for name, build in SCENARIOS.items():
        build(str(base / name))
        tables[name] = str(base / name)
    return tables


@pytest.fixture(scope="module")
def fleet(spark, scenario_tables) -> dict[str, Any]:
    """One Spark job over every data table and scenario table: {uri: TableOutcome}."""
    from workers.spark_job import audit_fleet

    uris = data_tables() + list(scenario_tables.values())
    outcomes = {o.table_uri: o for o in audit_fleet(spark, uris, chunk_commits=CHUNK, paths=True)}
    assert set(outcomes) == set(uris)
    return outcomes


# --------------------------------------------------------------------------- stored rows


def stored(table: Table) -> dict[str, Any]:
    table.refresh_from_db()
    commits = list(Commit.objects.filter(table=table).order_by("version").values())
    findings = list(FindingRow.objects.filter(table=table).order_by("key").values())
    for row in commits:
        row.pop("id"), row.pop("table_id")
    for row in findings:
        for name in ("id", "table_id", "first_seen", "last_seen", "resolved_at"):
            row.pop(name)
    state = {
        name: getattr(table, name)
        for name in (
            "status",
            "last_error",
            "last_seen_version",
            "first_available_version",
            "latest_version_in_log",
            "backfill_target_version",
            "backfill_done",
            "settings_snapshot",
            "last_commit_at",
            "table_findings_dirty",
            "locked_by",
        )
    }
    return {"table": state, "commits": commits, "findings": findings}


# --------------------------------------------------------------------------- routing, rows


@pytest.mark.django_db
def test_should_use_spark_follows_the_threshold(settings):
    from workers.spark_tasks import should_use_spark

    table = Table.objects.create(uri="/nowhere/t", name="t")
    settings.AUDIT_SPARK_BACKFILL_THRESHOLD = 0
    assert not should_use_spark(table, 10**9)
    settings.AUDIT_SPARK_BACKFILL_THRESHOLD = 1000
    assert not should_use_spark(table, 1000)
    assert should_use_spark(table, 1001)
    table.status = Table.Status.PAUSED
    assert not should_use_spark(table, 10**9)
