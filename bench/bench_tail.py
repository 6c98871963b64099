"""Tail latency with 200 tables and one worker, and backfill throughput.

    .venv/bin/python bench/bench_tail.py [--tables 200] [--samples 60] [--backfill 20000]

1. Tail latency: 200 deltalake tables registered and ingested; ONE `celery -A workers worker
   --beat` process (concurrency 2) tails them at AUDIT_TAIL_INTERVAL_SECONDS=1. The bench then
   appends to random tables and measures, per commit, the time from the commit file landing
   (its mtime) to its Commit row being in the database. Commit-level findings are written in
   the same transaction as the rows, so the same instant covers them. Reports p50 / p95 / max.
2. Backfill throughput: a 20k-commit Spark-style log (bench/gen_log.py) ingested in chunks of
   AUDIT_BACKFILL_CHUNK by `audit.tail_once`, in-process; commits per second.

Uses a throwaway SQLite database under bench/out (or DATABASE_URL if set) and Redis at
CELERY_BROKER_URL (default redis://127.0.0.1:6379/13) with a private queue.
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


def setup_environment(db_file: Path) -> dict[str, str]:
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": os.environ.get("DATABASE_URL", f"sqlite:///{db_file}"),
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13"),
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-{uuid.uuid4().hex[:8]}",
        "AUDIT_TAIL_INTERVAL_SECONDS": "1",
        "AUDIT_FULL_CHECK_SECONDS": "30",
        "AUDIT_TABLE_FINDINGS_SECONDS": "60",
        "AUDIT_ALLOWED_ROOTS": tempfile.gettempdir() + "," + str(OUT),
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    return env


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def _batch(i: int):
    import pyarrow as pa

    return pa.table({"id": pa.array([i, i + 1], pa.int64()), "v": ["a", "b"]})


def _registered_tables(n_tables: int, work: Path) -> list[tuple[object, Path]]:
    """`n_tables` one-commit deltalake tables, registered and ingested."""
    from audit.tables import register_table
    from deltalake import write_deltalake

    from audit.tail.step import tail_once

    t0 = time.perf_counter()
    tables = []
    for i in range(n_tables):
        path = work / f"t{i:03d}"
        write_deltalake(str(path), _batch(0))
        table, _ = register_table(str(path))
        tail_once(table.id)
        tables.append((table, path))
    print(f"created and ingested {n_tables} tables in {time.perf_counter() - t0:.1f}s")
    return tables


def _start_worker(work: Path, env: dict[str, str]) -> subprocess.Popen:
    """A Celery worker with beat (the tail schedule), in its own process group."""
    log = open(work / "worker.log", "wb")  # noqa: SIM115
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


def _stop_worker(worker: subprocess.Popen) -> None:
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)


def _latency_of_one_commit(table: object, path: Path, i: int, work: Path) -> float:
    """Append one commit and wait until the worker stored it: seconds from the file landing."""
    from deltalake import write_deltalake

    from audit.models import Commit

    write_deltalake(str(path), _batch(i), mode="append")
    version = max(int(p.name[:20]) for p in (path / "_delta_log").glob("*.json"))
    landed = (path / "_delta_log" / f"{version:020d}.json").stat().st_mtime
    deadline = time.time() + 30
    while not Commit.objects.filter(table=table, version=version).exists():
        if time.time() > deadline:
            raise SystemExit(f"v{version} of {path} never arrived; see {work / 'worker.log'}")
        time.sleep(0.01)
    return time.time() - landed


def bench_tail(n_tables: int, samples: int, work: Path, env: dict[str, str]) -> dict[str, float]:
    tables = _registered_tables(n_tables, work)
    worker = _start_worker(work, env)
    try:
        time.sleep(4)  # worker start-up and a first pass over every table
        latencies = []
        for i in range(samples):
            table, path = random.choice(tables)
            latencies.append(_latency_of_one_commit(table, path, i, work))
            # Commits land at random phases of the tail interval.
            time.sleep(random.uniform(0.05, 0.4))
    finally:
        _stop_worker(worker)
    return {
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "max": max(latencies),
        "samples": len(latencies),
    }


def bench_backfill(commits: int, work: Path) -> dict[str, float]:
    from django.conf import settings

    from audit.ingest.tables import register_table
    from audit.models import Commit
    from audit.tail.step import tail_once

    path = work / "backfill"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(path), "--commits", str(commits)],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    settings.AUDIT_CHECK_DATA = (
        False  # gen_log writes only the log: there are no data files to read
    )
    table, _ = register_table(str(path))
    t0 = time.perf_counter()
    chunks = 0
    while True:
        result = tail_once(table.id)
        chunks += 1
        if result.status == "error":
            raise SystemExit(result.line())
        if not result.more:
            break
    elapsed = time.perf_counter() - t0
    stored = Commit.objects.filter(table=table).count()
    return {"commits": stored, "seconds": elapsed, "per_second": stored / elapsed, "chunks": chunks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--backfill", type=int, default=20000)
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-tail-", dir=OUT))
    db_file = work / "bench.sqlite3"
    env = setup_environment(db_file)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        tail = bench_tail(args.tables, args.samples, work, env)
        print(
            f"tail latency, {args.tables} tables, 1 worker, 1 s interval: p50 {tail['p50']:.2f}s "
            f"p95 {tail['p95']:.2f}s max {tail['max']:.2f}s ({tail['samples']} commits)"
        )
        if args.backfill:
            fill = bench_backfill(args.backfill, work)
            print(
                f"backfill: {fill['commits']} commits in {fill['seconds']:.1f}s = "
                f"{fill['per_second']:.0f} commits/s ({fill['chunks']} chunks)"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
