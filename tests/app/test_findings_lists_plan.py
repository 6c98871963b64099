"""The findings lists are read in their order and stop at the page: no database sorts every
finding of the list, whatever their number (the indexes of migration 0018), and the timeline's
pins are joined by the window's index, not by hashing every open finding of the table.

History: `acknowledged_at IS NULL` does not fix a column for ordering in PostgreSQL, so the
indexes that serve these lists on SQLite only found the rows there: the findings page sorted
all 3,944 open findings of the bench table (4.6 ms of the server's CPU a page), and a
20,000-version timeline hashed them all to join its 77 pins (2.5 ms). SQLite, without
statistics (nothing runs ANALYZE on a deployment's file), read all of a table's findings for the
API's newest-first list and sorted them (2.7 ms at 5,000).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit.models import Finding, Table
from audit.reads.timeline import sql as timeline_sql

pytestmark = pytest.mark.django_db
POSTGRESQL = connection.vendor == "postgresql"
only_postgresql = pytest.mark.skipif(not POSTGRESQL, reason="PostgreSQL's planner")


@pytest.fixture
def lake() -> list[Table]:
    """Two tables with 3,000 findings each: open, acknowledged and resolved, every severity."""
    now = timezone.now()
    tables = [Table.objects.create(uri=f"/lake/{i}", name=f"t{i}", status="ok") for i in (0, 1)]
    severities = ["info", "warning", "critical"]
    Finding.objects.bulk_create(
        Finding(
            table=table,
            kind="k",
            severity=severities[i % 3],
            version=i,
            summary="s",
            key=f"k{i}",
            last_seen=now - timezone.timedelta(seconds=i),
            status="resolved" if i % 5 == 0 else "open",
            acknowledged_at=now if i % 7 == 0 else None,
        )
        for table in tables
        for i in range(3000)
    )
    if POSTGRESQL:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE audit_finding")  # what autovacuum's analyze records
            cursor.execute("ANALYZE audit_table")
    return tables


def _plans_of(client: Client, url: str, order: str = '"audit_finding"."last_seen"') -> list[str]:
    seen: list[tuple[str, object]] = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        assert client.get(url).status_code == 200
    plans = []
    with connection.cursor() as cursor:
        for sql, params in seen:
            if "ORDER BY" in sql and order in sql.partition("ORDER BY")[2]:
                explain = "EXPLAIN" if POSTGRESQL else "EXPLAIN QUERY PLAN"
                cursor.execute(f"{explain} {sql}", params)
                plans.append("\n".join(str(row[-1]) for row in cursor.fetchall()))
    return plans


@pytest.mark.parametrize("one_table", [False, True])
def test_it_reads_a_findings_page_in_order_without_sorting_the_open_findings(
    lake, member, settings, one_table
):
    settings.AUDIT_PAGE_CACHE_SECONDS = 0
    client = Client()
    client.force_login(member)
    url = f"/findings/?table={lake[0].id}" if one_table else "/findings/"
    plans = _plans_of(client, url)
    assert len(plans) == 1, plans
    (plan,) = plans
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan
    if POSTGRESQL:
        expected = "audit_finding_tattn" if one_table else "audit_finding_attn"
        assert f"using {expected} on audit_finding" in plan, plan


@pytest.mark.parametrize("one_table", [False, True])
def test_the_api_reads_a_readers_findings_newest_first_without_sorting_them(
    lake, member, one_table
):
    """The member sees one table (the other is another project's), or names one. (A reader of
    several tables' findings still has them sorted on SQLite: its index gives each table's in
    order, not their merge.)"""
    from tests.support.clients import token_client
    from tests.support.projects import into

    into(lake[1], "other")
    url = f"/api/findings/?table={lake[0].id}" if one_table else "/api/findings/"
    plans = _plans_of(token_client(member), url, order='"audit_finding"."id" DESC')
    assert len(plans) == 1, plans
    (plan,) = plans
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan


@only_postgresql
def test_it_joins_a_timeline_windows_pins_by_the_window(lake):
    table = lake[0]
    params = [0, 24, table.id, "open", 1000, 1999, table.id, "open", 1000, 1999]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {timeline_sql._bucket_pins_sql()}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # The pins' side of the join reads the window only (an index range or a filtered scan,
    # as the statistics say), never every open finding of the table.
    lines = plan.splitlines()
    pins = [i for i, line in enumerate(lines) if "on audit_finding p" in line]
    assert pins, plan
    for i in pins:
        assert "version >= 1000" in lines[i + 1] and "version <= 1999" in lines[i + 1], plan
    pins = timeline_sql.bucket_pins(table.id, 1000, 1999, 0, 24)
    assert {bucket for bucket, *_ in pins} == set(range(1000 // 24, 1999 // 24 + 1))


@pytest.mark.skipif(POSTGRESQL, reason="SQLite's planner")
def test_sqlite_looks_each_pin_up_by_its_version(lake):
    """Given the window on the pins' side too, SQLite scanned the window's range once per
    bucket (360 ms for a whole-history timeline at 5,000 findings): it looks each pin up."""
    table = lake[0]
    params = [0, 24, table.id, "open", 0, 2999, table.id, "open"]
    sql = timeline_sql._bucket_pins_sql().replace("%s", "?").replace("%%", "%")
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = [str(row[-1]) for row in cursor.fetchall()]
    pins = [line for line in plan if line.startswith("SEARCH p ")]
    assert pins and all("version=?" in line for line in pins), plan
