"""The server side of bench/bench_api.py: gunicorn started as scripts/run.sh starts it, the
writer beside it, and what /proc says of the server (its CPU, its workers' connections)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(database_url: str, port: int, shape: str, log_path: Path, mode: str):
    """gunicorn on `port`; `shape` "" (config/gunicorn.conf.py's), "W" (workers), "WxT"
    (workers x threads) or "WxT:C" (and at most C connections per worker), given on the command
    line, which overrides the config file; a "/K" suffix sets WEB_KEEPALIVE to K seconds."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        # An access log line per request, as scripts/run.sh and the compose file write.
        "WEB_ACCESS_LOG": str(log_path.with_name("bench-api-access.log")),
        "WEB_ERROR_LOG": "-",
    }
    if mode == "drf":  # cached bodies, but every request goes through DRF (the peer)
        env["AUDIT_API_FAST_PATH"] = "0"
    if mode == "off":  # every request computes its answer (the cold path)
        for name in ("AUDIT_API_TIMELINE_CACHE_SECONDS", "AUDIT_API_LIST_CACHE_SECONDS"):
            env[name] = "0"
        env["AUDIT_PAGE_CACHE_SECONDS"] = "0"  # the dashboard pages' cached content too
    args = [
        str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi:application",
        "-c", str(ROOT / "config" / "gunicorn.conf.py"),  # what scripts/run.sh runs
        "--bind", f"127.0.0.1:{port}",
    ]  # fmt: skip
    if "/" in shape:  # WxT:C/K: K seconds of keep-alive (0: a connection per request)
        shape, _, keepalive = shape.partition("/")
        env["WEB_KEEPALIVE"] = keepalive
    if shape:
        sizes, _, per_worker = shape.partition(":")
        workers, _, threads = sizes.partition("x")
        args += ["--workers", workers]
        if threads:
            args += ["--threads", threads]
        if per_worker:
            args += ["--worker-connections", per_worker]
    log = open(log_path, "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"gunicorn did not start; see {log_path}")


def start_writer(database_url: str) -> subprocess.Popen:
    """bench/bench_writer.py: 20 tables, a commit to each every second (bounded: an hour)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "bench_writer.py"), "--database-url",
         database_url, "--tables", "20", "--seconds", "3600"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stdout.readline()  # "writer: 20 tables ready" once they are registered
    assert "ready" in line, line
    print(line.strip(), flush=True)
    return proc


def stop(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def server_cpu_seconds(master_pid: int) -> float:
    """User + system CPU of the gunicorn master and its workers (from /proc), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == master_pid or int(fields[1]) == master_pid:  # fields[1] = ppid
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def connections_per_worker(master_pid: int, port: int) -> list[int]:
    """Established client connections each gunicorn worker holds on `port`, most first (from
    /proc): a keep-alive connection stays on the worker that accepted it."""
    established = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            established.add(fields[9])  # the socket's inode
    counts = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) != (
                master_pid
            ):
                continue
            links = [
                os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")
            ]
        except OSError:
            continue
        counts.append(
            sum(link[8:-1] in established for link in links if link.startswith("socket:["))
        )
    return sorted(counts, reverse=True)
