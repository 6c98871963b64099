"""docker-compose.yml's Spark profile runs the fleet audit on its own master and worker.

Checked without a Docker engine (tests/e2e/test_compose.py checks every command exists; this file
checks the services are wired to each other the way docs/spark.md says).
"""

from __future__ import annotations

import json

import yaml

from tests.support.paths import ROOT


def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_the_spark_audit_job_runs_on_the_compose_master():
    found = services()
    master, worker, job = found["spark-master"], found["spark-worker"], found["spark-audit"]
    port = master["command"][2].split("--port ")[1].split()[0]
    url = f"spark://spark-master:{port}"
    assert job["command"][:3] == ["python", "manage.py", "spark_audit"]
    assert job["command"][job["command"].index("--master") + 1] == url
    assert worker["command"][2].rstrip().endswith(url)
    assert job["profiles"] == worker["profiles"] == master["profiles"] == ["spark"]


def test_executors_can_reach_the_driver_and_run_its_python():
    job = services()["spark-audit"]
    conf = json.loads(job["environment"]["AUDIT_SPARK_CONF"])
    assert conf["spark.driver.host"] == job["hostname"] == "spark-audit"
    assert conf["spark.pyspark.python"] == "python3"  # the image's Python has the libraries
    # the app's settings survive the override of `environment` (merged, not replaced)
    assert job["environment"]["DATABASE_URL"].startswith("postgres://")
    assert job["volumes"] == services()["worker"]["volumes"]  # same tables, same paths


def test_the_worker_is_sized_from_the_environment():
    worker = services()["spark-worker"]
    command = worker["command"][2]
    assert "--cores $${SPARK_WORKER_CORES} --memory $${SPARK_WORKER_MEMORY}" in command
    assert set(worker["environment"]) == {"SPARK_WORKER_CORES", "SPARK_WORKER_MEMORY"}
