"""Latency of the stored table health on a 1,000,000-commit table, against its peer:
recomputing the same health from the log, which is what the stored row saves per request.

    .venv/bin/python bench/bench_health.py [--log /tmp/delta-bench-1000000] [--commits 1000000]
        [--database-url sqlite:///var/bench-api.sqlite3 | postgres://...] [--seconds 10]

1. The log: `--log` (generated with bench/gen_log.py when absent: a checkpoint every 100
   commits, like real writers). The peer is measured here, in-process: `health_at(log)`, the
   full recompute (replay from the newest checkpoint with tombstones), CPU and wall time.
2. The database: bench_api.py's table of `--commits` stored Commit rows (built or reused), its
   `TableHealth` row set from that recompute (what `audit.ingest.health_store` stores at the end of a
   tail step), and one `HealthPoint` per version (synthetic values: the per-version walk is
   the ingest's cost, not the API's).
3. gunicorn + wrk (or a thread client) on /health/, /health/history/, /changes/ and the fleet
   list sorted by vacuumable bytes: p50/p95/p99 and server CPU per request.
Prints the ratio recompute ÷ stored p95 and the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_api as api  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def recompute(log_path: str) -> tuple[dict, float, float]:
    from audit.core.health.compute import health_at
    from audit.core.log import open_log

    wall, cpu0 = time.perf_counter(), cpu()
    health = health_at(open_log(log_path))
    return health, time.perf_counter() - wall, cpu() - cpu0


def store(table_id: int, health: dict, n: int) -> None:
    from django.db import connection, transaction

    from audit.health.models import HealthPoint, TableHealth
    from audit.ingest.health_store import health_fields

    TableHealth.objects.update_or_create(table_id=table_id, defaults=health_fields(health))
    if HealthPoint.objects.filter(table_id=table_id).count() == n:
        print(f"reusing {n:,} health points")
        return
    HealthPoint.objects.filter(table_id=table_id).delete()
    started = time.perf_counter()
    rows = (
        (table_id, v, 1_700_000_000_000 + v * 1500, 1 + v // 3, 4096 * (1 + v // 3), v % 97)
        for v in range(n)
    )
    columns = "table_id, version, timestamp, num_files, total_bytes, small_files"
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY audit_healthpoint ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            batch: list[tuple] = []
            sql = f"INSERT INTO audit_healthpoint ({columns}) VALUES (?, ?, ?, ?, ?, ?)"
            for row in rows:
                batch.append(row)
                if len(batch) == 50_000:
                    cursor.cursor.executemany(sql, batch)
                    batch.clear()
            if batch:
                cursor.cursor.executemany(sql, batch)
        cursor.execute("ANALYZE")
    print(f"stored {n:,} health points in {time.perf_counter() - started:.1f} s")


def measure(url: str, token: str, args, server) -> dict:
    header = f"Authorization: Token {token}"
    status, body = api.fetch(url, header)
    assert status == 200, (url, status, body[:200])
    cpu_before = api.server_cpu_seconds(server.pid)
    if shutil.which("wrk"):
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
            lua.write(api.WRK_LUA)
        stats = api.run_wrk(url, header, args.connections, args.seconds, Path(lua.name))
        os.unlink(lua.name)
    else:
        stats = api.run_python_client(url, header, args.connections, args.seconds)
    stats["cpu_ms"] = (
        (api.server_cpu_seconds(server.pid) - cpu_before) * 1000 / max(stats["requests"], 1)
    )
    stats["bytes"] = len(body)
    return stats


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default=None, help="the table whose health is stored")
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench-api.sqlite3'}")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=10)
    return parser.parse_args()


def _serve_and_measure(args: argparse.Namespace, table_id: int, token: str) -> list[tuple]:
    """Start gunicorn on the bench database and measure each health endpoint with wrk."""
    port = api.free_port()
    base = f"http://127.0.0.1:{port}/api"
    t = f"{base}/tables/{table_id}"
    endpoints = [
        ("health, latest (stored)", f"{t}/health/"),
        ("health history, 400 points of 1M", f"{t}/health/history/"),
        ("changes", f"{t}/changes/"),
        ("tables list ?ordering=vacuumable_bytes", f"{base}/tables/?ordering=vacuumable_bytes"),
    ]
    server = api.start_gunicorn(
        args.database_url, port, args.workers, ROOT / "var" / "bench-health-gunicorn.log", "on"
    )
    results = []
    try:
        measure(endpoints[0][1], token, argparse.Namespace(**{**vars(args), "seconds": 2}), server)
        for label, url in endpoints:
            stats = measure(url, token, args, server)
            results.append((label, stats))
            print(
                f"{label:42s} p50 {stats['p50']:6.1f} ms  p95 {stats['p95']:6.1f} ms  "
                f"p99 {stats['p99']:6.1f} ms  {stats['requests'] / max(stats['seconds'], 1e-9):6.0f} req/s  "
                f"server CPU {stats['cpu_ms']:5.1f} ms/req  non-2xx {stats['non2xx']}  ({stats['bytes']:,} B)",
                flush=True,
            )
    finally:
        api.stop(server)
    return results


def main() -> None:
    args = _args()
    log_path = args.log or f"/tmp/delta-bench-{args.commits}"
    if not os.path.exists(os.path.join(log_path, "_delta_log")):
        from gen_log import generate

        print(f"generating {args.commits:,} commits into {log_path} ...", flush=True)
        generate(log_path, args.commits)

    (ROOT / "var").mkdir(exist_ok=True)
    api.setup_django(args.database_url)
    health, wall, used = recompute(log_path)
    print(
        f"peer: recompute health from the log ({health['version'] + 1:,} commits, "
        f"{health['num_files']:,} live files): {wall * 1000:.0f} ms wall, {used * 1000:.0f} ms CPU"
    )
    table_id = api.build(args.commits, 0, False)
    store(table_id, health, args.commits)
    token = api.token_for_bench_user()
    from django.db import connection

    vendor = connection.vendor
    connection.close()
    results = _serve_and_measure(args, table_id, token)
    p95 = results[0][1]["p95"]
    print(
        f"\n{vendor}, {args.commits:,} stored commits, gunicorn {args.workers} gthread workers, "
        f"{args.connections} connections x {args.seconds} s"
    )
    print(
        f"stored health p95 {p95:.1f} ms (target < 50 ms); recompute {wall * 1000:.0f} ms: "
        f"{wall * 1000 / max(p95, 1e-9):.0f}x the stored p95; server CPU {results[0][1]['cpu_ms']:.1f} ms/req "
        f"vs recompute CPU {used * 1000:.0f} ms ({used * 1000 / max(results[0][1]['cpu_ms'], 1e-9):.0f}x)"
    )
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
