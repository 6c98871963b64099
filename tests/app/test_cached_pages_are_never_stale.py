"""Cached dashboard pages (audit/reads/cache.py): a cached page is the page a fresh
rendering gives, for every reader, and any change (a new finding, an acknowledgement, a rename)
is on the very next load. The findings are written by the real writers, which move the table's
findings generation; without that move these tests see a stale page and fail."""

from __future__ import annotations

import re
from unittest import mock

import pytest

from audit.core.vocab import Severity
from audit.ingest.findings import upsert_findings
from audit.models import Finding, Table
from audit.reads import queries
from tests.support.cached_tables import finding, orders_table
from tests.support.clients import session_client

pytestmark = pytest.mark.django_db

HOSTILE = '<script>window.__xss=1</script>"><img src=x onerror=alert(1)>&amp;'


@pytest.fixture(autouse=True)
def caches_on(settings, fresh_cache):
    settings.AUDIT_PAGE_CACHE_SECONDS = 300  # long: only a generation may end an entry


@pytest.fixture
def table() -> Table:
    return orders_table()


def pages(table: Table) -> list[str]:
    t = table.id
    return ["/", "/?sort=name", "/findings/", f"/findings/?table={t}", "/findings/?status=all",
            f"/tables/{t}/"]  # fmt: skip


def content_of(url: str) -> str:
    """The function that builds the cached content of the page at `url`."""
    if url.startswith("/tables/"):
        return "frontend.views.table._table_content"
    if url.startswith("/findings/"):
        return "frontend.views.findings._findings_content"
    return "frontend.views.overview._overview_content"


def load(client, url: str) -> str:
    """The page's HTML, its per-request CSRF token masked."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "CSRF", response.content.decode())


def link(f: Finding) -> str:
    return f'href="/findings/{f.id}/"'


@pytest.mark.parametrize("persona", ["member", "owner"])
def test_a_cached_page_is_the_uncached_page(request, table, persona, settings):
    user = request.getfixturevalue(persona)
    client = session_client(user)
    for url in pages(table):
        filled = load(client, url)
        with mock.patch(content_of(url), side_effect=AssertionError):
            hit = load(client, url)  # from the cache: the content is not built again
        settings.AUDIT_PAGE_CACHE_SECONDS = 0
        assert hit == filled == load(client, url), url
        settings.AUDIT_PAGE_CACHE_SECONDS = 300
        assert user.username in hit  # the reader's own part is not from the cache


def test_every_reader_sees_their_own_name_and_role_on_a_cached_page(table, owner, member):
    for url in pages(table):
        as_owner = load(session_client(owner), url)
        as_member = load(session_client(member), url)
        assert owner.username in as_owner and owner.username not in as_member
        assert ('class="role">admin' in as_owner) != ('class="role">admin' in as_member)


def test_acknowledging_and_reopening_show_at_once(table, owner, member):
    client = session_client(member)
    critical = Finding.objects.get(table=table, version=5)
    open_pages = ["/findings/", f"/findings/?table={table.id}", f"/tables/{table.id}/"]
    assert all(link(critical) in load(client, url) for url in open_pages)

    assert queries.acknowledge(critical, owner)
    assert all(link(critical) not in load(client, url) for url in open_pages)
    assert 'id="stat-critical">0<' in load(client, f"/tables/{table.id}/")
    assert 'title="critical">0<' in load(client, "/")
    everything = load(client, "/findings/?status=all")
    assert link(critical) in everything and '<span class="tag">acknowledged</span>' in everything

    queries.unacknowledge(Finding.objects.get(id=critical.id))
    assert all(link(critical) in load(client, url) for url in open_pages)
    assert 'id="stat-critical">1<' in load(client, f"/tables/{table.id}/")


def test_a_new_or_resolved_finding_shows_at_once(table, member):
    client = session_client(member)
    for url in pages(table):
        load(client, url)
    upsert_findings(table, [finding(5, Severity.CRITICAL), finding(7)], scope=(0, 9))
    new = Finding.objects.get(table=table, version=7)
    resolved = Finding.objects.get(table=table, version=3)
    for url in ["/findings/", f"/findings/?table={table.id}", f"/tables/{table.id}/"]:
        html = load(client, url)
        assert link(new) in html and link(resolved) not in html, url


def test_a_rename_shows_at_once_and_escaped(table, member):
    client = session_client(member)
    for url in pages(table):
        assert ">orders<" in load(client, url)
    Table.objects.filter(id=table.id).update(name=HOSTILE)  # no findings change: no bump
    for url in pages(table):
        html = load(client, url)
        assert ">orders<" not in html, url
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html, url
        assert "<script>window.__xss" not in html and "<img src=x" not in html, url


def test_a_cached_page_still_needs_a_login(table, member):
    for url in pages(table):
        load(session_client(member), url)  # cached now
        response = session_client(None).get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


def test_the_overview_times_move_with_the_clock_and_admins_get_the_register_form(table, owner):
    client = session_client(owner)
    assert "5\xa0minutes ago" in load(client, "/")
    with (
        mock.patch(content_of("/"), side_effect=AssertionError),
        mock.patch("audit.reads.cache.timesince", return_value="MOCKED"),
    ):
        html = load(client, "/")  # from the cache, the time since computed now
    assert "MOCKED ago" in html and "\x00" not in html
    assert 'class="register-form"' in html and html.count("CSRF") == 2  # logout, register
    response = client.post("/", {"uri": "relative/not/allowed", "name": "x"})
    assert response.status_code == 200 and '<details class="card register" open>' in (
        response.content.decode()
    )


def test_a_new_table_shows_on_the_overview_at_once(table, member):
    client = session_client(member)
    assert "/data/other" not in load(client, "/")
    Table.objects.create(uri="/data/other", name="other", status="ok")
    assert "/data/other" in load(client, "/")
