"""A tiny job at the start of a cluster audit: can the executors run the core at all?

Without it, an executor Python lacking a library fails the real job after many seconds with
"PythonException: An exception was thrown from the Python worker" and the cause only in
executor logs. The probe runs one row per task through a plain (pickle, not Arrow) Python UDF
(it works on a classic session and on Spark Connect, and needs nothing but the standard
library on the executor), imports what the core needs there, and turns any gap into one line:

    executors cannot run the audit: missing Python packages orjson, sqlglot (executor Python
    3.11.2 at /usr/bin/python3 on host w1); provide them with a packed environment
    (spark.archives) or a cluster image, see docs/spark.md

Django-free; used by workers.spark.job.audit_fleet and workers.spark.entry.
"""

from __future__ import annotations

import sys
from typing import Any

from audit.core.errors import DeltaAuditError, one_line

# Third-party packages the core imports on executors (a gap shows up here by name even
# before the shipped core is imported); the core's own modules are imported too, so a
# package added to the core later is still caught (as the first missing module).
EXECUTOR_PACKAGES = ("orjson", "pyarrow", "pyarrow.parquet", "sqlglot")
CORE_MODULES = ("audit.core.log", "audit.core.history.summary", "audit.core.audit")
HINT = (
    "provide them with a packed environment (spark.archives + PYSPARK_PYTHON) or a cluster "
    "image, see docs/spark.md"
)


def probe_executor(_: Any) -> str:
    """Runs on an executor: a JSON report of its Python and what it cannot import.

    Only the standard library here (this function is pickled by value and must unpickle
    on an executor that has nothing else).
    """
    import importlib
    import json
    import os
    import platform
    import socket

    missing, core_error, core_file = [], None, None
    for name in EXECUTOR_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if not missing:
        try:
            for name in CORE_MODULES:
                module = importlib.import_module(name)
            core_file = getattr(module, "__file__", None)
        except ImportError as err:
            core_error = f"{type(err).__name__}: {err}"
        except Exception as err:  # the core failing to import is just as fatal
            core_error = f"{type(err).__name__}: {err}"
    return json.dumps(
        {
            "python": platform.python_version(),
            "executable": sys.executable,
            "host": socket.gethostname(),
            "missing": missing,
            "core_error": core_error,
            "core_file": core_file,
            "cwd": os.getcwd(),
        }
    )


def probe_executors(spark: Any, tasks: int = 2) -> list[dict[str, Any]]:
    """Run the probe on `tasks` tasks; the reports, or DeltaAuditError with one line."""
    import json

    from pyspark import cloudpickle
    from pyspark.sql.functions import udf

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    probe = udf(probe_executor, "string", useArrow=False)
    n = max(1, int(tasks))
    try:
        rows = spark.range(0, n, 1, n).select(probe("id").alias("report")).collect()
    except Exception as err:  # PySpark/py4j/gRPC raise many types for one meaning
        raise DeltaAuditError(explain_failure(err)) from None
    reports = [json.loads(r["report"]) for r in rows]
    problem = judge(reports)
    if problem is not None:
        raise DeltaAuditError(problem)
    return reports


def judge(reports: list[dict[str, Any]]) -> str | None:
    """One line naming what the executors lack, or None when they can run the core."""
    for report in reports:
        where = (
            f"executor Python {report['python']} at {report['executable']} on host {report['host']}"
        )
        if report["missing"]:
            names = ", ".join(report["missing"])
            return (
                f"executors cannot run the audit: missing Python packages {names} ({where}); {HINT}"
            )
        if report["core_error"]:
            return (
                "executors cannot import the shipped audit core "
                f"({one_line(report['core_error'])}; {where}); {HINT}"
            )
    return None


def explain_failure(err: BaseException) -> str:
    """The probe job itself failed: the likely cause in one line (the executor's Python)."""
    text = str(err)
    driver = ".".join(map(str, sys.version_info[:2]))
    if "PYTHON_VERSION_MISMATCH" in text or "different version" in text:
        detail = _line_with(text, "different version") or _line_with(text, "PYTHON_VERSION")
        return (
            f"executors run a different Python than this driver ({driver}): "
            f"{detail}; set PYSPARK_PYTHON / spark.pyspark.python to a Python {driver}, "
            "see docs/spark.md"
        )
    if "Cannot run program" in text:
        detail = _line_with(text, "Cannot run program")
        return (
            f"executors cannot start their Python ({detail}); set PYSPARK_PYTHON / "
            "spark.pyspark.python to a Python that exists on the executors, see docs/spark.md"
        )
    return f"executors cannot run a Python task: {type(err).__name__}: {one_line(text, limit=300)}"


def _line_with(text: str, needle: str) -> str | None:
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:300]
    return None
