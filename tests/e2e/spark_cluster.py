"""A real Spark standalone cluster and a Spark Connect server, started from pyspark's own sbin/.

Used by the cluster tests and bench/bench_spark.py. Everything runs on 127.0.0.1 free ports
with logs, pids and work directories under one temporary directory, and is stopped by the
pids spark-daemon.sh recorded (never by name).

The worker (and so every executor and its Python workers) runs with its cwd in that
temporary directory and without PYTHONPATH: the project's files are not importable there,
so the audit core reaches executors only as the artifact the job ships.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.support.net import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def wait_for_port(port: int, timeout: float, what: str, log_dir: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    logs = "\n".join(p.read_text()[-3000:] for p in sorted(log_dir.glob("*.out")))
    raise RuntimeError(f"{what} did not open port {port} in {timeout:.0f}s\n{logs}")


@dataclass
class Cluster:
    base: Path
    python: str = sys.executable
    worker_cores: int = 2
    worker_memory: str = "3g"
    master_port: int = 0
    connect_port: int = 0
    pid_files: list[Path] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def connect_url(self) -> str:
        return f"sc://127.0.0.1:{self.connect_port}"

    @property
    def log_dir(self) -> Path:
        return self.base / "logs"

    def env(self, ident: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYSPARK"))}
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOG_DIR=str(self.log_dir),
            SPARK_PID_DIR=str(self.base / "pids"),
            SPARK_IDENT_STRING=ident,
            SPARK_CONF_DIR=str(self.base / "conf"),
            SPARK_WORKER_DIR=str(self.base / "work"),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOCAL_DIRS=str(self.base / "local"),
            # Executors' Python: this interpreter (it has orjson/pyarrow/sqlglot), but not
            # this checkout (cwd and PYTHONPATH are elsewhere).
            PYSPARK_PYTHON=self.python,
        )
        return env

    def _daemon(self, ident: str, mode: str, cls: str, *args: str) -> None:
        (self.base / "conf").mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["bash", str(SPARK_HOME / "sbin" / "spark-daemon.sh"), mode, cls, "1", *args],
            env=self.env(ident),
            cwd=self.base,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0 or "failed to launch" in done.stdout:
            raise RuntimeError(f"spark-daemon.sh {cls} failed: {done.stdout}{done.stderr}")
        self.pid_files.append(self.base / "pids" / f"spark-{ident}-{cls}-1.pid")

    def start(self) -> Cluster:
        for sub in ("logs", "pids", "work", "local", "conf"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        self.master_port = free_port()
        self._daemon(
            "master",
            "start",
            MASTER_CLASS,
            "--host", "127.0.0.1",
            "--port", str(self.master_port),
            "--webui-port", str(free_port()),
        )  # fmt: skip
        wait_for_port(self.master_port, 240, "the Spark master", self.log_dir)
        self._daemon(
            "worker",
            "start",
            WORKER_CLASS,
            "--host", "127.0.0.1",
            "--cores", str(self.worker_cores),
            "--memory", self.worker_memory,
            "--webui-port", str(free_port()),
            "--work-dir", str(self.base / "work"),
            self.master_url,
        )  # fmt: skip
        self.wait_for_worker()
        return self

    def wait_for_worker(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        log = self.log_dir
        while time.monotonic() < deadline:
            text = "".join(p.read_text() for p in log.glob("*worker*.out"))
            if "Successfully registered with master" in text:
                return
            time.sleep(0.5)
        raise RuntimeError("the Spark worker did not register with the master")

    def start_connect(self, cores: int = 1) -> str:
        """A Spark Connect server whose executors run on this cluster; returns its sc:// URL."""
        self.connect_port = free_port()
        self._daemon(
            "connect",
            "submit",
            CONNECT_CLASS,
            "--name", "delta-audit-connect-test",
            "--master", self.master_url,
            "--conf", f"spark.connect.grpc.binding.port={self.connect_port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.cores.max={cores}",
            "--conf", "spark.executor.memory=1g",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.pyspark.python={self.python}",
            "--conf", "spark.driver.host=127.0.0.1",
        )  # fmt: skip
        wait_for_port(self.connect_port, 360, "the Spark Connect server", self.log_dir)
        return self.connect_url

    def worker_pid(self) -> int:
        """The worker daemon's pid (its process tree runs every executor)."""
        pid_file = self.base / "pids" / f"spark-worker-{WORKER_CLASS}-1.pid"
        return int(pid_file.read_text().strip())

    def executor_pids(self) -> list[int]:
        """Pids of this cluster's executor JVMs (children of the worker)."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            text = b" ".join(cmdline).decode(errors="replace")
            if "CoarseGrainedExecutorBackend" in text and str(self.base) in text:
                found.append(int(proc.name))
        return found

    def stop(self) -> None:
        for pid_file in reversed(self.pid_files):
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                continue
            _stop_pid(pid)
        self.pid_files.clear()


def _stop_pid(pid: int, timeout: float = 20) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
