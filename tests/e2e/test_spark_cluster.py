"""The fleet audit on a real Spark standalone cluster and through a real Spark Connect server.

The cluster (master + one worker) and the Connect server are started once for the module
from pyspark's own sbin/ scripts (tests/e2e/spark_cluster.py). Executors run without the
project on their path: the core reaches them only as the zip the job ships.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command

from audit.models import Commit, Finding, Table
from tests.e2e.spark_cluster import Cluster
from tests.support import scenarios
from tests.support.paths import DELTA_TABLES, ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GOLDEN = DELTA_TABLES / "golden" / "checkpoint"
COMMIT_FIELDS = (
    "version", "timestamp", "operation", "read_version", "isolation_level", "blind_append",
    "concurrent_versions", "files_added", "files_removed", "engine",
)  # fmt: skip
FINDING_FIELDS = ("kind", "severity", "version", "related_versions", "confirmed", "summary")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def connect_url(cluster):
    return cluster.start_connect(cores=1)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> list[str]:
    base = tmp_path_factory.mktemp("cluster-tables")
    scenarios.build_stale_full_overwrite(str(base / "stale_full_overwrite"))
    scenarios.build_ws_reorder_matching(str(base / "ws_reorder_matching"))
    return [str(base / "stale_full_overwrite"), str(base / "ws_reorder_matching"), str(GOLDEN)]


@pytest.fixture
def on_cluster(settings, monkeypatch, tables):
    """Settings for a session on the test cluster; the session is stopped afterwards."""
    settings.AUDIT_ALLOWED_ROOTS = sorted({str(Path(t).parent) for t in tables})
    settings.AUDIT_SPARK_CHUNK_COMMITS = 2  # every log split across tasks
    settings.AUDIT_SPARK_CONF = {
        "spark.pyspark.python": sys.executable,
        "spark.cores.max": "1",
        "spark.executor.memory": "1g",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # restored after the test
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    yield settings
    stop_sessions()


def stop_sessions() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def cli_report(uri: str, *options: str) -> dict[str, Any]:
    """What `manage.py audit <uri> --json` prints (it writes to sys.stdout.buffer)."""
    real_stdout, buffer = sys.stdout, io.BytesIO()
    sys.stdout = io.TextIOWrapper(buffer, encoding="utf-8")
    try:
        call_command("audit", uri, "--json", *options)
        sys.stdout.flush()
        return orjson.loads(buffer.getvalue())
    finally:
        sys.stdout = real_stdout


def expected_rows(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "commits": [{k: c[k] for k in COMMIT_FIELDS} for c in report["commits"]],
        "findings": sorted(
            ({k: f[k] for k in FINDING_FIELDS} for f in report["findings"]),
            key=lambda f: (f["kind"], f["version"], f["related_versions"]),
        ),
        "latest": report["table"]["version"],
    }


def stored_rows(uri: str) -> dict[str, Any]:
    table = Table.objects.get(uri=uri)
    commits = list(Commit.objects.filter(table=table).order_by("version").values(*COMMIT_FIELDS))
    findings = sorted(
        Finding.objects.filter(table=table).values(*FINDING_FIELDS),
        key=lambda f: (f["kind"], f["version"], f["related_versions"]),
    )
    return {"commits": commits, "findings": findings, "latest": table.last_seen_version}


def run_command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    real_err = sys.stderr
    sys.stderr = err
    try:
        call_command("spark_audit", *args, stdout=out)
        code = 0
    except SystemExit as exit_info:
        code = int(exit_info.code or 0)
    finally:
        sys.stderr = real_err
    return code, out.getvalue(), err.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["standalone", "connect"])
def test_the_cluster_stores_what_the_cli_reports(cluster, request, on_cluster, tables, kind):
    url = cluster.master_url if kind == "standalone" else request.getfixturevalue("connect_url")
    expected = {uri: expected_rows(cli_report(uri)) for uri in tables}

    code, out, err = run_command("--tables", *tables, "--master", url)

    assert (code, err) == (0, ""), out
    assert out.count(": ok, stored") == len(tables), out
    for uri in tables:
        assert stored_rows(uri) == expected[uri], uri
    assert any(f["kind"] for uri in tables for f in expected[uri]["findings"])
    assert any(f["confirmed"] for uri in tables for f in expected[uri]["findings"])


@pytest.mark.django_db
def test_executors_without_the_libraries_fail_in_one_line(cluster, on_cluster, tables, tmp_path):
    # A bare venv of this Python: same version, none of the libraries.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True
    )
    python = str(tmp_path / "bare" / "bin" / "python")
    on_cluster.AUDIT_SPARK_CONF = {**on_cluster.AUDIT_SPARK_CONF, "spark.pyspark.python": python}
    code, out, err = run_command("--tables", tables[0], "--master", cluster.master_url)

    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: executors cannot run the audit: missing Python packages orjson")
    assert python in err and "docs/spark.md" in err
    assert not Commit.objects.exists()


@pytest.mark.django_db
def test_the_core_reaches_executors_as_the_shipped_zip(cluster, on_cluster):
    from pyspark.sql import SparkSession

    from workers.spark.probe import probe_executors
    from workers.spark.session import get_spark

    # A fresh application. Before anything is shipped the executors cannot import the core;
    # in a long test session an earlier application's zip can still be reachable from a reused
    # Python worker, so that half is checked when it applies. What must hold in every case is
    # below: after shipping, the executors import the core from the zip, not from a checkout.
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark = get_spark(cluster.master_url, extra_conf=on_cluster.AUDIT_SPARK_CONF)
    try:
        probe_executors(spark)
    except Exception as err:  # noqa: BLE001 - the probe's one-line error is the point
        assert "cannot import the shipped audit core" in str(err)

    from workers.spark.job import prepare_executors

    prepare_executors(spark)
    [report, *_] = probe_executors(spark)
    assert report["core_file"].endswith("audit/core/audit.py")
    assert ".zip" in report["core_file"] and str(ROOT) not in report["core_file"]
    assert str(ROOT) not in report["cwd"]


@pytest.mark.django_db
def test_an_executor_lost_mid_job_is_retried_and_nothing_is_stored_twice(
    cluster, on_cluster, tmp_path
):
    from bench.gen_log import generate

    big = tmp_path / "big"
    generate(str(big), 1500, seed=3)
    on_cluster.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    on_cluster.AUDIT_SPARK_CHUNK_COMMITS = 50
    expected = expected_rows(cli_report(str(big), "--no-data"))
    killed: list[int] = []

    def kill_when_busy() -> None:
        from pyspark import SparkContext

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            time.sleep(0.1)
            try:  # the context may still be starting (or stopping): look again
                tracker = SparkContext._active_spark_context.statusTracker()
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:
                continue
            for info in stages:
                # The audit's first stage (the probe is stage 0), some tasks done, more to go.
                if info and info.stageId >= 1 and 0 < info.numCompletedTasks < info.numTasks - 2:
                    for pid in cluster.executor_pids():
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    return

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    code, out, err = run_command("--tables", str(big), "--master", cluster.master_url, "--no-data")
    killer.join(timeout=5)

    assert killed, "the executor was never killed mid-job"
    if code == 0:  # the lost tasks were retried on a new executor: everything, once
        assert stored_rows(str(big)) == expected
    else:  # or one clear line, and nothing half-stored
        assert err.count("\n") == 1 and err.startswith("error: "), err
        assert not Commit.objects.filter(table__uri=str(big)).exists()


# --------------------------------------------------------------------------- --output, import


def import_audit(root: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("import_audit", root, stdout=out)
        return 0, out.getvalue()
    except SystemExit as exit_info:
        return int(exit_info.code or 0), out.getvalue()


def assert_imported_like_the_cli(root: str, tables: list[str]) -> None:
    expected = {uri: expected_rows(cli_report(uri)) for uri in tables}
    code, out = import_audit(root)
    assert code == 0 and out.count(": ok, stored") == len(tables), out
    for uri in tables:
        assert stored_rows(uri) == expected[uri], uri
    counts = (Commit.objects.count(), Finding.objects.count())

    code, again = import_audit(root)  # idempotent: nothing stored twice

    assert code == 0 and again.count("stored 0 commits") == len(tables), again
    assert (Commit.objects.count(), Finding.objects.count()) == counts
    for uri in tables:
        assert stored_rows(uri) == expected[uri], uri


@pytest.mark.django_db
def test_output_tables_round_trip_through_import_audit(on_cluster, tables, tmp_path):
    from deltalake import DeltaTable

    root = str(tmp_path / "results")
    code, out, err = run_command("--tables", *tables, "--master", "local[2]", "--output", root)

    assert (code, err) == (0, ""), out
    assert not Commit.objects.exists()  # --output writes no database rows
    commits = DeltaTable(f"{root}/commits").to_pyarrow_table()
    findings = DeltaTable(f"{root}/findings").to_pyarrow_table(columns=["kind", "confirmed"])
    assert commits.num_rows == sum(len(cli_report(t)["commits"]) for t in tables)
    assert findings.num_rows and {"table_uri", "version", "payload"} <= set(commits.column_names)
    assert_imported_like_the_cli(root, tables)


def test_a_run_without_its_tables_rows_is_not_imported(tmp_path, tables):
    """A job that died after writing commits but before its `tables` rows left nothing."""
    from deltalake import write_deltalake

    from workers.spark import output as spark_output

    root = str(tmp_path / "results")
    orphan = {name: [] for name in spark_output.SUBTABLES}
    orphan["commits"] = [{"run_id": "dead", "table_uri": tables[0], "version": 0, "payload": "{}"}]
    for name, schema in spark_output.SUBTABLES.items():
        write_deltalake(f"{root}/{name}", pa_table(orphan[name], schema), mode="append")

    assert list(spark_output.read_outcomes(root)) == []


def pa_table(rows, schema):
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema)


def test_listing_json_keeps_what_storage_reads():
    from audit.core.log import list_log
    from workers.spark.output import listing_from_json, listing_to_json

    listing = list_log(str(GOLDEN))
    back = listing_from_json(listing_to_json(listing))
    assert back.commit_versions == listing.commit_versions
    assert (back.latest_version, back.first_available_version, back.checkpoints) == (
        listing.latest_version,
        listing.first_available_version,
        listing.checkpoints,
    )


@pytest.mark.django_db
def test_spark_submit_entry_point_runs_without_django(cluster, on_cluster, tables, tmp_path):
    from tests.e2e.spark_cluster import SPARK_HOME
    from workers.spark.entry import bundle

    archive, script = bundle(str(tmp_path / "dist"))
    blocker = tmp_path / "no-django"
    for package in ("django", "celery", "rest_framework"):
        (blocker / package).mkdir(parents=True)
        (blocker / package / "__init__.py").write_text(
            f"raise ImportError('{package} is not installed on this cluster')\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYSPARK", "DJANGO"))}
    env.update(PYTHONPATH=str(blocker), PYSPARK_PYTHON=sys.executable)
    env.update(PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_HOME=str(SPARK_HOME))
    root = str(tmp_path / "results")
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--conf", "spark.cores.max=1",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--py-files", archive,
        script, "--output", root, "--chunk-commits", "2", *tables,
    ]  # fmt: skip
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(": ok,") == len(tables), done.stdout
    assert_imported_like_the_cli(root, tables)


def test_the_storage_config_reaches_tasks_as_written(tmp_path, monkeypatch):
    """Executors get the TOML text (secrets as env: references), resolved where they run."""
    from workers.spark.job import STORAGE_CONFIG_ENV, storage_config_text, use_storage_config

    config = tmp_path / "storage.toml"
    text = '[[storage]]\nprefix = "s3://bucket/"\noptions = { aws_secret_access_key = "env:S" }\n'
    config.write_text(text)
    monkeypatch.setenv(STORAGE_CONFIG_ENV, str(config))
    shipped = storage_config_text()
    assert shipped == text

    monkeypatch.delenv(STORAGE_CONFIG_ENV)
    use_storage_config(shipped)  # as on an executor without the driver's file
    local = Path(os.environ[STORAGE_CONFIG_ENV])
    assert local.read_text() == text and local != config
    assert local.stat().st_mode & 0o077 == 0  # private to the task's user
