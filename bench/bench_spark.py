"""The fleet audit on Spark local[1], local[2] and the Python path, side by side in one run.

    .venv/bin/python bench/bench_spark.py [--tables 200] [--commits 1000] [--out /tmp/...]

Generates (once; reused by later runs) a fleet of Spark-style tables with bench/gen_log.py
(partitioned, ~70% blind appends, a checkpoint every 100 commits), then times:

- python:   for each table, audit_history(load_history(uri)) (what one Celery worker does);
- local[1], local[2]: workers.spark_job.audit_fleet over the whole fleet, results streamed
  back to the driver (the session start is timed separately and not in the job's time);
- checkpoints: reading every table's latest checkpoint with the core (pyarrow, in-process)
  vs spark.read.parquet over the same files (the choice stage 2 makes).

`check_data=False` everywhere: gen_log writes no data files. Prints the scaling from 1 to 2
cores and the cost per commit of each path.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.core.audit import audit_history  # noqa: E402
from audit.core.log import list_log, read_checkpoint  # noqa: E402
from audit.core.storage import open_store  # noqa: E402
from audit.core.summary import load_history  # noqa: E402
from bench.gen_log import generate  # noqa: E402
from workers.spark_job import audit_fleet  # noqa: E402
from workers.spark_session import get_spark  # noqa: E402


def make_fleet(out: Path, tables: int, commits: int) -> list[str]:
    uris = []
    started, made = time.perf_counter(), 0
    for i in range(tables):
        path = out / f"t{i:04d}"
        last = path / "_delta_log" / f"{commits - 1:020d}.json"
        if not last.exists():
            generate(str(path), commits, seed=i)
            made += 1
        uris.append(str(path))
    if made:
        print(f"generated {made} tables in {time.perf_counter() - started:.1f}s")
    return uris


def python_path(uris: list[str]) -> tuple[float, int, int]:
    started = time.perf_counter()
    commits = findings = 0
    for uri in uris:
        history = load_history(uri)
        result = audit_history(history, check_data=False)
        commits += len(history.summaries)
        findings += len(result.findings)
    return time.perf_counter() - started, commits, findings


def spark_path(master: str, uris: list[str], chunk: int) -> tuple[float, float, int, int]:
    started = time.perf_counter()
    spark = get_spark(master)
    spark.range(1).count()  # the first job also starts the Python worker daemon
    session = time.perf_counter() - started
    started = time.perf_counter()
    commits = findings = 0
    for outcome in audit_fleet(spark, uris, chunk_commits=chunk, check_data=False):
        if outcome.error:
            raise SystemExit(f"{outcome.table_uri}: {outcome.error}")
        commits += len(outcome.history.summaries)
        findings += len(outcome.audit.findings)
    job = time.perf_counter() - started
    spark.stop()
    return session, job, commits, findings


def checkpoint_reads(uris: list[str]) -> tuple[float, float, int, int]:
    latest = []
    for uri in uris:
        listing = list_log(uri)
        version = max(listing.checkpoints)
        latest.append((uri, version, listing.checkpoints[version]))
    started = time.perf_counter()
    adds = sum(len(read_checkpoint(open_store(u), v, f).adds) for u, v, f in latest)
    core = time.perf_counter() - started
    spark = get_spark("local[2]")
    paths = [os.path.join(u, "_delta_log", f[0]) for u, _, f in latest]
    spark.read.parquet(paths[0]).count()  # warm up the reader (class loading), not timed
    started = time.perf_counter()
    spark_adds = spark.read.parquet(*paths).where("add IS NOT NULL").select("add.path").count()
    on_spark = time.perf_counter() - started
    spark.stop()
    return core, on_spark, adds, spark_adds


def show(row: tuple) -> None:
    name, session, wall, commits, findings = row
    start = f"{session:9.1f}" if session is not None else f"{'-':>9}"
    print(
        f"{name:<20} {start} {wall:8.2f} {commits:9,} {findings:9,} "
        f"{wall / max(commits, 1) * 1e6:10.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=2000, help="commits per Spark task")
    parser.add_argument("--out", default="/tmp/delta-audit-bench-fleet")
    args = parser.parse_args(argv)
    out = Path(args.out) / f"{args.tables}x{args.commits}"
    out.mkdir(parents=True, exist_ok=True)
    uris = make_fleet(out, args.tables, args.commits)
    total = args.tables * args.commits
    print(f"fleet: {args.tables} tables x {args.commits} commits = {total:,} commits ({out})")

    header = f"{'path':<20} {'session s':>9} {'wall s':>8} {'commits':>9} {'findings':>9}"
    print(f"\n{header} {'µs/commit':>10}")
    py_time, py_commits, py_findings = python_path(uris)
    rows = [("python (1 process)", None, py_time, py_commits, py_findings)]
    show(rows[-1])
    for master in ("local[1]", "local[2]"):
        session, job, commits, findings = spark_path(master, uris, args.chunk)
        rows.append((f"spark {master}", session, job, commits, findings))
        show(rows[-1])
    assert len({r[3] for r in rows}) == 1 and len({r[4] for r in rows}) == 1, "paths disagree"
    one, two = rows[1][2], rows[2][2]
    print(f"\nscaling local[1] -> local[2]: {one / two:.2f}x  (job wall time, session excluded)")
    print(f"spark local[2] vs python: {py_time / two:.2f}x")

    core, on_spark, adds, spark_adds = checkpoint_reads(uris)
    print(
        f"\nlatest checkpoint of each table ({adds:,} live files): core/pyarrow {core:.2f}s, "
        f"spark.read.parquet {on_spark:.2f}s ({spark_adds:,} add rows)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
