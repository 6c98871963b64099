"""Database bytes per stored commit on PostgreSQL: the sizing input of docs/performance.md.

    .venv/bin/python bench/bench_pg_size.py [--commits 20000]
        [--database-url postgres://postgres@127.0.0.1:5432/bench]

A Spark-style log (bench/gen_log.py: concurrent-looking writers, findings) is ingested by the
tail into a throwaway database; then pg_total_relation_size (rows, indexes, TOAST) of each of
the app's tables, divided by the commits stored, after VACUUM ANALYZE.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import s3_fleet  # noqa: E402


def _sizes() -> list[tuple[str, int]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND relname LIKE 'audit_%' "
            "ORDER BY 2 DESC"
        )
        return list(cursor.fetchall())


def _step_cpu(path: Path, table_id: int, first: int, steps: int = 50) -> None:
    """CPU of a tail step that stores one new commit (the sizing's per-commit cost): append a
    commit, tail it in this process, `steps` times; the whole-table refresh is timed apart."""
    import statistics

    from audit.tail.step import tail_once

    cpu = []
    for version in range(first, first + steps):
        body = b'{"commitInfo":{"timestamp":%d,"operation":"WRITE","readVersion":%d}}\n'
        stamp = int(time.time() * 1000)
        (path / "_delta_log" / f"{version:020d}.json").write_bytes(body % (stamp, version - 1))
        started = time.process_time()
        result = tail_once(table_id)
        cpu.append(time.process_time() - started)
        assert result.stored == 1, result.line()
    print(
        f"a tail step storing one new commit: {statistics.median(cpu) * 1000:.1f} ms CPU "
        f"(median of {steps}; mean {statistics.mean(cpu) * 1000:.1f} ms, with whole-table "
        f"refreshes when due)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_size")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pg-size-"))
    url, admin = s3_fleet.throwaway_database(args.database_url, work)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": url,
            "AUDIT_ALLOWED_ROOTS": str(work),
            "AUDIT_CHECK_DATA": "false",  # gen_log writes only the log
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections

    from audit.ingest.tables import register_table
    from audit.models import Commit, Finding
    from audit.tail.step import tail_once

    try:
        call_command("migrate", verbosity=0)
        path = work / "t"
        gen = [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(path)]
        subprocess.run([*gen, "--commits", str(args.commits)], check=True, capture_output=True)
        table, _ = register_table(str(path))
        started = time.perf_counter()
        while tail_once(table.id).more:
            pass
        print(f"{args.commits:,} commits ingested in {time.perf_counter() - started:.0f}s")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        commits, findings = Commit.objects.count(), Finding.objects.count()
        sizes = _sizes()
        total = sum(size for _name, size in sizes)
        print(f"{commits:,} commit rows, {findings:,} findings; load {os.getloadavg()[0]:.2f}")
        for name, size in sizes[:6]:
            print(f"  {name:<28} {size / 2**20:8.1f} MiB  {size / commits:7.0f} bytes per commit")
        print(f"all app tables: {total / 2**20:.1f} MiB, {total / commits:.0f} bytes per commit")
        _step_cpu(path, table.id, args.commits)
    finally:
        connections.close_all()
        s3_fleet.drop_database(url, admin)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
