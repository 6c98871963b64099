"""The overview's content with its counts from SQL compiled once (audit/reads/queries.py)
is byte for byte what the ORM's counts gave (tests/app/overview_reference.py): every sort,
searches, pages (one table more than a page), tables in error, hostile names, findings
acknowledged, resolved and open, no tables at all; for administrators and readers; rows
remembered per process and every change to what they show, in any time zone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import RequestFactory
from django.utils import timezone

from audit.health.models import TableHealth
from audit.ingest.health_store import health_fields
from audit.models import Finding, Table
from frontend.views import overview
from frontend.views.overview import TABLE_SORTS, _overview_content
from tests.app.overview_reference import overview_content as reference
from tests.app.test_findings_rows import HOSTILE, findings_of
from tests.app.test_table_rows_equal_drf import HEALTH

pytestmark = pytest.mark.django_db

STAFF = SimpleNamespace(is_authenticated=True, is_staff=True, is_superuser=False, pk=0)


def same(query: str, admin: bool = False) -> str:
    request = RequestFactory().get(f"/?{query}")
    request.user = STAFF  # every project's tables, as before projects
    html = _overview_content(request, admin)
    assert html == reference(request, admin), query
    return html


@pytest.fixture
def tables() -> list[Table]:
    hostile = Table.objects.create(uri="/data/h", name=HOSTILE, status="ok", last_seen_version=9)
    broken = Table.objects.create(uri=f"/data/{HOSTILE}", status="error", last_error=HOSTILE)
    Table.objects.bulk_create(
        Table(uri=f"/data/t{i:03}", name=f"t{i:03}", status="ok" if i % 7 else "error")
        for i in range(100)
    )
    findings_of(hostile, 30)
    findings_of(broken, 12)
    Finding.objects.filter(table=hostile, version__in=(2, 3)).update(status="resolved")
    Finding.objects.filter(table=broken, version=5).update(acknowledged_at="2026-01-01T00:00Z")
    return [hostile, broken]


@pytest.mark.parametrize("sort", [*TABLE_SORTS, "bogus"])
@pytest.mark.parametrize("page", ["", "2", "3", "x"])
def test_every_sort_and_page_renders_as_before(tables, sort, page):
    html = same(f"sort={sort}&page={page}", admin=page == "2")
    assert "<script>" not in html and "<tr" in html


@pytest.mark.parametrize("q", ["t00", "script", "nothing", "%3Cscript%3E", "  t01  "])
def test_searches_render_as_before(tables, q):
    same(f"q={q}")
    same(f"q={q}&page=2&sort=name", admin=True)


def test_no_tables(db):
    same("")
    same("page=2", admin=True)


@pytest.mark.parametrize("n", [100, 101])
def test_a_full_page_and_one_more(db, n):
    Table.objects.bulk_create(Table(uri=f"/data/t{i:03}", status="ok") for i in range(n))
    for query in ("", "page=2", "sort=name&page=last"):
        same(query)


def test_it_renders_a_remembered_row_again_when_its_table_changes(tables):
    # Rows are remembered per process under what they show (cache.row_fragments): every
    # change a row shows must give the fresh rendering, never the remembered one.
    hostile = tables[0]
    before = same("sort=name")
    changes = [
        {"name": "renamed"},
        {"status": "error", "last_error": "denied"},
        {"last_seen_version": 12, "latest_version_in_log": 15, "risk": 61.0},
        {"last_commit_at": "2026-03-01T10:00Z", "last_tail_at": "2026-03-01T10:05Z"},
        {"status": "backfilling", "backfill_target_version": 99, "backfill_done": 50},
    ]
    seen = {before}
    for change in changes:
        Table.objects.filter(pk=hostile.pk).update(**change)
        seen.add(same("sort=name"))
    TableHealth.objects.create(table=hostile, **health_fields(HEALTH))
    seen.add(same("sort=name"))
    Finding.objects.filter(table=hostile, status="open").update(severity="info")
    seen.add(same("sort=name"))
    assert len(seen) == len(changes) + 3  # each change showed


def test_it_renders_rows_in_the_readers_time_zone(tables):
    Table.objects.filter(pk=tables[0].pk).update(last_commit_at="2026-03-01T23:30Z")
    utc = same("sort=name")
    with timezone.override("Asia/Tokyo"):
        tokyo = same("sort=name")
    assert "2026-03-01 23:30:00" in utc and "2026-03-02 08:30:00" in tokyo


@pytest.mark.parametrize("n_projects", [1, 2])
@pytest.mark.parametrize("sort", ["findings", "risk", "small_files"])
def test_it_gives_a_member_the_tables_of_the_orm_query(tables, member, n_projects, sort):
    # The unfiltered page comes from SQL compiled once per (sort, page, number of projects)
    # (pages._prepared_page): the same instances, annotations and health as the ORM's
    # query for a member's projects, none of another project's tables.
    from audit.reads import pages
    from audit.trust.access import projects as visible_project_ids
    from tests.support.projects import into, join

    into(tables[0], "other")
    into(Table.objects.get(name="t050"), "third")
    TableHealth.objects.create(table=tables[1], **health_fields(HEALTH))
    if n_projects == 2:
        join(member, "third")
    projects = visible_project_ids(member)
    assert len(projects) == n_projects
    for window in (slice(0, 100), slice(100, 200)):
        fast = pages.CountedTables(projects, sort, 0)[window]
        orm = list(pages.overview_tables(sorted(projects), sort)[window])
        assert [t.pk for t in fast] == [t.pk for t in orm] and tables[0].pk not in {
            t.pk for t in fast
        }
        for a, b in zip(fast, orm, strict=True):
            assert a.__dict__.keys() == b.__dict__.keys()
            assert {k: v for k, v in a.__dict__.items() if k != "_state"} == {
                k: v for k, v in b.__dict__.items() if k != "_state"
            }
            assert _health(a) == _health(b)
    request = RequestFactory().get(f"/?sort={sort}")
    request.user = member
    html = _overview_content(request, False)
    assert "t050" in html if n_projects == 2 else "t050" not in html


def _health(table: Table) -> dict | None:
    health = overview._has_health(table) and table.health
    return health and {k: v for k, v in health.__dict__.items() if k != "_state"}
