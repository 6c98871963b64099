"""Latency of the history page (/tables/<id>/history/) and its filters on a table of
1,000,000 stored commits, cold (response and page caches off), at 20 clients.

    .venv/bin/python bench/bench_history_page.py [--commits 1000000] [--findings 5000]
        [--database-url sqlite:///var/bench-history.sqlite3 | postgres://postgres@127.0.0.1/bench_history]
        [--connections 20] [--seconds 10] [--rebuild] [--match <label part>]

The pattern of bench/bench_api.py (its loading, its server and its clients): a dedicated
database (created on PostgreSQL when missing, migrated here, vacuumed as autovacuum would)
holds one table of `--commits` commits written with COPY/executemany whose writers record
users, jobs, metadata and operation parameters (a Spark-like mix: a service user for most
commits, a few people, twenty jobs, a ticket in the metadata of one commit in twenty), and
`--findings` findings. gunicorn (config/gunicorn.conf.py) runs with the caches off (`off`:
every request computes its page) and each page is driven by wrk at `--connections` (or a
thread-pool client without wrk) for `--seconds`; p50/p95/p99, requests/s, the server's CPU per
request and the load average are printed. The aim: p95 < 50 ms at 20 clients on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_api  # noqa: E402
from api_server import free_port, start_gunicorn, stop  # noqa: E402

TABLE_URI = "/bench/history/one-million-commits"  # a registered row only; no log is read
USERS = (
    ["etl-service"] * 80
    + ["alice@example.org"] * 8
    + ["bob@example.org"] * 6
    + ["carol@example.org"] * 4
    + ["dave@example.org"] * 2
)
_COLUMN = {name: i for i, name in enumerate(bench_api.COMMIT_COLUMNS)}


def history_rows(table_id: int, n: int, seed: int = 11):
    """bench_api's commit rows, with who wrote them and the operation's parameters."""
    rng = random.Random(seed)
    for row in bench_api.commit_rows(table_id, n):
        row = list(row)
        v = row[_COLUMN["version"]]
        user, job = rng.choice(USERS), f"job-{v % 20}"
        ticket = f"ticket OPS-{v % 997}" if v % 20 == 0 else ""
        operation = row[_COLUMN["operation"]]
        mode = "Append" if operation == "WRITE" else "Overwrite" if v % 50 == 0 else ""
        parameters = {"mode": mode} if mode else {"predicate": row[_COLUMN["predicate_raw"]]}
        provenance = {"engine": row[_COLUMN["engine_info"]], "user_name": user, "job_id": job}
        if ticket:
            provenance["user_metadata"] = ticket
        row[_COLUMN["user_name"]] = user
        row[_COLUMN["job_id"]] = job
        row[_COLUMN["user_metadata"]] = ticket
        row[_COLUMN["provenance"]] = json.dumps(provenance)
        row[_COLUMN["operation_parameters"]] = json.dumps(parameters)
        row[_COLUMN["operation_metrics"]] = json.dumps(
            {"numOutputRows": str(v % 1000), "numFiles": str(row[_COLUMN["files_added"]])}
        )
        yield tuple(row)


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database of `url` when it does not exist (never the dev one)."""
    if not url.startswith("postgres"):
        return
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not found:
            conn.execute(f'CREATE DATABASE "{name}"')


def build(n_commits: int, n_findings: int, rebuild: bool) -> int:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from audit.ingest.rollup_store import rebuild_rollups
    from audit.models import Finding, Table

    call_command("migrate", verbosity=0)
    bench_api.plan_as_a_deployment()
    table = Table.objects.filter(uri=TABLE_URI).first()
    if table is not None and not rebuild and table.last_seen_version == n_commits - 1:
        print(f"reusing table {table.id} with {n_commits:,} commits")
        bench_api.vacuum_as_autovacuum()
        return table.id
    Table.objects.filter(uri=TABLE_URI).delete()
    now = timezone.now()
    table = Table.objects.create(
        uri=TABLE_URI, name="bench history", status="ok", last_seen_version=n_commits - 1,
        latest_version_in_log=n_commits - 1, first_available_version=0, last_commit_at=now,
    )  # fmt: skip
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        rows = history_rows(table.id, n_commits)
        if connection.vendor == "postgresql":
            bench_api._copy_postgres(cursor, rows)
        else:
            bench_api._insert_sqlite(cursor, rows)
    print(f"stored {n_commits:,} commits in {time.perf_counter() - started:.1f} s")
    rebuild_rollups(table.id)  # the ingest maintains them; a bulk load rebuilds them
    findings = bench_api.generated_findings(table, n_commits, n_findings, now)
    Finding.objects.bulk_create(findings, batch_size=2000)
    bench_api.vacuum_as_autovacuum()
    return table.id


def pages(port: int, table_id: int, n: int, before: int | None) -> list[tuple[str, str]]:
    """(label, URL) of each history page measured; `before`: the keyset the link to page 20
    of the rare user's commits carries."""
    h = f"http://127.0.0.1:{port}/tables/{table_id}/history/"
    middle, last = n // 100, -(-n // 50)
    day = 86_400_000
    since = 1_700_000_000_000 + (n // 2) * 1500
    return [
        ("history, first page", h),
        (f"history, page {middle:,} (rollups)", f"{h}?page={middle}"),
        (f"history, last page ({last:,})", f"{h}?page={last}"),
        ("history, operation=MERGE, page 1", f"{h}?operation=MERGE"),
        ("history, operation=MERGE, page 500", f"{h}?operation=MERGE&page=500"),
        ("history, user (80% of commits)", f"{h}?user=etl-service"),
        ("history, user (2% of commits)", f"{h}?user=dave%40example.org"),
        ("history, user (2%), page 20 by number", f"{h}?user=dave%40example.org&page=20"),
        ("history, user (2%), page 20 by its link",
         f"{h}?user=dave%40example.org&page=20&before={before}"),
        ("history, job (5% of commits)", f"{h}?job=job-7"),
        ("history, engine=spark", f"{h}?engine=spark"),
        ("history, q=metadata text (5% of commits)", f"{h}?q=ticket"),
        ("history, one day (since/until)", f"{h}?since={since}&until={since + day}"),
        ("history, user + operation, page 3", f"{h}?user=alice%40example.org&operation=DELETE&page=3"),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--findings", type=int, default=5_000)
    default_db = f"sqlite:///{ROOT / 'var' / 'bench-history.sqlite3'}"
    parser.add_argument("--database-url", default=default_db)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--match", default="", help="only pages whose label contains this")
    args = parser.parse_args()
    (ROOT / "var").mkdir(exist_ok=True)
    ensure_database(args.database_url)
    bench_api.TABLE_URI = TABLE_URI  # bench_api's reader is a viewer of this table's project
    bench_api.setup_django(args.database_url)
    table_id = build(args.commits, args.findings, args.rebuild)
    session = f"Cookie: {bench_api.session_cookie_for_bench_user()}"
    from django.db import connection

    from audit.models import Commit

    rare = Commit.objects.filter(table_id=table_id, user_name="dave@example.org")
    before = rare.order_by("-version").values_list("version", flat=True)[19 * 50 - 1]

    vendor = connection.vendor
    connection.close()
    args.port = free_port()
    measured = [(label, url) for label, url in pages(args.port, table_id, args.commits, before)]
    measured = [(label, url) for label, url in measured if args.match in label]
    use_wrk = shutil.which("wrk") is not None
    print(f"\n--- {bench_api.MODES['off']}; load average before: {os.getloadavg()[0]:.1f}")
    log_path = ROOT / "var" / "bench-history-gunicorn.log"
    server = start_gunicorn(args.database_url, args.port, "", log_path, "off")
    try:
        results = bench_api.measure(server, measured, session, args, use_wrk, "off")
    finally:
        stop(server)
    client = "wrk" if use_wrk else "python threads"
    worst = max((st["p95"] for _, _, _, st in results), default=0.0)
    under = sum(1 for _, _, _, st in results if st["p95"] < 50)
    print(
        f"\n{vendor}, {args.commits:,} commits, caches off, {client} {args.connections} "
        f"connections x {args.seconds} s per page, {os.cpu_count()} CPUs: {under} of "
        f"{len(results)} pages under 50 ms p95, worst {worst:.1f} ms"
    )
    print(f"load average after the run: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
