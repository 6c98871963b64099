"""Server time of the dashboard's table page and the timeline data for a 1,000,000-commit table.

    .venv/bin/python bench/bench_pages.py [--commits 1000000] [--database-url postgres://...]

Without --database-url a fresh SQLite file under bench/out/ is used (created and migrated). With
a PostgreSQL URL the database must exist and be disposable: the script migrates it and adds a
table "bench-<n>" with its rows. Commits are bulk-inserted straight into the Commit table (no
Delta log is read by these pages: the timeline and the page header come from the database),
about 1/7 of them concurrent with up to 8 others, plus ~1,000 findings; then the timeline's
rollups are rebuilt from those rows (audit.ingest.rebuild_rollups, as after a bulk load).

Each request runs in-process through Django's test client (the full middleware stack, session
auth, template rendering, JSON encoding), so the times are server times without network. Every
number is the median of `--repeat` runs; "cold" clears Django's cache first (the timeline is
cached per window), "warm" does not. Aim: < 300 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = ["WRITE", "WRITE", "WRITE", "WRITE", "MERGE", "DELETE", "UPDATE", "OPTIMIZE"]
BASE_TS = 1_700_000_000_000


def setup_django(database_url: str | None, n: int) -> None:
    if database_url is None:
        out = ROOT / "bench" / "out"
        out.mkdir(parents=True, exist_ok=True)
        db = out / f"pages-{n}.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        database_url = f"sqlite:///{db}"
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def insert_commits(table, n: int) -> float:
    """Bulk-insert n commits with raw executemany (all columns, defaults filled once)."""
    from django.db import connection, transaction

    from audit.models import Commit

    fields = [f for f in Commit._meta.concrete_fields if not f.primary_key]
    columns = [f.column for f in fields]
    defaults = {}
    for f in fields:
        value = f.get_default()
        defaults[f.attname] = f.get_db_prep_save(value, connection)
    varying = ["table_id", "version", "timestamp", "operation", "read_version",
               "read_version_fact", "blind_append", "concurrent_count", "concurrent_versions",
               "committed_at"]  # fmt: skip
    index = {name: i for i, name in enumerate(f.attname for f in fields)}
    template = [defaults[f.attname] for f in fields]
    json_field = next(f for f in fields if f.attname == "concurrent_versions")
    placeholders = ", ".join(["%s"] * len(columns))
    sql = (
        f"INSERT INTO {Commit._meta.db_table} ({', '.join(connection.ops.quote_name(c) for c in columns)}) "
        f"VALUES ({placeholders})"
    )
    from datetime import UTC, datetime

    started = time.perf_counter()
    batch = 20_000
    with transaction.atomic(), connection.cursor() as cursor:
        for lo in range(0, n, batch):
            rows = []
            for v in range(lo, min(lo + batch, n)):
                concurrent = 1 + v % 8 if v % 7 == 0 and v > 8 else 0
                read_version = v - 1 - concurrent if v > 0 else None
                op = OPS[v % len(OPS)]
                row = list(template)
                ts = BASE_TS + v * 1500
                values = {
                    "table_id": table.id,
                    "version": v,
                    "timestamp": ts,
                    "operation": op,
                    "read_version": read_version,
                    "read_version_fact": "recorded",
                    "blind_append": op == "WRITE",
                    "concurrent_count": concurrent,
                    "concurrent_versions": json_field.get_db_prep_save(
                        list(range(v - concurrent, v)), connection
                    ),
                    "committed_at": Commit._meta.get_field("committed_at").get_db_prep_save(
                        datetime.fromtimestamp(ts / 1000, tz=UTC), connection
                    ),
                }
                for name in varying:
                    row[index[name]] = values[name]
                rows.append(row)
            cursor.executemany(sql, rows)
    return time.perf_counter() - started


def insert_findings(table, n: int, count: int = 1000) -> None:
    from django.utils import timezone

    from audit.models import Finding

    now = timezone.now()
    step = max(n // count, 1)
    Finding.objects.bulk_create(
        [
            Finding(
                table=table,
                kind="write_serializable_reorder" if i % 3 else "never_existed_snapshot",
                severity="critical" if i % 3 == 0 else "warning",
                version=v,
                related_versions=[v - 1],
                confirmed=i % 3 == 0,
                summary=f"bench finding at v{v}",
                key=f"bench:{v}:{v - 1}",
                last_seen=now,
            )
            for i, v in enumerate(range(step * 7, n, step * 7)[:count])
        ],
        batch_size=1000,
    )


def timed(client, url: str, repeat: int, *, cold: bool) -> tuple[float, int, int]:
    from django.core.cache import cache

    times = []
    size = status = 0
    for _ in range(repeat):
        if cold:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url)
        body = response.content
        times.append((time.perf_counter() - started) * 1000)
        size, status = len(body), response.status_code
    return statistics.median(times), size, status


def _filled_table(n: int):
    """A Table with `n` commits, ~1,000 findings and the rollups a bulk load rebuilds."""
    from django.db import connection

    from audit.ingest.rollup_store import rebuild_rollups
    from audit.models import Table

    table = Table.objects.create(
        uri=f"/bench/pages-{n}-{int(time.time())}",
        name=f"bench-{n}",
        status="ok",
        first_available_version=0,
        last_seen_version=n - 1,
        latest_version_in_log=n - 1,
    )
    seconds = insert_commits(table, n)
    insert_findings(table, n)
    # The ingest maintains the timeline's rollups as it stores commits; a bulk insert rebuilds them.
    started = time.perf_counter()
    rollups = rebuild_rollups(table.id)
    rollup_seconds = time.perf_counter() - started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"{connection.vendor}: inserted {n:,} commits in {seconds:.1f} s")
    print(f"rebuilt {rollups:,} rollups in {rollup_seconds:.1f} s")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    n = args.commits

    setup_django(args.database_url, n)
    from django.contrib.auth import get_user_model
    from django.test import Client

    table = _filled_table(n)

    user = get_user_model().objects.create_user(f"bench-{time.time_ns()}", password="x")
    client = Client()
    client.force_login(user)
    t = table.id
    latest = n - 1
    cases = [
        ("table page", f"/tables/{t}/"),
        ("overview", "/"),
        ("commit page", f"/tables/{t}/commits/{latest - 7}/"),
        ("findings list", f"/findings/?table={t}"),
        ("timeline: latest 500 (first load)", f"/api/tables/{t}/timeline/?from_version={latest - 499}&to_version={latest}&max_points=2000"),
        ("timeline: 2,000 rows mid-history", f"/api/tables/{t}/timeline/?from_version=400000&to_version=401999&max_points=2000"),
        ("timeline: 100,000 -> buckets", f"/api/tables/{t}/timeline/?from_version=500000&to_version=599999&max_points=2000"),
        ("timeline: whole history -> buckets", f"/api/tables/{t}/timeline/?max_points=2000"),
        ("table status (live refresh)", f"/tables/{t}/status/"),
    ]  # fmt: skip
    print(f"{'request':40} {'cold ms':>9} {'warm ms':>9} {'bytes':>9}  status")
    worst = 0.0
    for label, url in cases:
        cold, size, status = timed(client, url, args.repeat, cold=True)
        warm, _, _ = timed(client, url, args.repeat, cold=False)
        worst = max(worst, cold)
        print(f"{label:40} {cold:9.1f} {warm:9.1f} {size:9,}  {status}")
    print(f"slowest cold request: {worst:.1f} ms (aim < 300 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
