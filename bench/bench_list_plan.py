"""PostgreSQL CPU of the tables list's SQL, with and without migration 0014's statement that
findings are spread over many tables (`n_distinct` of audit_finding.table_id), in one run.

    .venv/bin/python bench/bench_list_plan.py --database-url postgres://postgres@127.0.0.1:5432/bench_api_1m
        [--repeat 200] [--keep-visibility]

On a database bench/bench_api.py built (reuse it: one table of 1M commits and ~5,000
findings; with `--writer` run once, 20 more tables without findings). The peer is the same
SQL on the same rows with the column option reset and the statistics re-analysed, so the
planner sees what it saw before the migration. Unless --keep-visibility, every finding row is
rewritten first (`UPDATE ... SET summary = summary`): the visibility map is then empty, as on
a live lake before autovacuum's next pass (or a server without autovacuum). Prints each plan's
index, buffers and the PostgreSQL backend's CPU per query (from /proc, so the machine's load
barely moves it), their ratio and the load. Leaves the option as the migration sets it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def backend_cpu(pid: int) -> float:
    """User + system CPU seconds of one PostgreSQL backend (same machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(cursor, sql: str, params: list, repeat: int) -> tuple[str, float, float]:
    """(the counts' index, buffers hit per query, backend CPU ms per query)."""
    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
    plan = [row[0] for row in cursor.fetchall()]
    buffers = int(plan[1].split("hit=")[1].split()[0]) if "hit=" in plan[1] else -1
    index = (
        "audit_finding_status"
        if "Scan using audit_finding_status" in "\n".join(plan)
        else ("audit_finding_open" if "audit_finding_open" in "\n".join(plan) else "other")
    )
    cursor.execute("SELECT pg_backend_pid()")
    pid = cursor.fetchone()[0]
    before = backend_cpu(pid)
    for _ in range(repeat):
        cursor.execute(sql, params)
        cursor.fetchall()
    return index, buffers, (backend_cpu(pid) - before) * 1000 / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--keep-visibility", action="store_true")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection

    from audit.reads.declared import list_sql, lists
    from audit.reads.prepared import _substitute

    migration = __import__("audit.migrations.0014_finding_table_distinct", fromlist=["x"])
    option = f"SET (n_distinct = {migration.DISTINCT_TABLES})"
    shapes = {"tables list": ("", ""), "tables list, by open findings": ("open_findings", "ok")}
    results: dict[tuple[str, str], tuple] = {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT table_id) FROM audit_finding")
        findings, tables = cursor.fetchone()
        if not args.keep_visibility:
            cursor.execute("UPDATE audit_finding SET summary = summary")
        for peer, alter in (("before (reset)", "RESET (n_distinct)"), ("after (0014)", option)):
            cursor.execute(f"ALTER TABLE audit_finding ALTER COLUMN table_id {alter}")
            cursor.execute("ANALYZE audit_finding")
            for label, shape in shapes.items():
                compiled, positions = list_sql.DefaultTablesPage._compile(
                    lists.TABLE_ROW_VALUES, None, 100, lists.narrowing(*shape)
                )
                params = list(_substitute(compiled.params, positions, ()))
                results[peer, label] = measure(cursor, compiled.sql, params, args.repeat)
        cursor.execute(
            "SELECT relpages, relallvisible FROM pg_class WHERE relname = 'audit_finding'"
        )
        pages, visible = cursor.fetchone()
    print(f"{findings:,} findings in {tables} of the listed tables; audit_finding {pages} pages, "
          f"{visible} all-visible; {args.repeat} queries each")  # fmt: skip
    for label in shapes:
        for peer in ("before (reset)", "after (0014)"):
            index, buffers, cpu = results[peer, label]
            print(f"{label:32s} {peer:15s} counts by {index:21s} {buffers:7,} buffers  "
                  f"{cpu:7.2f} ms PostgreSQL CPU/query")  # fmt: skip
        ratio = results["after (0014)", label][2] / max(results["before (reset)", label][2], 1e-9)
        print(f"{label:32s} after/before CPU: {ratio:.3f}")
    print(
        f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at {time.strftime('%H:%M:%S')}"
    )


if __name__ == "__main__":
    main()
