"""Backfill throughput into SQLite and PostgreSQL, against the pure core audit of the same log.

    .venv/bin/python bench/bench_backfill.py [--commits 100000] [--log DIR] [--dbs sqlite,postgresql]
                                             [--paths old,new] [--chunk 5000]

A Spark-style log (bench/gen_log.py, only the log: AUDIT_CHECK_DATA is off) is backfilled by
`audit.tail_once` in chunks of AUDIT_BACKFILL_CHUNK, in a fresh database per run (a
throwaway SQLite file; a throwaway PostgreSQL database next to DATABASE_URL's), once per path:
`old` = the ingest before bulk loading (AUDIT_BULK_INSERT=false: one INSERT per row, and
AUDIT_BACKFILL_STEP_SECONDS=0: one chunk and one log listing per step) and `new` = the defaults
(COPY on PostgreSQL, multi-row INSERT on SQLite, several chunks per listing). The peer measured in the same run is
the pure core audit of the same log (load_history + audit_history, no database): the ratio
says what storing costs on top of auditing. Each run is a child process; wall time, the
child's CPU time (the database server's CPU is not in it) and commits/s are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/deltaaudit"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def core_audit(log: Path) -> dict[str, float]:
    from audit.core.runs.table import LOG_ONLY, open_table

    t0, c0 = time.perf_counter(), cpu_seconds()
    table = open_table(str(log), options=LOG_ONLY)
    history = table.history()
    table.audit(history)
    return {
        "seconds": time.perf_counter() - t0,
        "cpu": cpu_seconds() - c0,
        "commits": len(history.summaries),
    }


def pg_admin(url: str, sql: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql)


def child(db: str, path: str, log: str, chunk: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="bench-backfill-", dir=OUT))
    if db == "sqlite":
        url = f"sqlite:///{work / 'bench.sqlite3'}"
    else:
        base = os.environ.get("DATABASE_URL", DEFAULT_PG)
        name = f"bench_backfill_{os.getpid()}"
        pg_admin(base, f"CREATE DATABASE {name}")
        url = urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": url,
            "AUDIT_BULK_INSERT": "true" if path == "new" else "false",
            "AUDIT_BACKFILL_STEP_SECONDS": "10" if path == "new" else "0",
            "AUDIT_CHECK_DATA": "false",  # gen_log writes only the log
            "AUDIT_BACKFILL_CHUNK": str(chunk),
            "AUDIT_ALLOWED_ROOTS": str(Path(log).parent),
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from audit.ingest.tables import register_table
    from audit.models import Commit
    from audit.tail.step import tail_once

    try:
        call_command("migrate", verbosity=0)
        table, _ = register_table(log)
        t0, c0 = time.perf_counter(), cpu_seconds()
        chunks = 0
        while True:
            result = tail_once(table.id)
            chunks += 1
            if result.status == "error":
                raise SystemExit(result.line())
            if not result.more:
                break
        seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        stored = Commit.objects.filter(table=table).count()
        versions = Commit.objects.filter(table=table).values("version").distinct().count()
        assert stored == versions, "a version was stored twice"
    finally:
        connections.close_all()
        if db != "sqlite":
            pg_admin(os.environ.get("DATABASE_URL", DEFAULT_PG), f"DROP DATABASE {name}")
    return {"seconds": seconds, "cpu": cpu, "commits": stored, "chunks": chunks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--log", help="an existing gen_log.py table (generated when missing)")
    parser.add_argument("--dbs", default="sqlite,postgresql")
    parser.add_argument("--paths", default="old,new")
    parser.add_argument("--chunk", type=int, default=5000)
    parser.add_argument("--child", nargs=2, metavar=("DB", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    log = Path(args.log or OUT / f"backfill-{args.commits}")
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], str(log), args.chunk)))
        return 0
    if not (log / "_delta_log").is_dir():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "gen_log.py"),
                str(log),
                "--commits",
                str(args.commits),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared)")
    peer = core_audit(log)
    print(
        f"peer: core audit (no database) {peer['commits']} commits in {peer['seconds']:.1f}s "
        f"(cpu {peer['cpu']:.1f}s) = {peer['commits'] / peer['seconds']:.0f} commits/s"
    )
    print(
        f"{'database':<11} {'path':<8} {'commits':>8} {'wall s':>7} {'cpu s':>6} {'commits/s':>10} {'x core':>7}"
    )
    for db in args.dbs.split(","):
        for path in args.paths.split(","):
            cmd = [
                sys.executable,
                __file__,
                "--log",
                str(log),
                "--chunk",
                str(args.chunk),
                "--child",
                db,
                path,
            ]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(
                f"{db:<11} {path:<8} {r['commits']:>8} {r['seconds']:>7.1f} {r['cpu']:>6.1f} "
                f"{r['commits'] / r['seconds']:>10.0f} {r['seconds'] / peer['seconds']:>7.2f}",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
