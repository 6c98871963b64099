"""Tail latency on the S3 test server: N tables, a pool of W workers, commit -> stored.

    .venv/bin/python bench/bench_s3_tail.py [--tables 200] [--workers 1] [--samples 60]
        [--rate 1] [--interval 1] [--database-url postgres://postgres@127.0.0.1:5432/bench]
        [--kill] [--notify]

N one-commit tables are copied to moto's S3 server (in this process; requests counted at the
server: tests/e2e/s3count.py) and registered in bulk; W `celery -A workers worker` processes
(each its own hostname, concurrency 2; beat runs in the first) claim them through the
database row lease (audit/ingest/lease.py) and ingest them. The bench then counts the server's
requests over an idle window (requests per idle table per day), and appends `--samples`
commits at `--rate` per second to random tables, measuring per commit the time from the end of
the write (the commit file is visible) to its Commit row being in the database.

`--notify`: the bucket sends its commit-file events to an SQS queue on the same server
(s3:ObjectCreated:*, suffix .json: docs/tailing.md) and the workers get AUDIT_NOTIFY_QUEUES, so
commits are tailed on notice and tables are only fully checked every
AUDIT_IDLE_FULL_CHECK_SECONDS (`--idle-full-check`); without it, polling (the peer). SQS
requests are counted at the server like S3's.

`--kill` SIGKILLs the last worker's process group when half the samples are written and starts
a replacement. Every run ends with the end-state check: every table holds each written version
exactly once, and the stored rows equal the CLI's report on the busiest tables.

Workers share each table's log listing through Redis (`--no-share`: each process alone).
`--database-url` names a PostgreSQL server: a throwaway database is created on it and dropped
after; without it, a throwaway SQLite file. Prints p50/p95/max, the workers' CPU seconds, the
load average.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from bench import s3_fleet  # noqa: E402


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--rate", type=float, default=1.0, help="commits written per second")
    parser.add_argument("--interval", type=float, default=1.0, help="AUDIT_TAIL_INTERVAL_SECONDS")
    parser.add_argument(
        "--idle-share", type=float, default=0.5, help="share of tables idle (never written)"
    )
    parser.add_argument(
        "--idle-window", type=float, default=60.0, help="seconds requests are counted idle"
    )
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument("--kill", action="store_true", help="SIGKILL a worker mid-run")
    parser.add_argument(
        "--no-share", action="store_true", help="each process lists each log alone (before)"
    )
    parser.add_argument(
        "--full-check", type=float, default=30.0, help="AUDIT_FULL_CHECK_SECONDS (default 30)"
    )
    parser.add_argument("--compare", type=int, default=20, help="tables checked against the CLI")
    parser.add_argument(
        "--ingest-timeout", type=float, default=900.0, help="seconds the initial ingest may take"
    )
    parser.add_argument(
        "--notify", action="store_true", help="tail on S3 event notifications (SQS), not polling"
    )
    parser.add_argument(
        "--idle-full-check",
        type=float,
        default=600.0,
        help="AUDIT_IDLE_FULL_CHECK_SECONDS (the net under notifications; default 600)",
    )
    return parser.parse_args()


def _environment(args, server, bucket: str, database_url: str, queue: str | None) -> dict[str, str]:
    return {
        **server.env,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "DATABASE_CONN_MAX_AGE": "60",
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13"),
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-{uuid.uuid4().hex[:8]}",
        "AUDIT_TAIL_INTERVAL_SECONDS": str(args.interval),
        "AUDIT_FULL_CHECK_SECONDS": str(args.full_check),
        "AUDIT_IDLE_FULL_CHECK_SECONDS": str(args.idle_full_check),
        "AUDIT_NOTIFY_QUEUES": f"s3://{bucket}={queue}" if queue else "",
        # The pool's shared listings (audit/tail/shared.py), in another Redis database.
        "AUDIT_LOG_SHARE_URL": "" if args.no_share else "redis://127.0.0.1:6379/12",
        "AUDIT_ALLOWED_ROOTS": f"s3://{bucket}",
        "AUDIT_TABLE_FINDINGS_SECONDS": "10",
        # A killed worker's claims block its tables this long (the drill's recovery time).
        "AUDIT_LOCK_SECONDS": "10",
        "LOG_LEVEL": "WARNING",
    }


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the given processes and their descendants (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent, cpu seconds)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    wanted, total = set(pids), 0.0
    changed = True
    while changed:  # close over children, grandchildren, ...
        changed = False
        for pid, (parent, _cpu) in stats.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    for pid in wanted:
        total += stats.get(pid, (0, 0.0))[1]
    return total


def _wait_ingested(n: int, timeout: float) -> float:
    from audit.models import Table

    started = time.perf_counter()
    while Table.objects.filter(last_seen_version=0).count() < n:
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"initial ingest not done after {timeout:.0f}s")
        time.sleep(0.5)
    return time.perf_counter() - started


def _idle(server, bucket: str, uris: list[str], window: float) -> tuple[str, float]:
    """Requests per table per day over a window without writes: idle tables (commits two days
    old: probed every AUDIT_IDLE_INTERVAL_SECONDS) and active ones (probed every tick)."""
    with server.counting() as seen:
        time.sleep(window)
    idle = sum(1 for u in uris if u.rsplit("/", 1)[-1].startswith("i"))
    on_idle = [r for r in seen if r[1].startswith(f"/{bucket}/i")]
    sqs = sum(1 for r in seen if r[0] == "SQS")
    on_active = len(seen) - len(on_idle) - sqs
    day = 86400 / window
    lines = [
        f"no writes for {window:g}s: {len(seen) / window:.0f} requests/s at the server "
        f"({dict(server.kinds(seen))})"
    ]
    if idle:
        lines.append(
            f"  idle table (last commit 2 days ago): {len(on_idle) / idle * day:,.0f} requests"
            f" per table per day ({dict(server.kinds(on_idle))} on {idle} tables)"
        )
    if len(uris) > idle:
        lines.append(
            f"  active table, no new commit: {on_active / (len(uris) - idle) * day:,.0f} "
            f"requests per table per day at interval {os.environ['AUDIT_TAIL_INTERVAL_SECONDS']}s"
        )
    if os.environ["AUDIT_NOTIFY_QUEUES"]:
        full = float(os.environ["AUDIT_IDLE_FULL_CHECK_SECONDS"])
        lines.append(
            f"  SQS (one ReceiveMessage per drain, the whole lake): {sqs * day:,.0f} requests a "
            f"day, {sqs * day / len(uris):,.1f} per table per day; the net, a full check every "
            f"{full:g}s: {86400 / full:,.0f} LIST per table per day (fewer in a {window:g}s window)"
        )
    return "\n".join(lines), len(seen) / window


def _run(args, server, pool, tables: list[tuple[int, str]]) -> s3_fleet.Writer:
    writer = s3_fleet.Writer(server, tables, args.rate, args.samples)
    kill_note: list[str] = []

    def kill() -> None:
        name = f"w{args.workers}"
        pool.kill(name)
        _start(pool, name, beat=args.workers == 1)
        kill_note.append(f"SIGKILLed {name} at {time.strftime('%X')}; a replacement started")

    done = threading.Event()
    watcher_error: list[BaseException] = []

    def watch() -> None:
        try:
            s3_fleet.watch_stored(writer, done, timeout=120)
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
            watcher_error.append(err)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    writer.run(on_half=kill if args.kill else None)
    done.set()
    thread.join()
    if watcher_error:
        raise watcher_error[0]
    for line in kill_note + writer.errors:
        print(line)
    return writer


def _start(pool, name: str, *, beat: bool) -> None:
    pool.start(name, beat=beat, loglevel="WARNING")


def _report(args, writer: s3_fleet.Writer, cpu: float | None, wall: float, idle_cpu: float) -> None:
    latencies = [w.stored - w.landed for w in writer.written if w.stored is not None]
    load = os.getloadavg()
    mode = "notifications (SQS)" if args.notify else "polling"
    mode += ", one worker SIGKILLed" if args.kill else ""
    print(
        f"tail latency, {args.tables} tables on S3, {args.workers} worker(s), interval "
        f"{args.interval:g}s, {args.rate:g} commits/s, {mode}: "
        f"p50 {statistics.median(latencies):.2f}s  p95 {_percentile(latencies, 0.95):.2f}s  "
        f"max {max(latencies):.2f}s  ({len(latencies)} commits)"
    )
    if cpu is not None:
        stored = len(latencies)
        print(
            f"workers' CPU during the run: {cpu:.1f}s in {wall:.0f}s wall ({cpu / wall:.2f} "
            f"cores, {idle_cpu:.2f} with no writes; {stored} commits stored; the CPU of one "
            "commit's tail step: bench_pg_size.py)"
        )
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def main() -> int:
    args = _args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-s3-tail-", dir=OUT))
    from tests.e2e.s3count import CountingS3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per request
    server = CountingS3(uncounted_key=s3_fleet.WRITER_KEY)
    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    database_url, admin = s3_fleet.throwaway_database(args.database_url, work)
    server.create_bucket(bucket)
    queue = server.notify_queue(bucket) if args.notify else None
    env = _environment(args, server, bucket, database_url, queue)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from tests.support.workers import Workers

    call_command("migrate", verbosity=0)
    pool = Workers(work, env)
    try:
        _bench(args, server, bucket, pool, queue)
    finally:
        pool.stop_all()
        server.stop()
        connections.close_all()
        s3_fleet.drop_database(database_url, admin)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _bench(args, server, bucket: str, pool, queue: str | None) -> None:
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = time.perf_counter()
    idle = int(args.tables * args.idle_share)
    uris = s3_fleet.write_fleet(server, bucket, args.tables, idle=idle)
    if queue is not None:
        # The fleet's creation events predate its registration: a lake's tables are registered
        # once, not with thousands of creation events pending. Commits from here on are noticed.
        server.boto("sqs").purge_queue(QueueUrl=queue)
    ids = s3_fleet.register_fleet(uris)
    print(
        f"{args.tables} tables written to S3 and registered in {time.perf_counter() - started:.1f}s"
    )
    for i in range(1, args.workers + 1):
        _start(pool, f"w{i}", beat=i == 1)
    took = _wait_ingested(args.tables, args.ingest_timeout)
    print(f"initial ingest by {args.workers} worker(s): {took:.1f}s")
    # Settle: every table's first incremental tick and the table-level findings refresh after
    # the ingest (AUDIT_TABLE_FINDINGS_SECONDS=10) are done before idle costs are counted.
    time.sleep(max(3 * args.interval, 15))
    pids = [p.pid for p in pool.procs.values()]
    idle_cpu = _cpu_seconds(pids)
    idle_line, idle_rate = _idle(server, bucket, uris, args.idle_window)
    idle_cpu = (_cpu_seconds(pids) - idle_cpu) / args.idle_window  # cores, no writes
    print(idle_line)
    print(
        f"  workers' CPU with no writes: {idle_cpu:.2f} cores, "
        f"{idle_cpu * args.interval / args.tables * 1000:.2f} ms per table per tick"
    )
    cpu0, wall0 = _cpu_seconds(pids), time.perf_counter()
    with server.counting() as during:
        pairs = zip(ids, uris, strict=True)
        active = [(i, u) for i, u in pairs if u.rsplit("/", 1)[-1].startswith("t")]
        writer = _run(args, server, pool, active)
    wall = time.perf_counter() - wall0
    # A killed worker takes its CPU time with it: no CPU figure for the kill drill.
    cpu = None if args.kill else _cpu_seconds(pids) - cpu0
    _report(args, writer, cpu, wall, idle_cpu)
    stored = sum(1 for w in writer.written if w.stored is not None)
    kinds = server.kinds(during)
    # Idle polling is HEADs and LISTs; what storing commits adds shows as GETs.
    print(
        f"the tail's requests during the run: {len(during)} ({dict(kinds)}); "
        f"{kinds['GET'] / max(stored, 1):.1f} GET per stored commit, "
        f"{(len(during) - kinds['SQS']) / max(stored, 1):.1f} S3 requests per stored commit"
    )
    print(s3_fleet.check_end_state(writer, args.tables, args.compare))


if __name__ == "__main__":
    sys.exit(main())
