"""Tail latency on the S3 test server: N tables, ONE worker, commit -> stored.

    .venv/bin/python bench/bench_s3_tail.py [--tables 200] [--samples 60] [--interval 1]

N deltalake tables are written to moto's S3 server (in this process, requests counted at the
server: tests/e2e/s3count.py), registered and ingested; then one `celery -A workers worker --beat`
process (concurrency 2) tails them at AUDIT_TAIL_INTERVAL_SECONDS. The bench appends to random
tables and measures, per commit, the time from the end of the write (the commit file is
visible by then) to its Commit row being in the database. Reports p50 / p95 / max and the
server's requests per second while the fleet is idle. Uses a throwaway SQLite database.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def _batch(i: int):
    import pyarrow as pa

    return pa.table({"id": pa.array([i, i + 1], pa.int64()), "v": ["a", "b"]})


def _fleet(server, bucket: str, n: int) -> list:
    from deltalake import write_deltalake

    from audit.ingest.tables import register_table
    from audit.tail.step import tail_once

    tables = []
    for i in range(n):
        uri = f"s3://{bucket}/t{i:03d}"
        write_deltalake(uri, _batch(0), storage_options=server.options)
        table, _ = register_table(uri)
        tail_once(table.id)
        tables.append((table, uri))
    return tables


def _start_worker(work: Path, env: dict[str, str]) -> subprocess.Popen:
    log = open(work / "worker.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers",
            "worker",
            "--beat",
            "--schedule",
            str(work / "beat"),
            "--concurrency",
            "2",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
        ],  # fmt: skip
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _measure(server, tables: list, samples: int, work: Path) -> list[float]:
    from deltalake import write_deltalake

    from audit.models import Commit

    latencies = []
    for i in range(samples):
        table, uri = random.choice(tables)
        version = Commit.objects.filter(table=table).count()  # stored: 0..n-1; the next is n
        write_deltalake(uri, _batch(i + 1), mode="append", storage_options=server.options)
        landed = time.time()
        deadline = landed + 60
        while not Commit.objects.filter(table=table, version=version).exists():
            if time.time() > deadline:
                raise SystemExit(f"v{version} of {uri} never arrived; see {work / 'worker.log'}")
            time.sleep(0.01)
        latencies.append(time.time() - landed)
        time.sleep(random.uniform(0.05, 0.4))  # commits land at random phases of the interval
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-s3-tail-", dir=OUT))
    from tests.e2e.s3count import CountingS3

    server = CountingS3()
    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    env = {
        **server.env,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13"),
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-{uuid.uuid4().hex[:8]}",
        "AUDIT_TAIL_INTERVAL_SECONDS": str(args.interval),
        "AUDIT_ALLOWED_ROOTS": f"s3://{bucket}",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    server.create_bucket(bucket)
    worker = None
    try:
        started = time.perf_counter()
        tables = _fleet(server, bucket, args.tables)
        print(
            f"{args.tables} tables on S3 written and ingested in {time.perf_counter() - started:.0f}s"
        )
        worker = _start_worker(work, env)
        time.sleep(8)  # start-up and a first (cold) tick of every table in the worker
        with server.counting() as idle:
            time.sleep(10)
        print(f"idle fleet: {len(idle) / 10:.0f} requests/s at the server ({server.kinds(idle)})")
        latencies = _measure(server, tables, args.samples, work)
        load = os.getloadavg()
        print(
            f"tail latency, {args.tables} tables on S3, one worker, interval {args.interval:g}s: "
            f"p50 {statistics.median(latencies):.2f}s  p95 {_percentile(latencies, 0.95):.2f}s  "
            f"max {max(latencies):.2f}s  ({len(latencies)} commits; load {load[0]:.1f})"
        )
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
