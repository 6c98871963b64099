"""The tables list reads no finding: each table's counts are one row of FindingCounts, found
by its key, whatever the statistics say (PostgreSQL's planner).

History: the list counted each table's open findings by severity with six correlated COUNTs.
On a lake where one table holds every finding (a first table backfilled, the others clean),
ANALYZE records one distinct `table_id`, the planner priced `table_id = <the outer table>` as
matching every finding, and counted through the (status, severity) index: ~250-320 ms of
PostgreSQL CPU per list of 21 tables over 5,000 findings before a VACUUM. Migration 0014 fixed
the plan (an `n_distinct` override); the counts still cost ~7.6 ms of PostgreSQL CPU per list,
most of a request under a writer. Migration 0017 stores them (tests/app/test_finding_counts.py).
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.utils import timezone

from audit.models import Finding, Table
from audit.reads.declared import list_sql, lists
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
def test_each_count_is_one_stored_row_and_no_finding_is_read(shape):
    _skewed_lake()

    compiled, positions = list_sql.DefaultTablesPage._compile(
        lists.TABLE_ROW_VALUES, None, 100, lists.narrowing(*shape)
    )
    params = list(_substitute(compiled.params, positions, ()))
    plan = _plan(compiled.sql, params)
    assert not re.search(r" on audit_finding( |$)", plan), plan
    lookups = [line for line in plan.splitlines() if " on audit_findingcounts" in line]
    assert len(lookups) >= 6 and all("audit_findingcounts_pkey" in line for line in lookups), plan
    # And the numbers are the findings': 3,000 on the first table, 600 resolved.
    rows = compiled.rows(compiled.sql, params)
    first = next(row for row in rows if row["name"] == "t00")
    assert sum(first[f"open_{s}"] for s in ("info", "warning", "critical")) == 2400
    assert all(row[f"open_{s}"] == 0 for row in rows if row is not first for s in ("info",))
