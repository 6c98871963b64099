"""Cached findings lists and tables list: with the caches on, every change to a
table's findings is in the very next list request, and a cached body is the uncached one.

Findings are written by the real writers (ingest's upsert, health rules, change findings, the
orphan scan's kinds, the API's acknowledge / re-open), which move the table's generation.
Every freshness test reads once with a session (the DRF views) and once with a token (cached
hits then come from the fast path, audit/api/fast_path.py)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.utils import timezone

from audit.alerting.health_findings import evaluate_health_rules, raise_change_findings
from audit.core import model
from audit.core.vocab import SCAN_KINDS, FindingKind, Severity
from audit.ingest.findings import upsert_findings
from audit.ingest.rollup_store import rebuild_rollups
from audit.models import Commit, Finding, Table
from tests.support.alerting import rule_for, webhook
from tests.support.cached_tables import REORDER, finding, orders_table
from tests.support.clients import session_client, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def caches_on(settings, fresh_cache):
    settings.AUDIT_API_LIST_CACHE_SECONDS = 300  # long: only a generation may end an entry


@pytest.fixture(params=["session", "token"])
def reader(request):
    """How the lists are read: a session (DRF) or a token (hits answered by the fast path)."""
    return session_client if request.param == "session" else token_client


@pytest.fixture
def table() -> Table:
    table = orders_table()
    Commit.objects.create(table=table, version=3, operation="WRITE")  # a detail to read
    return table


def lists(client, table: Table) -> dict[str, dict]:
    """Every cached list a change could show in, by URL."""
    urls = [
        "/api/findings/",
        f"/api/findings/?table={table.id}",
        f"/api/findings/?table={table.id}&status=open&acknowledged=false",
        "/api/tables/",
    ]
    bodies = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:200])
        bodies[url] = response.json()
    return bodies


def rows(bodies: dict[str, dict], url: str) -> dict[int, dict]:
    return {f["id"]: f for f in bodies[url]["results"]}


def open_critical(bodies: dict[str, dict]) -> int:
    return bodies["/api/tables/"]["results"][0]["attention_findings"]["critical"]


def test_acknowledging_and_reopening_show_at_once(reader, table, owner, member):
    client = reader(member)
    before = lists(client, table)
    critical = Finding.objects.get(table=table, version=5)
    assert open_critical(before) == 1

    admin = session_client(owner)
    assert admin.post(f"/api/findings/{critical.id}/acknowledge/").status_code == 200
    after = lists(client, table)
    for url in [u for u in after if u.startswith("/api/findings/")]:
        if "acknowledged=false" in url:
            assert critical.id not in rows(after, url)
        else:
            assert rows(after, url)[critical.id]["acknowledged_by"] == "alice"
    assert open_critical(after) == 0

    assert admin.post(f"/api/findings/{critical.id}/reopen/").status_code == 200
    again = lists(client, table)
    assert rows(again, f"/api/findings/?table={table.id}")[critical.id]["acknowledged"] is False
    assert critical.id in rows(
        again, f"/api/findings/?table={table.id}&status=open&acknowledged=false"
    )
    assert open_critical(again) == 1


def test_a_reaudit_that_resolves_or_raises_shows_at_once(reader, table, member):
    client = reader(member)
    lists(client, table)
    detail = client.get(f"/api/tables/{table.id}/commits/3/").json()
    assert [(f["version"], f["status"]) for f in detail["findings"]] == [(3, "open")]
    # The re-audit of v0..9 no longer finds v3's finding and finds a new one at v7.
    upsert_findings(table, [finding(5, Severity.CRITICAL), finding(7)], scope=(0, 9))
    after = lists(client, table)
    by_version = {f["version"]: f for f in rows(after, "/api/findings/").values()}
    assert by_version[3]["status"] == "resolved" and by_version[7]["status"] == "open"
    open_ = rows(after, f"/api/findings/?table={table.id}&status=open&acknowledged=false")
    assert {f["version"] for f in open_.values()} == {5, 7}
    assert after["/api/tables/"]["results"][0]["open_findings"]["warning"] == 1
    detail = client.get(f"/api/tables/{table.id}/commits/3/").json()
    assert [(f["version"], f["status"]) for f in detail["findings"]] == [(3, "resolved")]


def test_health_change_and_orphan_findings_show_at_once(reader, table, member):
    client = reader(member)
    seen = lambda: {f["kind"] for f in rows(lists(client, table), "/api/findings/").values()}  # noqa: E731
    assert seen() == {REORDER}

    raise_change_findings(table, [{"kind": "schema", "version": 8, "summary": "+ column"}])
    assert "schema_change" in seen()

    rule = rule_for(webhook("http://127.0.0.1:9/"), name="vac", health_metric="vacuumable_bytes",
                    threshold=1, min_severity="warning")  # fmt: skip
    evaluate_health_rules(table, {"vacuumable_bytes": 5, "version": 9})
    assert "health_vacuumable_bytes" in seen()
    evaluate_health_rules(table, {"vacuumable_bytes": 0, "version": 9})
    health = Finding.objects.get(kind="health_vacuumable_bytes")
    assert rows(lists(client, table), "/api/findings/")[health.id]["status"] == "resolved"
    assert rule.id

    orphan = model.Finding(FindingKind.ORPHAN_FILES, Severity.WARNING, 9, [], True, "orphans", "")
    upsert_findings(table, [orphan], scope=None, kinds=SCAN_KINDS)
    assert FindingKind.ORPHAN_FILES in seen()


def test_renaming_an_acknowledger_shows_at_once(reader, table, owner, member):
    client = reader(member)
    critical = Finding.objects.get(table=table, version=5)
    critical.acknowledge(owner)
    assert rows(lists(client, table), "/api/findings/")[critical.id]["acknowledged_by"] == "alice"
    owner.username = "alicia"
    owner.save()
    assert rows(lists(client, table), "/api/findings/")[critical.id]["acknowledged_by"] == "alicia"


def test_a_cached_body_is_the_uncached_body(reader, table, member, settings):
    Table.objects.create(uri="/data/empty", name="empty")  # no commit yet: lag seconds null
    client = reader(member)
    urls = [*lists(client, table), "/api/findings/?min_severity=critical&table=abc"]
    urls += [f"/api/tables/{table.id}/commits/3/", f"/api/tables/{table.id}/commits/4/"]
    now = timezone.now()
    with mock.patch("django.utils.timezone.now", return_value=now):
        cached = [client.get(url).content for url in urls]  # the second read of each: a hit
        settings.AUDIT_API_LIST_CACHE_SECONDS = 0
        fresh = [client.get(url).content for url in urls]
    assert cached == fresh
    assert b'seconds_since_last_commit":300.' in cached[3]  # filled in, as of the request


def test_outsiders_and_anonymous_still_get_what_they_got(table, outsider):
    assert session_client(None).get("/api/findings/").status_code in (401, 403)
    body = session_client(outsider).get("/api/findings/").json()  # every user reads every list
    assert len(body["results"]) == 2


def test_edits_and_deletions_in_the_admin_show_at_once(reader, table, owner, member, client):
    api = reader(member)
    critical = Finding.objects.get(table=table, version=5)
    assert critical.id in rows(lists(api, table), "/api/findings/")
    client.force_login(owner)

    change = client.get(f"/admin/audit/finding/{critical.id}/change/")
    form = change.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k in form.fields}
    data.update(summary="edited by hand", details="{}", related_versions="[4]", witness="null")
    response = client.post(f"/admin/audit/finding/{critical.id}/change/", data)
    assert response.status_code == 302, response.content[:500]
    assert rows(lists(api, table), "/api/findings/")[critical.id]["summary"] == "edited by hand"

    response = client.post(f"/admin/audit/finding/{critical.id}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert critical.id not in rows(lists(api, table), "/api/findings/")
    other = Finding.objects.get(table=table, version=3)
    response = client.post(
        "/admin/audit/finding/",
        {"action": "delete_selected", "_selected_action": [other.id], "post": "yes"},
    )
    assert response.status_code == 302
    assert rows(lists(api, table), "/api/findings/") == {}


def test_a_timeline_shows_a_resolved_finding_at_once(reader, table, member, settings):
    settings.AUDIT_API_TIMELINE_CACHE_SECONDS = 300
    for version in (4, 5):
        Commit.objects.create(table=table, version=version, operation="WRITE")
    rebuild_rollups(table.id)
    client = reader(member)
    whole = f"/api/tables/{table.id}/timeline/"
    window = f"{whole}?from_version=0&to_version=9"  # a window: the fast path answers its hits
    for url in (whole, window, window):
        assert {f["version"] for f in client.get(url).json()["findings"]} == {3, 5}
    upsert_findings(table, [finding(5, Severity.CRITICAL)], scope=(0, 9))  # v3's is resolved
    for url in (whole, window):
        assert {f["version"] for f in client.get(url).json()["findings"]} == {5}
