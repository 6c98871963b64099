"""Starting the SparkSession the fleet audit runs on: local, any cluster master, or Spark Connect.

Django-free (the settings come in as arguments) so benchmarks and tests can use it directly.

- `master` "local[*]" (the default), "spark://host:7077", "yarn", "k8s://..." start a classic
  session; "sc://host:15002" connects to a Spark Connect server (no local JVM needed).
- Java is checked before the JVM is started, so a machine without it gets one clear line
  (DeltaAuditError) instead of PySpark's "Java gateway process exited" traceback.
- Spark's own logging is kept quiet: a log4j2 configuration at WARN (ERROR for the chattiest
  loggers) is passed to the driver JVM, and the progress bar is off.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from audit.core.errors import DeltaAuditError, one_line

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "2g"
APP_NAME = "delta-audit-fleet"

# log4j2 properties for the driver JVM. Everything at WARN; loggers that warn about nothing a
# user can act on in this job (native Hadoop libs, a missing winutils, the shell's own
# "Setting default log level" banner) at ERROR.
_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = ERROR
logger.spark_util.name = org.apache.spark.util.Utils
logger.spark_util.level = ERROR
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = ERROR
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = ERROR
logger.netty.name = io.netty
logger.netty.level = ERROR
logger.arrow.name = org.apache.arrow
logger.arrow.level = ERROR
"""


def java_problem() -> str | None:
    """Why the JVM cannot start (one line), or None when `java -version` works."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if not java.is_file():
            return (
                f"JAVA_HOME={java_home} has no bin/java; point JAVA_HOME at a Java 17 or 21 "
                "installation (PySpark needs Java)"
            )
        command = str(java)
    else:
        found = shutil.which("java")
        if found is None:
            return (
                "Java is not installed: PySpark needs Java 17 or 21 (install a JDK or set "
                "JAVA_HOME)"
            )
        command = found
    try:
        done = subprocess.run(
            [command, "-version"], capture_output=True, timeout=30, check=False, text=True
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"cannot run {command} -version ({type(err).__name__}); PySpark needs Java 17 or 21"
    if done.returncode != 0:
        reason = one_line(done.stderr or done.stdout, empty=f"exit status {done.returncode}")
        return f"{command} -version failed ({reason}); PySpark needs Java 17 or 21"
    return None


_private: list[Path] = []  # the directory this process settled on
_log4j2_files: dict[str, str] = {}


def _private_dir() -> Path:
    """This user's directory for the driver's files: the usual per-user one when this user
    made it and no one else may use it, else a new one (never a directory someone else made
    first under the predictable name: the JVM reads its logging configuration from here)."""
    if _private and _is_private(_private[0]):
        return _private[0]
    directory = Path(tempfile.gettempdir()) / f"delta-audit-spark-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    if not _is_private(directory):
        directory = Path(tempfile.mkdtemp(prefix="delta-audit-spark-"))
    _private[:] = [directory]
    return directory


def _is_private(directory: Path) -> bool:
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


def _log4j2_file(level: str) -> str:
    """A log4j2 properties file for this process (one per level, kept for the JVM's life),
    made with mkstemp (a new name, mode 0600), never an existing file adopted."""
    known = _log4j2_files.get(level.lower())
    if known is not None and Path(known).parent == _private_dir() and os.path.isfile(known):
        return known
    descriptor, name = tempfile.mkstemp(
        prefix=f"log4j2-{level.lower()}-", suffix=".properties", dir=_private_dir()
    )
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(_LOG4J2.format(level=level.upper()))
    _log4j2_files[level.lower()] = name
    return name


def spark_conf(
    master: str,
    *,
    log_level: str = "WARN",
    shuffle_partitions: int | None = None,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
) -> list[tuple[str, str]]:
    """The settings of a classic session (a list of pairs, applied in order)."""
    java_options = f"-Dlog4j2.configurationFile=file:{_log4j2_file(log_level)}"
    pairs: list[tuple[str, str]] = [
        ("spark.app.name", APP_NAME),
        ("spark.master", master),
        # The driver streams each result partition through its heap (and in local mode runs
        # the tasks too): Spark's 1g default is too small for a fleet of 1,000-commit tables.
        ("spark.driver.memory", driver_memory),
        ("spark.driver.extraJavaOptions", java_options),
        ("spark.executor.extraJavaOptions", java_options),
        ("spark.ui.showConsoleProgress", "false"),
        ("spark.ui.enabled", "false"),
        # The job's partitioning is chosen per run (see job.py); AQE must not merge the
        # per-table groups back into a couple of partitions.
        ("spark.sql.adaptive.coalescePartitions.enabled", "false"),
        ("spark.sql.execution.arrow.pyspark.enabled", "true"),
        ("spark.python.worker.reuse", "true"),
    ]
    if shuffle_partitions:
        pairs.append(("spark.sql.shuffle.partitions", str(shuffle_partitions)))
    if is_local(master):
        # Local Python workers run this interpreter (its venv has orjson, pyarrow, sqlglot)
        # and import the core from this checkout; clusters get it shipped by job.prepare_executors.
        root = str(Path(__file__).resolve().parents[2])
        paths = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        pairs.append(("spark.pyspark.python", sys.executable))
        pairs.append(("spark.pyspark.driver.python", sys.executable))
        pairs.append(("spark.executorEnv.PYTHONPATH", os.pathsep.join(paths)))
    else:
        # Never the checkout on a cluster: the driver JVM outlives sessions, and a local
        # session's executor PYTHONPATH (above) would otherwise reach this one's executors.
        pairs.append(("spark.executorEnv.PYTHONPATH", ""))
    return pairs


def get_spark(
    master: str | None = None,
    *,
    log_level: str = "WARN",
    extra_conf: dict[str, str] | None = None,
    log_file: str | None = None,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
) -> Any:
    """A SparkSession for `master` (default local[*]); "sc://..." uses Spark Connect.

    The driver JVM's own stderr (the launcher's banner, JVM warnings, log4j output) goes to
    `log_file` (default: a file in the temp directory) instead of the console.

    Raises DeltaAuditError with one line when Java is missing or the session cannot start.
    """
    master = (master or DEFAULT_MASTER).strip()
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:
        raise DeltaAuditError(f"PySpark is not installed ({err}); pip install pyspark") from None
    if master.startswith("sc://"):
        return _connect(SparkSession, master, extra_conf)
    problem = java_problem()
    if problem is not None:
        raise DeltaAuditError(problem)
    # A Spark Connect session leaves these in the process environment, and PySpark would then
    # build every later session, classic ones too, as a Connect client.
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        os.environ.pop(name, None)
    pairs = spark_conf(master, log_level=log_level, driver_memory=driver_memory)
    pairs += list((extra_conf or {}).items())
    # A classic PySpark driver tells executors which Python to run from PYSPARK_PYTHON (its
    # environment), not from spark.pyspark.python: honour the setting by exporting it.
    python = dict(pairs).get("spark.pyspark.python")
    if python and not is_local(master):
        os.environ["PYSPARK_PYTHON"] = python
    if is_local(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _start_jvm_quietly(pairs, log_file or default_log_file())
    builder = SparkSession.builder
    for key, value in pairs:
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as err:  # py4j / launcher errors: many types, one meaning
        raise DeltaAuditError(
            f"cannot start Spark on {master}: {one_line(err, limit=300)}"
        ) from None
    spark.sparkContext.setLogLevel(log_level.upper())
    return spark


def default_log_file() -> str:
    return str(_private_dir() / "spark-driver.log")


def _start_jvm_quietly(pairs: list[tuple[str, str]], log_file: str) -> None:
    """Launch the driver JVM ourselves, with its stderr in `log_file`.

    PySpark would inherit our stderr, where the JVM prints lines log4j cannot silence
    ("WARNING: Using incubator modules"). A gateway that already runs is reused as it is.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf(loadDefaults=False).setAll(pairs)
    with open(log_file, "ab") as sink:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": sink, "stdout": sink})
        except Exception as err:
            raise DeltaAuditError(
                f"cannot start the Spark driver JVM: {one_line(err, limit=300)} (see {log_file})"
            ) from None
    SparkContext._ensure_initialized(gateway=gateway)


def _connect(session_class: Any, url: str, extra_conf: dict[str, str] | None) -> Any:
    builder = session_class.builder.remote(url)
    # A Connect client can set only runtime SQL settings; executors, Python and archives are
    # the server's configuration (docs/spark.md).
    for key, value in (extra_conf or {}).items():
        if key.startswith("spark.sql."):
            builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except ImportError as err:
        missing = one_line(err, limit=300)
        raise DeltaAuditError(
            f"Spark Connect needs extra packages ({missing}); pip install 'pyspark[connect]'"
        ) from None
    except Exception as err:
        raise DeltaAuditError(
            f"cannot connect to Spark at {url}: {one_line(err, limit=300)}"
        ) from None


def is_local(master: str | None) -> bool:
    return (master or DEFAULT_MASTER).strip().startswith("local")
