"""The tables list's per-table finding counts read the (table, status, severity) index on
PostgreSQL, whatever the statistics say.

A lake where one table holds every finding is common (a first table backfilled, the others
clean). ANALYZE then records one distinct `table_id`, so the planner priced
`table_id = <the outer table>` as matching every finding and counted each table's findings
through the (status, severity) index, re-reading every open finding of that severity and
filtering by table: 6 counts x every listed table. Before a VACUUM (a live lake's new findings,
or a server running without autovacuum) no index-only scan was cheaper, and a list of 21 tables
over 5,000 findings took ~250-320 ms of PostgreSQL CPU (37,643 buffers) per request instead of
~13 ms (1,305 buffers): with a writer storing commits to 20 tables every second, the list fell
to 13 requests a second (bench/bench_api.py --writer). Migration 0014 states that findings are
spread over many tables (`n_distinct` of `audit_finding.table_id`).
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.utils import timezone

from audit.api import list_sql
from audit.models import Finding, Table
from audit.reads.prepared import _substitute

pytestmark = pytest.mark.django_db


def _skewed_lake() -> None:
    """One table with 3,000 findings (open and resolved, every severity), 20 with none."""
    now = timezone.now()
    tables = [
        Table.objects.create(uri=f"/lake/{i:02d}", name=f"t{i:02d}", status="ok") for i in range(21)
    ]
    severities = ["info", "warning", "critical"]
    Finding.objects.bulk_create(
        Finding(
            table=tables[0],
            kind="k",
            severity=severities[i % 3],
            version=i,
            summary="s",
            key=f"k{i}",
            last_seen=now,
            status="resolved" if i % 5 == 0 else "open",
            acknowledged_at=now if i % 7 == 0 else None,
        )  # fmt: skip
        for i in range(3000)
    )


def _plan(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_finding")  # what autovacuum's analyze records
        cursor.execute("ANALYZE audit_table")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner")
@pytest.mark.parametrize("shape", [("", ""), ("open_findings", "ok")])
def test_each_count_reads_the_tables_own_index_entries(shape):
    _skewed_lake()
    from audit.api.views import _narrowing

    compiled, positions = list_sql.DefaultTablesPage._compile(None, 100, _narrowing(*shape))
    plan = _plan(compiled.sql, list(_substitute(compiled.params, positions, ())))
    scans = [line for line in plan.splitlines() if re.search(r" on audit_finding( |$)", line)]
    assert len(scans) >= 6, plan
    # Every count is a scan of the table's own entries, none a scan of every open finding.
    assert all("using audit_finding_status on audit_finding" in line for line in scans), plan
    assert "audit_finding_open" not in plan, plan
