"""Latency of the REST API's hot reads on a table with 1,000,000 stored commits.

    .venv/bin/python bench/bench_api.py [--commits 1000000] [--findings 5000]
        [--database-url sqlite:///var/bench-api.sqlite3 | postgres://postgres@127.0.0.1/bench]
        [--workers 5 | --servers 5x4,10x2,20x1] [--connections 20] [--seconds 10] [--rebuild] [--modes off,drf,on]
        [--match <label part>] [--writer]

1. Fills a dedicated database (migrated here; never the dev or test one) with one table of
   `--commits` Commit rows, written with executemany/COPY (a Spark-like mix: ~70% blind
   appends, DELETE/UPDATE/MERGE/OPTIMIZE, ~10% of commits with concurrent versions), plus
   `--findings` findings. Reused on the next run unless --rebuild.
2. Starts gunicorn with config/gunicorn.conf.py (what scripts/run.sh and compose run) on
   127.0.0.1, once per `--modes`: `off` (response and page caches off: every request computes
   its answer, the cold path), `drf` (caches on, fast path off: the peer the fast path is compared
   with) and `on` (the defaults: what 20 clients reading the same pages get).
3. Drives each endpoint with wrk (a separate process; `apt-get install wrk`) at
   `--connections` concurrent connections for `--seconds`, token-authenticated (the dashboard
   pages with a logged-in session), and prints p50/p95/p99 latency, requests/s and the server's
   CPU per request, then each mode's CPU per request as a ratio to the defaults'. Without wrk,
   a thread-pool client in a subprocess.
4. With `--writer`, bench/bench_writer.py commits to 20 more tables every second during the
   measurement, stored through the tail's path (the tables list's generation moves with each).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api_server import (  # noqa: E402
    connections_per_worker,
    free_port,
    server_cpu_seconds,
    start_gunicorn,
    start_writer,
    stop,
)
from load_clients import WRK_LUA, fetch, run_python_client, run_wrk  # noqa: E402

TABLE_URI = "/bench/api/one-million-commits"  # a registered row only; no log is read
OPERATIONS = ["WRITE"] * 70 + ["DELETE"] * 10 + ["UPDATE"] * 5 + ["MERGE"] * 10 + ["OPTIMIZE"] * 5
COMMIT_COLUMNS = (
    "table_id", "version", "timestamp", "committed_at", "operation", "read_version",
    "read_version_fact", "isolation_level", "isolation_level_fact", "blind_append",
    "blind_append_fact", "engine", "engine_info", "txn_id", "user_id", "user_name",
    "job_id", "user_metadata", "provenance", "files_added", "files_removed", "bytes_added",
    "bytes_removed", "concurrent_versions", "concurrent_count", "predicate_raw", "predicate_sql", "operation_parameters",
    "operation_metrics", "partitions", "app_ids", "metadata_changed", "protocol_changed",
    "recheck", "facts",
)  # fmt: skip


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


# --------------------------------------------------------------------------- data


def commit_rows(table_id: int, n: int, seed: int = 7):
    rng = random.Random(seed)
    base_ts = 1_700_000_000_000
    facts = json.dumps({"read_version": "recorded", "timestamp": "recorded"})
    for v in range(n):
        op = "CREATE TABLE" if v == 0 else rng.choice(OPERATIONS)
        lag = 1 if rng.random() > 0.1 else rng.randint(2, 6)
        read_version = max(v - lag, 0) if v else None
        concurrent = list(range(read_version + 1, v)) if read_version is not None else []
        blind = op == "WRITE"
        ts = base_ts + v * 1500 + rng.randint(0, 900)
        day = f"2024-{1 + v % 12:02d}-{1 + v % 28:02d}"
        predicate = "" if blind or op == "OPTIMIZE" else f"day = '{day}' AND id > {v % 1000}"
        yield (
            table_id, v, ts, _iso(ts), op, read_version, "recorded" if v else "unknown",
            "WriteSerializable", "recorded", blind, "recorded", "spark",
            "Apache-Spark/3.5.0 Delta-Lake/3.2.0", f"txn-{v}", "", "", "", "", "{}",
            1 if blind else 2,
            0 if blind else 1, 4096, 0 if blind else 4096, json.dumps(concurrent),
            len(concurrent), predicate, predicate, "{}", "{}",
            json.dumps([{"day": day}]), "{}", False, False, "{}", facts,
        )  # fmt: skip


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}+00:00"


def plan_as_a_deployment() -> None:
    from django.db import connection

    if connection.vendor == "sqlite":
        forget_sqlite_statistics()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        if cursor.fetchone()[0] != "on":
            print("PostgreSQL runs with autovacuum off here: the bench vacuums its tables")


def vacuum_as_autovacuum() -> None:
    """VACUUM (ANALYZE) on PostgreSQL, as a server's autovacuum does after a bulk load (an
    insert-triggered vacuum since PostgreSQL 13; autovacuum is on by default). Without it
    nothing sets the visibility map where autovacuum is off (this machine): index-only scans
    read the heap, 2,000 heap fetches in a 2,000-version timeline count. Measured at stop 39,
    1M commits, caches off, two rounds alternating: the database's time per request 0.6-1.0x
    (the 2,000- and 20,000-version windows 1.58 / 1.83 -> 0.67 / 1.00 ms, the findings pages
    1.47 -> 0.94 ms), under wrk 11 and 8 of 24 endpoints under 50 ms against 10 and 5."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")  # autocommit: VACUUM cannot run in a transaction


def forget_sqlite_statistics() -> None:
    """Drop what an ANALYZE recorded (this bench ran one on SQLite until stop 36): nothing runs
    ANALYZE on a deployment's SQLite file, and the planner chooses differently with and without
    statistics (the findings lists: sorted every finding of the table either way, by different
    queries), so the bench plans as a deployment does."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone():
            cursor.execute("DROP TABLE sqlite_stat1")
            print("SQLite: dropped the statistics of an earlier ANALYZE (a deployment has none)")


def generated_findings(table, n_commits: int, n_findings: int, now) -> list:
    from audit.models import Finding

    rng = random.Random(11)
    severities = ["info", "warning", "critical"]
    kinds = ["write_serializable_reorder", "never_existed_snapshot", "conflict_hotspot"]
    findings = []
    for i in range(n_findings):
        version = rng.randrange(1, n_commits)
        kind = rng.choice(kinds)
        findings.append(
            Finding(
                table=table,
                kind=kind,
                severity=rng.choice(severities),
                version=version,
                related_versions=[version - 1],
                confirmed=rng.random() < 0.3,
                summary=f"finding {i} at v{version}",
                explanation="generated for the benchmark",
                key=f"{kind}:{version}:{version - 1}:{i}",
                last_seen=now,
                status="open" if rng.random() < 0.8 else "resolved",
            )  # fmt: skip
        )
    return findings


def build(n_commits: int, n_findings: int, rebuild: bool) -> int:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from audit.ingest.rollup_store import rebuild_rollups
    from audit.models import Commit, Finding, Table

    call_command("migrate", verbosity=0)
    plan_as_a_deployment()
    table = Table.objects.filter(uri=TABLE_URI).first()
    if table is not None and not rebuild and table.last_seen_version == n_commits - 1:
        print(f"reusing table {table.id} with {n_commits:,} commits")
        store_health(table, n_commits)
        vacuum_as_autovacuum()
        return table.id
    Table.objects.filter(uri=TABLE_URI).delete()
    now = timezone.now()
    table = Table.objects.create(
        uri=TABLE_URI, name="bench 1M", status="ok", last_seen_version=n_commits - 1,
        latest_version_in_log=n_commits - 1, first_available_version=0, last_commit_at=now,
    )  # fmt: skip
    started = time.perf_counter()
    rows = commit_rows(table.id, n_commits)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            _copy_postgres(cursor, rows)
        else:
            _insert_sqlite(cursor, rows)
    print(f"stored {n_commits:,} commits in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    rollups = rebuild_rollups(table.id)  # the ingest maintains them; a bulk load rebuilds them
    print(f"rebuilt {rollups:,} timeline rollups in {time.perf_counter() - started:.1f} s")
    findings = generated_findings(table, n_commits, n_findings, now)
    Finding.objects.bulk_create(findings, batch_size=2000)
    store_health(table, n_commits)
    vacuum_as_autovacuum()
    print(f"stored {n_findings:,} findings; {Commit.objects.filter(table=table).count():,} commits")
    return table.id


def store_health(table, n_commits: int) -> None:
    """What the tail stores with the commits for the health and changes endpoints: a health
    point per version, the latest health document, a schema or property change every 20,000
    versions (with a concurrent_metadata_change finding on every other one)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from audit.health.models import HealthPoint, TableChange, TableHealth
    from audit.ingest.health_store import health_fields
    from audit.models import Finding

    if TableHealth.objects.filter(table=table).exists():
        return
    started = time.perf_counter()
    sql = (
        "INSERT INTO audit_healthpoint (table_id, version, timestamp, num_files, total_bytes, "
        "small_files) VALUES (%s, %s, %s, %s, %s, %s)"
    )
    points = ((table.id, v, 1_700_000_000_000 + v * 1500, 1000 + v // 10, 2**30 + v * 4096,
               100 + v // 100) for v in range(n_commits))  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        batch = []
        for row in points:
            batch.append(row)
            if len(batch) == 50_000:
                cursor.executemany(sql, batch)
                batch.clear()
        cursor.executemany(sql, batch)
        last = n_commits - 1
        partitions = [{"values": {"day": f"2024-01-{d:02d}"}, "files": 40, "bytes": 2**24}
                      for d in range(1, 29)]  # fmt: skip
        health = {
            "version": last, "num_files": 1000 + last // 10, "total_bytes": 2**30 + last * 4096,
            "small_files": {"count": 100 + last // 100, "limit_bytes": 2**25},
            "tombstones": {"count": 500, "vacuumable_bytes": 2**28},
            "checkpoint": {"version": last - last % 10, "commits_since": last % 10},
            "partitions": partitions, "recommendations": ["OPTIMIZE the small files"],
        }  # fmt: skip
        TableHealth.objects.create(table=table, **health_fields(health))
        kinds = ["schema", "properties"]
        TableChange.objects.bulk_create(
            TableChange(table=table, version=v, timestamp=1_700_000_000_000 + v * 1500,
                        kind=kinds[i % 2], before={"a": i}, after={"a": i + 1},
                        summary=f"change {i} at v{v}")
            for i, v in enumerate(range(1, n_commits, 20_000))
        )  # fmt: skip
        Finding.objects.bulk_create(
            Finding(table=table, kind="concurrent_metadata_change", severity="warning",
                    version=v, related_versions=[v - 1], summary=f"metadata change at v{v}",
                    explanation="generated for the benchmark", key=f"cmc:{v}",
                    last_seen=timezone.now(), status="open")
            for v in range(1, n_commits, 40_000)
        )  # fmt: skip
    print(f"stored {HealthPoint.objects.filter(table=table).count():,} health points and "
          f"{TableChange.objects.filter(table=table).count()} changes "
          f"in {time.perf_counter() - started:.1f} s")  # fmt: skip


def _insert_sqlite(cursor, rows) -> None:
    sql = (
        f"INSERT INTO audit_commit ({', '.join(COMMIT_COLUMNS)}) "
        f"VALUES ({', '.join(['%s'] * len(COMMIT_COLUMNS))})"
    )
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == 50_000:
            cursor.executemany(sql, batch)
            batch.clear()
    if batch:
        cursor.executemany(sql, batch)


def _copy_postgres(cursor, rows) -> None:
    raw = cursor.cursor  # the psycopg cursor under Django's wrapper
    with raw.copy(f"COPY audit_commit ({', '.join(COMMIT_COLUMNS)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def bench_user():
    """The bench's reader: a viewer of the bench table's project (not staff, so every request
    pays the membership check a real reader's does)."""
    from django.contrib.auth import get_user_model

    from audit.models import Membership, Table

    user, _ = get_user_model().objects.get_or_create(username="bench-reader")
    project_id = Table.objects.get(uri=TABLE_URI).project_id
    Membership.objects.get_or_create(
        project_id=project_id, user=user, defaults={"role": Membership.Role.VIEWER}
    )
    return user


def session_cookie_for_bench_user() -> str:
    """A logged-in session of the bench user, as the login page leaves it (a Cookie value)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
    )
    from django.middleware.csrf import _get_new_csrf_string

    user = bench_user()
    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    # The CSRF cookie a browser holds after its first page: without it every page would mint
    # a new CSRF secret and set a cookie, which a real reader's requests do not.
    csrf = f"{settings.CSRF_COOKIE_NAME}={_get_new_csrf_string()}"
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}; {csrf}"


def token_for_bench_user() -> str:
    from rest_framework.authtoken.models import Token

    user = bench_user()
    return Token.objects.get_or_create(user=user)[0].key


# --------------------------------------------------------------------------- server and load


def cursor_at(version: int) -> str:
    """The `next` cursor a client holds after walking the list down to `version`."""
    return base64.b64encode(f"p={version}".encode()).decode()


def measure(server, endpoints, header: str, args, use_wrk: bool, mode: str) -> list[tuple]:
    """wrk (or threads) on each endpoint: latency percentiles and the server's CPU per request."""
    results = []
    lua = Path(tempfile.mkstemp(suffix=".lua")[1])
    lua.write_text(WRK_LUA)
    try:
        if use_wrk and endpoints:
            # Warm every gunicorn worker and thread first (a keep-alive connection stays on the
            # worker that accepted it, so 20 connections can leave one cold): a fresh worker's
            # first requests pay its copy-on-write faults, DB connections and template loads,
            # ~0.3 s of CPU each, which is start-up and not what a reader of a running server sees.
            run_wrk(endpoints[0][1], header, max(args.connections, 64), 3, lua)
        for label, url in endpoints:
            status, body = fetch(url, header)  # warm up and check
            assert status == 200, (label, status, body[:200])
            cpu_before = server_cpu_seconds(server.pid)
            if use_wrk:
                # Where the connections sit, sampled half-way through the run.
                spread: list[int] = []
                timer = threading.Timer(
                    args.seconds / 2,
                    lambda into: into.extend(connections_per_worker(server.pid, args.port)),
                    args=(spread,),
                )
                timer.start()
                stats = run_wrk(url, header, args.connections, args.seconds, lua)
                timer.join()
                stats["spread"] = spread
            else:
                stats = run_python_client(url, header, args.connections, args.seconds)
            stats["rps"] = stats["requests"] / max(stats["seconds"], 1e-9)
            # Server CPU per request barely depends on what else the machine runs; on N idle
            # cores, 20 closed-loop clients see about 20 * cpu_ms / N of latency.
            cpu = server_cpu_seconds(server.pid) - cpu_before
            stats["cpu_ms"] = cpu * 1000 / max(stats["requests"], 1)
            results.append((mode, label, len(body), stats))
            print(
                f"{label:44s} p50 {stats['p50']:7.1f} ms  p95 {stats['p95']:7.1f} ms  "
                f"p99 {stats['p99']:7.1f} ms  {stats['rps']:6.0f} req/s  "
                f"server CPU {stats['cpu_ms']:5.2f} ms/req  "
                f"non-2xx {stats['non2xx']}  errors {stats['errors']}  ({len(body):,} B)  "
                f"load {os.getloadavg()[0]:.1f}  connections per worker {stats.get('spread')}",
                flush=True,
            )
    finally:
        lua.unlink()
    return results


def endpoint_lists(port: int, table_id: int, n: int) -> tuple[list, list]:
    """(label, URL) of every API endpoint measured, and of the dashboard pages."""
    base = f"http://127.0.0.1:{port}/api"
    t = f"{base}/tables/{table_id}"
    endpoints = [
        ("commits, first page (100, newest)", f"{t}/commits/"),
        ("commits, deep page (cursor near v1000)", f"{t}/commits/?cursor={cursor_at(1100)}"),
        ("commits, oldest first from min_version", f"{t}/commits/?order=asc&min_version={n - 150}"),
        ("commits, operation=DELETE,MERGE filter", f"{t}/commits/?operation=DELETE,MERGE"),
        ("commits, has_concurrent=true", f"{t}/commits/?has_concurrent=true"),
        ("timeline, 2,000-version window (rows)", f"{t}/timeline/?from_version={n // 2}&to_version={n // 2 + 1999}"),
        ("timeline, 20,000-version window (buckets)", f"{t}/timeline/?from_version={n // 2}&to_version={n // 2 + 19999}"),
        ("commits, version range (max_version)", f"{t}/commits/?min_version={n // 3}&max_version={n // 3 + 5000}"),
        ("commits, time window (since/until, ms)", f"{t}/commits/?since={1_700_000_000_000 + n * 750}&until={1_700_000_000_000 + n * 900}"),
        ("timeline, 200-version window (rows)", f"{t}/timeline/?from_version={n // 2}&to_version={n // 2 + 199}"),
        ("findings, first page (50)", f"{base}/findings/"),
        ("findings, open critical of the table", f"{base}/findings/?table={table_id}&status=open&min_severity=critical"),
        ("findings, kind + severity + confirmed", f"{base}/findings/?kind=conflict_hotspot&severity=warning,critical&confirmed=true"),
        ("findings, unacknowledged in a version range", f"{base}/findings/?acknowledged=false&min_version={n // 4}&max_version={n // 2}"),
        ("tables list", f"{base}/tables/"),
        ("tables list, by open findings", f"{base}/tables/?ordering=open_findings&status=ok"),
        ("health (latest)", f"{t}/health/"),
        ("health history (400 points)", f"{t}/health/history/"),
        ("changes", f"{t}/changes/"),
    ]  # fmt: skip
    pages = [
        ("page: tables overview", f"http://127.0.0.1:{port}/"),
        ("page: table", f"http://127.0.0.1:{port}/tables/{table_id}/"),
        ("page: table status (live refresh)", f"http://127.0.0.1:{port}/tables/{table_id}/status/"),
        ("page: findings", f"http://127.0.0.1:{port}/findings/"),
        ("page: findings of the table", f"http://127.0.0.1:{port}/findings/?table={table_id}"),
    ]  # fmt: skip
    return endpoints, pages


MODES = {
    "off": "response caches off: the cold path",
    "drf": "response caches on, fast path off: DRF answers every request from the cache",
    "on": "response caches on, fast path on (the defaults)",
}


def print_ratios(results: list[tuple]) -> None:
    """Server CPU per request of each mode against the defaults', measured in this run."""
    cpu = {(mode, label): stats["cpu_ms"] for mode, label, _, stats in results}
    peers = [mode for mode in ("off", "drf") if any(m == mode for m, _ in cpu)]
    if "on" not in {m for m, _ in cpu} or not peers:
        return
    print("\nserver CPU per request, ratio to the defaults (fast path on):")
    for label in dict.fromkeys(label for _, label in cpu):
        if ("on", label) in cpu:
            on = max(cpu["on", label], 1e-6)
            ratios = "  ".join(
                f"{m} {cpu[m, label] / on:5.1f}x" for m in peers if (m, label) in cpu
            )
            print(f"{label:44s} on {cpu['on', label]:5.2f} ms  {ratios}")


def print_shapes(results: list[tuple]) -> None:
    """p95 and requests/s of each endpoint under each gunicorn shape, as ratios to the first
    shape's, measured in this run."""
    first = results[0][0]
    base = {label: st for m, label, _, st in results if m == first}
    print(f"\np95 and requests/s per endpoint, ratio to {first}:")
    for mode, label, _, st in results:
        peer = base.get(label)
        if peer is None or mode == first:
            continue
        print(
            f"{mode:14s} {label:44s} p95 {st['p95']:7.1f} ms ({st['p95'] / max(peer['p95'], 1e-9):4.2f}x)"
            f"  {st['rps']:6.0f} req/s ({st['rps'] / max(peer['rps'], 1e-9):4.2f}x)"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--findings", type=int, default=5_000)
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench-api.sqlite3'}")
    parser.add_argument("--workers", type=int, default=0, help="default: config/gunicorn.conf.py")
    parser.add_argument(
        "--servers",
        default="",
        help="comma-separated gunicorn shapes measured in turn, each WxT or WxT:C (workers x "
        "threads, at most C connections a worker; without C, the config's 3 x WEB_THREADS; "
        "gunicorn's own default, before the cap: C = 1000; a /K suffix: K seconds of keep-alive), "
        "e.g. 5x4:1000,5x4,10x2:3,2x2:4/0; "
        "default: --workers",
    )
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--modes", default="off,drf,on", help=f"comma-separated: {', '.join(MODES)}"
    )
    parser.add_argument(
        "--match", default="", help="only endpoints whose label contains this (a|b: either)"
    )
    parser.add_argument(
        "--writer", action="store_true", help="commit to 20 tables every second meanwhile"
    )
    return parser.parse_args()


def run_modes(args, shapes, endpoints, pages, headers, timeline_url) -> list[tuple]:
    """Every (mode, server shape) in turn: a fresh gunicorn, the API endpoints with the token,
    the pages with the session cookie, and one whole-history timeline request."""
    token, session = headers
    use_wrk = shutil.which("wrk") is not None
    results = []
    for mode in args.modes.split(","):
        for shape in shapes:
            # A mode's label names the server's shape when several are compared.
            label = mode if len(shapes) == 1 else f"{mode} {shape}"
            print(f"\n--- {MODES[mode]}" + (f", gunicorn {shape}" if len(shapes) > 1 else ""))
            log_path = ROOT / "var" / "bench-api-gunicorn.log"
            server = start_gunicorn(args.database_url, args.port, shape, log_path, mode)
            try:
                results += measure(server, endpoints, token, args, use_wrk, label)
                print("dashboard pages, logged in (session cookie):")
                results += measure(server, pages, session, args, use_wrk, label)
                started = time.perf_counter()
                fetch(timeline_url, token)
                full = (time.perf_counter() - started) * 1000
                print(f"{'timeline, whole history (1 request)':44s} {full:7.1f} ms")
            finally:
                stop(server)
    return results


def print_summary(args, vendor: str, results: list[tuple], shapes: list[str]) -> None:
    client = "wrk" if shutil.which("wrk") is not None else "python threads"
    print(
        f"\n{vendor}, {args.commits:,} commits, gunicorn "
        f"{args.servers or args.workers or 'config/gunicorn.conf.py'} gthread workers, {client} "
        f"{args.connections} connections x {args.seconds} s per endpoint, {os.cpu_count()} CPUs"
    )
    for mode in dict.fromkeys(m for m, _, _, _ in results):
        worst = max((st["p95"] for m, _, _, st in results if m == mode), default=0.0)
        rps = sum(st["rps"] for m, _, _, st in results if m == mode)
        print(f"worst p95, {mode}: {worst:.1f} ms (target < 50 ms); requests/s summed {rps:,.0f}")
    if len(shapes) > 1:
        print_shapes(results)
    print_ratios(results)
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def main() -> None:
    args = parse_args()
    (ROOT / "var").mkdir(exist_ok=True)
    setup_django(args.database_url)
    table_id = build(args.commits, args.findings, args.rebuild)
    headers = (
        f"Authorization: Token {token_for_bench_user()}",
        f"Cookie: {session_cookie_for_bench_user()}",
    )
    from django.db import connection

    vendor = connection.vendor
    connection.close()

    port = args.port = free_port()
    endpoints, pages = endpoint_lists(port, table_id, args.commits)
    wanted = args.match.split("|")  # any of these label parts
    endpoints = [(label, url) for label, url in endpoints if any(w in label for w in wanted)]
    pages = [(label, url) for label, url in pages if any(w in label for w in wanted)]
    writer = start_writer(args.database_url) if args.writer else None
    shapes = args.servers.split(",") if args.servers else [str(args.workers or "")]
    timeline_url = f"http://127.0.0.1:{port}/api/tables/{table_id}/timeline/"
    results = run_modes(args, shapes, endpoints, pages, headers, timeline_url)
    if writer is not None:
        writer.terminate()
        print(writer.communicate(timeout=60)[0].strip().splitlines()[-1])
    print_summary(args, vendor, results, shapes)


if __name__ == "__main__":
    main()
