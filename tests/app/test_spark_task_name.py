"""The Spark Celery task keeps the name its queued messages and its queue route carry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SPARK_TASK = "workers.spark_tasks.spark_audit_tables"
ROOT = Path(__file__).resolve().parents[2]


def test_it_registers_the_spark_task_under_its_wire_name():
    from workers import app

    app.loader.import_default_modules()  # CELERY_IMPORTS, as a worker starting up does
    assert SPARK_TASK in app.tasks
    assert app.tasks[SPARK_TASK].__module__ == "workers.spark.tasks"


def test_it_routes_the_spark_task_to_the_spark_queue():
    # A fresh process: the route exists only when AUDIT_SPARK_QUEUE is set at settings load.
    code = (
        "import django; django.setup()\n"
        "from workers import app\n"
        f"print(app.amqp.router.route({{}}, {SPARK_TASK!r})['queue'].name)\n"
    )
    env = {
        **os.environ,
        "AUDIT_SPARK_QUEUE": "spark-jobs",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "spark-jobs"
