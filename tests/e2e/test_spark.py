"""The Spark fleet path against the Python path: same summaries, same audits, same stored rows.

One SparkSession (local[2]) and one fleet job serve the whole module: the job audits every
table of tests/data/delta-tables plus delta-rs scenario tables with findings, with tiny chunks
so every table's log is split across tasks; each test then compares one slice of the result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit.core import serialize
from audit.core.audit import audit_history
from audit.core.errors import DeltaAuditError
from audit.core.history.summary import load_history
from audit.core.jsonsafe import json_safe
from audit.core.model import Finding, Predicate
from audit.ingest.commits import settings_snapshot
from audit.ingest.tables import register_table
from audit.models import Commit, Incident, Table
from audit.models import Finding as FindingRow
from audit.tail.step import tail_once
from tests.support import revealing_tables, scenarios
from tests.support.ingested import ingest_table
from tests.support.paths import DELTA_TABLES, ROOT

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
    # Findings placed before the commit that reveals them, in another range at CHUNK = 2.
    **{f"revealing_{name}": build for name, build in revealing_tables.BUILDERS.items()},
}


def data_tables() -> list[str]:
    return sorted(str(p.parent) for p in DATA.glob("*/**/_delta_log") if p.is_dir())


def python_path(uri: str) -> tuple[Any, Any] | str:
    """(history, audit) of the Python path, or its one-line error."""
    try:
        history = load_history(uri)
        return history, audit_history(history)
    except DeltaAuditError as err:
        return str(err).strip().splitlines()[0]


def comparable(history: Any, result: Any) -> dict[str, Any]:
    """Everything both paths must agree on, as plain values."""
    return {
        "summaries": history.summaries,
        "latest": history.listing.latest_version,
        "first_available": history.first_available_version,
        "settings": settings_snapshot(history.state),
        "audits": {v: serialize.commit_audit_to_json(a) for v, a in result.commits.items()},
        "findings": [serialize.finding_to_row(f) for f in result.findings],
    }


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def spark():
    from workers.spark.session import get_spark

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
    from workers.spark.job import audit_fleet

    uris = data_tables() + list(scenario_tables.values())
    outcomes = {o.table_uri: o for o in audit_fleet(spark, uris, chunk_commits=CHUNK, paths=True)}
    assert set(outcomes) == set(uris)
    return outcomes


# --------------------------------------------------------------------------- the differential


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("uri", data_tables(), ids=lambda u: "/".join(Path(u).parts[-2:]))
def test_spark_and_python_agree_on_every_data_table(fleet, uri):
    outcome = fleet[uri]
    expected = python_path(uri)
    if isinstance(expected, str):
        assert outcome.error == expected
        return
    assert outcome.error is None, outcome.error
    got = comparable(outcome.history, outcome.audit)
    assert got == comparable(*expected)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_spark_and_python_agree_on_scenario_tables_with_findings(fleet, scenario_tables, name):
    uri = scenario_tables[name]
    history, result = python_path(uri)
    outcome = fleet[uri]
    assert outcome.error is None, outcome.error
    assert comparable(outcome.history, outcome.audit) == comparable(history, result)


@pytest.mark.spark
@pytest.mark.slow
def test_the_differential_covers_findings_errors_and_multi_chunk_logs(fleet, scenario_tables):
    """Guards the test above against passing vacuously."""
    kinds = {f.kind for o in fleet.values() if o.audit for f in o.audit.findings}
    assert {"write_serializable_reorder", "never_existed_snapshot"} <= kinds
    confirmed = [
        f for o in fleet.values() if o.audit for f in o.audit.findings if f.witness is not None
    ]
    assert confirmed, "no finding with a witness read from data files"
    assert any(o.error for o in fleet.values()), "no unreadable table in the fleet"
    longest = max(len(o.history.summaries) for o in fleet.values() if o.history)
    assert longest > 5 * CHUNK


@pytest.mark.spark
@pytest.mark.slow
def test_isolation_levels_derived_after_the_first_chunk_use_the_tables_setting(
    fleet, scenario_tables
):
    # delta-rs records no isolationLevel: it is derived from delta.isolationLevel, set at v0,
    # i.e. in another chunk than v2, v3. Without stage 2's re-derivation these would say
    # Serializable (delta-rs's default).
    outcome = fleet[scenario_tables["ws_reorder_matching"]]
    late = [s for s in outcome.history.summaries if s.version >= CHUNK]
    assert late and all(s.facts["isolation_level"] == "derived" for s in late)
    assert {s.isolation_level for s in late} == {"WriteSerializable"}


@pytest.mark.spark
@pytest.mark.slow
def test_a_long_history_split_into_ranges_equals_one_task(spark, tmp_path, monkeypatch):
    """A table cut into version ranges (each audited over its concurrent window; the table-level
    findings once, on the driver, from the ranges' parts) gives the commits and findings of the
    same table audited in one task, and of the Python path."""
    from bench.gen_log import generate
    from workers.spark.job import audit_fleet, plan_table
    from workers.spark.units import RANGE, TABLE_LEVEL

    uri = str(tmp_path / "long")
    generate(uri, 1200, seed=5)  # concurrent writers: read versions behind, MERGE, OPTIMIZE
    plan = plan_table(uri, 100)
    assert [u.kind for u in plan.units].count(RANGE) == 12
    assert [u.kind for u in plan.units].count(TABLE_LEVEL) == 0  # no second read of the log

    [split] = audit_fleet(spark, [uri], chunk_commits=100, check_data=False, paths=True)
    [whole] = audit_fleet(spark, [uri], chunk_commits=5000, check_data=False, paths=True)
    assert split.error is None and whole.error is None
    got = comparable(split.history, split.audit)
    assert got == comparable(whole.history, whole.audit)
    history = load_history(uri)
    assert got == comparable(history, audit_history(history, check_data=False))
    # Results collected in several waves (jobs) join up too: 12 units over 4 waves, each
    # unit's results in rows of 30 commits (one task's too).
    monkeypatch.setattr("workers.spark.job.RESULT_COMMITS_PER_JOB", 700)
    monkeypatch.setattr("workers.spark.units.ROW_COMMITS", 30)
    [rows] = audit_fleet(spark, [uri], chunk_commits=5000, check_data=False, paths=True)
    assert comparable(rows.history, rows.audit) == got
    [waves] = audit_fleet(spark, [uri], chunk_commits=100, check_data=False, paths=True)
    assert comparable(waves.history, waves.audit) == got
    # Without paths (what storage gets): the same, paths left out as one task leaves them.
    [bare] = audit_fleet(spark, [uri], chunk_commits=100, check_data=False)
    [bare_whole] = audit_fleet(spark, [uri], chunk_commits=5000, check_data=False)
    assert comparable(bare.history, bare.audit) == comparable(bare_whole.history, bare_whole.audit)
    # Not vacuous: commits with concurrent windows, commit-level and table-level findings.
    assert sum(bool(a["concurrent_versions"]) for a in map(_json, got["audits"].values())) > 100
    kinds = {f["kind"] for f in got["findings"]}
    assert kinds & {"conflict_hotspot", "missing_read_version"}
    assert len(got["findings"]) > len(kinds)


def _json(text: str) -> dict[str, Any]:
    import orjson

    return orjson.loads(text)


# --------------------------------------------------------------------------- stored rows


def stored(table: Table) -> dict[str, Any]:
    table.refresh_from_db()
    commits = list(Commit.objects.filter(table=table).order_by("version").values())
    findings = list(FindingRow.objects.filter(table=table).order_by("key").values())
    for row in commits:
        row.pop("id"), row.pop("table_id")
    # An incident is named by its cause key's id (stable), not its row's primary key.
    incidents = list(Incident.objects.filter(table=table).order_by("incident_id").values())
    cause_of = {row["id"]: row["incident_id"] for row in incidents}
    for row in findings:
        for name in ("id", "table_id", "first_seen", "last_seen", "resolved_at"):
            row.pop(name)
        row["incident_id"] = cause_of.get(row["incident_id"])
    for row in incidents:
        for name in ("id", "table_id", "first_seen", "last_seen", "recheck_at"):
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
    return {"table": state, "commits": commits, "findings": findings, "incidents": incidents}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", ["ws_reorder_matching", "stale_full_overwrite", "golden-checkpoint"]
)
def test_stored_rows_are_the_same_from_both_paths(spark, scenario_tables, settings, name):
    from workers.spark.tasks import run_spark_audit

    uri = (
        str(DATA / "golden" / "checkpoint") if name.startswith("golden") else scenario_tables[name]
    )
    settings.AUDIT_ALLOWED_ROOTS = [str(ROOT), str(Path(uri).parent)]
    settings.AUDIT_SPARK_CHUNK_COMMITS = CHUNK

    table = ingest_table(uri, chunk=3)  # the Celery path, in small chunks
    by_python = stored(table)
    table.delete()

    table, _ = register_table(uri)
    [result] = run_spark_audit([table], spark=spark)
    by_spark = stored(table)

    assert result.status == "ok" and result.stored == len(by_spark["commits"])
    assert by_spark["commits"] and by_spark == by_python
    if name != "golden-checkpoint":
        assert by_spark["findings"] and by_spark["incidents"]
        assert all(f["incident_id"] for f in by_spark["findings"] if f["status"] == "open")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.django_db
def test_a_table_the_tail_already_started_gets_only_its_remaining_versions(
    spark, scenario_tables, settings
):
    from workers.spark.tasks import run_spark_audit

    uri = scenario_tables["sequential"]
    settings.AUDIT_ALLOWED_ROOTS = [str(Path(uri).parent)]
    table, _ = register_table(uri)
    assert tail_once(table.id, chunk=3).more  # v0..v2 stored by the tail

    [result] = run_spark_audit([table], spark=spark)

    versions = list(Commit.objects.filter(table=table).values_list("version", flat=True))
    assert sorted(versions) == list(range(len(load_history(uri).summaries)))
    assert (result.status, result.stored) == ("ok", len(versions) - 3)
    table.refresh_from_db()
    assert (table.status, table.locked_by) == ("ok", "")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.django_db
def test_a_table_locked_by_a_worker_is_skipped(spark, scenario_tables, settings):
    from audit.ingest.lease import TableLease
    from workers.spark.tasks import run_spark_audit

    uri = scenario_tables["stale_update"]
    settings.AUDIT_ALLOWED_ROOTS = [str(Path(uri).parent)]
    table, _ = register_table(uri)
    lease = TableLease.acquire(table.id)

    [result] = run_spark_audit([table], spark=spark)

    assert result.status == "busy"
    assert not Commit.objects.filter(table=table).exists()
    assert lease.release()


# --------------------------------------------------------------------------- Java, logging


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


START = (
    "from audit.core.errors import DeltaAuditError\n"
    "from workers.spark.session import get_spark\n"
    "try:\n"
    "    get_spark('local[1]')\n"
    "except DeltaAuditError as err:\n"
    "    print('ERROR', err)\n"
)


@pytest.mark.spark
def test_a_bad_java_home_is_one_clear_line(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    done = run_python(START, env)
    assert done.stdout.startswith("ERROR JAVA_HOME=") and "has no bin/java" in done.stdout
    assert done.stdout.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.spark
def test_java_missing_from_path_is_one_clear_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java (and nothing else) on PATH
    done = run_python(START, env)
    assert (
        done.stdout
        == "ERROR Java is not installed: PySpark needs Java 17 or 21 (install a JDK or set JAVA_HOME)\n"
    )


@pytest.mark.spark
@pytest.mark.django_db
def test_the_command_exits_2_with_one_line_when_java_is_missing(monkeypatch, tmp_path, capsys):
    from django.core.management import call_command

    table, _ = Table.objects.get_or_create(uri=str(tmp_path / "t"), defaults={"name": "t"})
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(SystemExit) as exit_info:
        call_command("spark_audit", "--tables", str(table.id), "--master", "local[1]")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: JAVA_HOME=") and err.count("\n") == 1


@pytest.mark.spark
@pytest.mark.slow
def test_spark_keeps_quiet_on_the_console(tmp_path):
    code = (
        "from workers.spark.session import get_spark\n"
        f"s = get_spark('local[1]', log_file={str(tmp_path / 'spark.log')!r})\n"
        "print(s.range(5).count())\n"
    )
    done = run_python(code, dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (done.stdout, done.stderr) == ("5\n", "")
    assert (tmp_path / "spark.log").exists()


@pytest.mark.parametrize("uri", data_tables()[::7], ids=lambda u: Path(u).name)
def test_summary_rows_round_trip_on_real_tables(uri):
    expected = python_path(uri)
    if isinstance(expected, str):
        pytest.skip("unreadable table")
    history, result = expected
    import pyarrow as pa

    rows = [serialize.summary_to_row(s) for s in history.summaries]
    batch = pa.RecordBatch.from_pylist(rows, schema=serialize.SUMMARY_SCHEMA)  # Arrow-friendly
    assert [serialize.summary_from_row(r) for r in batch.to_pylist()] == history.summaries
    for finding in result.findings:
        row = serialize.finding_to_row(finding)
        assert serialize.finding_to_row(serialize.finding_from_row(row)) == row
    for audit in result.commits.values():
        text = serialize.commit_audit_to_json(audit)
        assert serialize.commit_audit_to_json(serialize.commit_audit_from_json(text)) == text


def test_hostile_values_survive_the_round_trip():
    import datetime as dt
    from decimal import Decimal

    history, _ = python_path(str(DATA / "golden" / "checkpoint"))
    s = history.summaries[-1]
    s.read_version = 10**30  # from a readVersion of "1000...0" (text)
    s.timestamp = -(2**70)
    s.bytes_added = 2**64 + 5
    s.operation = "DELETE\x00<script>"
    s.predicate = Predicate("id#1 > 'é'", None, frozenset({"id"}), "unparsable")
    s.added_partitions = frozenset({(("d", None),), (("d", "x"),)})
    row = serialize.summary_to_row(s)
    assert serialize.summary_from_row(row) == s

    finding = Finding(
        "never_existed_snapshot", "critical", 3, [2], True, "s", "e",
        witness={"sample_rows": [{"day": dt.date(2024, 1, 2), "amount": Decimal("1.50")}]},
        details={"paths": {"b", "a"}, "big": 2**70},
    )  # fmt: skip
    back = serialize.finding_from_row(serialize.finding_to_row(finding))
    assert back.witness == {"sample_rows": [{"day": "2024-01-02", "amount": "1.50"}]}
    assert back.details == {"paths": ["a", "b"], "big": str(2**70)}
    assert json_safe(finding.witness) == back.witness  # stored alike by either path


@pytest.mark.spark
@pytest.mark.slow
def test_it_reads_data_files_in_tasks_only_as_the_python_path_may(spark, fleet):
    """Executors keep the trust boundary: no sample rows when none may be shown, no data file
    read outside the roots the deployment allows."""
    from workers.spark.job import audit_fleet

    witnessed = sorted(
        uri
        for uri, o in fleet.items()
        if o.audit and any(f.witness and f.witness.get("sample_rows") for f in o.audit.findings)
    )
    assert witnessed, "no table in the fleet has a witness with sample rows"
    counts = {o.table_uri: o for o in audit_fleet(spark, witnessed, sample_rows=0, paths=True)}
    for uri in witnessed:
        witnesses = [f.witness for f in counts[uri].audit.findings if f.witness]
        assert witnesses and all(w.get("row_count") for w in witnesses if "row_count" in w)
        assert all(not w.get("sample_rows") for w in witnesses), uri
    elsewhere = [str(Path(witnessed[0]).parent / "no-such-root")]
    [refused] = audit_fleet(spark, witnessed[:1], read_roots=elsewhere, paths=True)
    assert not any(
        f.confirmed for f in refused.audit.findings if f.kind == "never_existed_snapshot"
    )
    assert not any(f.witness and f.witness.get("sample_rows") for f in refused.audit.findings)
