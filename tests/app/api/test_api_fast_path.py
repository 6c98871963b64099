"""The fast path of cached hot reads (audit/api/fast_path.py): a hit answers exactly what the DRF
view answers (status, body, headers) for every persona, it never answers a request DRF would
refuse or throttle, and whatever it does not know goes to DRF unchanged."""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.views import APIView

from audit.api.authentication import forget_tokens
from audit.core import model
from audit.core.vocab import FindingKind, Severity
from audit.health.models import TableChange
from audit.ingest.findings import upsert_findings
from audit.models import Finding
from tests.support.clients import session_client, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def caches_on(settings):
    settings.AUDIT_API_LIST_CACHE_SECONDS = 300
    settings.AUDIT_API_TIMELINE_CACHE_SECONDS = 300
    with mock.patch("django.utils.timezone.now", return_value=timezone.now()):
        yield  # one clock: the tables list's lag seconds are the same in every answer


def hot_urls(table_id: int) -> list[str]:
    t = f"/api/tables/{table_id}"
    return [
        "/api/tables/",
        "/api/tables/?ordering=open_findings",
        f"{t}/commits/",
        f"{t}/commits/?order=asc&min_version=1",
        f"{t}/commits/?operation=DELETE",
        f"{t}/commits/3/",
        f"{t}/timeline/?from_version=0&to_version=4",
        f"{t}/timeline/?from_version=1&to_version=3&max_points=2",
        f"{t}/health/",
        f"{t}/health/history/",
        f"{t}/health/history/?max_points=10",
        f"{t}/changes/",
        "/api/findings/",
        f"/api/findings/?table={table_id}&status=open&min_severity=warning",
        "/api/findings/?severity=critical&acknowledged=false",
    ]


@contextmanager
def drf_calls():
    """Counts the requests that reached a DRF view."""
    calls: list[str] = []
    real = APIView.dispatch

    def spy(self, request, *args, **kwargs):
        calls.append(request.path)
        return real(self, request, *args, **kwargs)

    with mock.patch.object(APIView, "dispatch", spy):
        yield calls


def answer(response) -> tuple[int, bytes, dict[str, str]]:
    return response.status_code, response.content, dict(response.headers)


@pytest.mark.parametrize("persona", ["owner", "member", "outsider", "admin"])
def test_a_hit_is_byte_for_byte_what_the_view_answers(reorder_table, persona, request, settings):
    client = token_client(request.getfixturevalue(persona))
    hits = {}
    for url in hot_urls(reorder_table.id):
        with drf_calls() as calls:
            first = answer(client.get(url))  # a miss: the DRF view computes and caches it
            hits[url] = answer(client.get(url))
        assert calls == [url.split("?")[0]], (url, calls)  # the hit did not reach DRF
        assert first[0] == 200, (url, first[1][:200])
        assert hits[url] == first, url
    settings.AUDIT_API_LIST_CACHE_SECONDS = settings.AUDIT_API_TIMELINE_CACHE_SECONDS = 0
    for url, hit in hits.items():  # caches off: every answer computed by DRF
        assert answer(client.get(url)) == hit, url


def bad_clients(member) -> dict[str, APIClient]:
    inactive = token_client(member)
    member.is_active = False
    member.save()
    clients = {"inactive user's token": inactive, "no credentials": APIClient()}
    for name, header in {
        "unknown token": "Token 0123456789abcdef0123456789abcdef01234567",
        "token with a space": "Token abc def",
        "token keyword only": "Token",
        "basic auth": "Basic Ym9iOnBhc3N3b3Jk",
        "not ascii": "Token \u00e9t\u00e9",
    }.items():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        clients[name] = client
    return clients


def test_no_token_or_a_bad_one_gets_what_drf_answers(reorder_table, member, owner):
    urls = hot_urls(reorder_table.id)
    warm = token_client(owner)
    for url in urls:
        assert warm.get(url).status_code == 200  # every body is cached
    forget_tokens()
    for name, client in bad_clients(member).items():
        for url in urls:
            with drf_calls() as calls:
                response = client.get(url)
            assert calls, (name, url)  # refused by DRF, not answered from the cache
            assert response.status_code in (401, 403), (name, url, response.status_code)
            assert b"results" not in response.content and b"commits" not in response.content


def test_a_session_goes_to_drf_and_reads_the_same_bytes(reorder_table, member):
    url = f"/api/findings/?table={reorder_table.id}"
    by_token = token_client(member).get(url)
    with drf_calls() as calls:
        by_session = session_client(member).get(url)
    assert calls == ["/api/findings/"]
    assert by_session.content == by_token.content


@pytest.mark.parametrize("url", ["/api/findings/?table=abc", "/api/tables/?ordering=nope"])
def test_refused_queries_are_never_cached_and_go_to_drf(reorder_table, member, url):
    client = token_client(member)
    with drf_calls() as calls:
        statuses = [client.get(url).status_code for _ in range(2)]
    assert statuses == [400, 400] and len(calls) == 2


def test_whole_history_timelines_stay_throttled(reorder_table, member, settings):
    settings.AUDIT_API_EXPENSIVE_RATE = "2/minute"
    client = token_client(member)
    whole = f"/api/tables/{reorder_table.id}/timeline/"
    assert [client.get(whole).status_code for _ in range(3)] == [200, 200, 429]
    window = f"{whole}?from_version=0&to_version=4"  # narrow windows are not throttled
    assert {client.get(window).status_code for _ in range(4)} == {200}


def test_it_throttles_a_past_versions_health_even_when_cached(reorder_table, member, settings):
    settings.AUDIT_API_EXPENSIVE_RATE = "2/minute"
    client = token_client(member)
    past = f"/api/tables/{reorder_table.id}/health/?version=2"
    assert [client.get(past).status_code for _ in range(3)] == [200, 200, 429]
    latest = f"/api/tables/{reorder_table.id}/health/"  # stored: not throttled
    assert {client.get(latest).status_code for _ in range(4)} == {200}


@pytest.mark.parametrize(
    "query, status",
    [
        ("from_version=00&to_version=4", 200),  # the same window, written differently
        ("from_version=4&to_version=1", 400),
        ("from_version=0&to_version=4&max_points=1", 400),
        ("from_version=0&to_version=4&from_version=1", 200),
    ],
)
def test_timeline_windows_drf_reads_differently_go_to_drf(reorder_table, member, query, status):
    client = token_client(member)
    url = f"/api/tables/{reorder_table.id}/timeline/"
    assert client.get(f"{url}?from_version=0&to_version=4").status_code == 200  # cached
    with drf_calls() as calls:
        response = client.get(f"{url}?{query}")
    assert calls and response.status_code == status, response.content[:200]


def test_a_removed_table_or_token_is_not_served_from_the_cache(reorder_table, owner, member):
    client = token_client(member)
    url = f"/api/tables/{reorder_table.id}/commits/"
    assert client.get(url).status_code == 200
    Token.objects.filter(user=member).delete()
    forget_tokens()  # what AUDIT_API_TOKEN_CACHE_SECONDS bounds in production
    assert client.get(url).status_code == 401
    admin = token_client(owner)
    assert admin.delete(f"/api/tables/{reorder_table.id}/").status_code == 204
    assert admin.get(url).status_code == 404


def test_a_change_finding_shows_in_the_next_changes_answer(reorder_table, member):
    version = reorder_table.last_seen_version
    TableChange.objects.create(  # as the tail stores it, with its commit
        table=reorder_table, version=version, kind="properties", summary="a property changed"
    )
    client = token_client(member)
    url = f"/api/tables/{reorder_table.id}/changes/"
    assert [c["findings"] for c in client.get(url).json()["changes"]] == [[]]
    kind = FindingKind.CONCURRENT_METADATA_CHANGE
    change = model.Finding(kind, Severity.WARNING, version, [version - 1], True, "meta", "why")
    upsert_findings(reorder_table, [change], scope=None, kinds={kind})
    found = Finding.objects.get(table=reorder_table, kind=kind)
    with drf_calls() as calls:
        assert [c["findings"] for c in client.get(url).json()["changes"]] == [[found.id]]
    assert calls  # the generation moved: a miss, computed again


def test_a_host_not_allowed_is_refused_before_the_cache(reorder_table, member):
    client = token_client(member)
    url = f"/api/tables/{reorder_table.id}/timeline/?from_version=0&to_version=4"
    assert client.get(url).status_code == 200  # cached
    assert client.get(url, HTTP_HOST="evil.example").status_code == 400


@pytest.mark.parametrize(
    "accept, query",
    [
        ("text/html", ""),
        ("application/xml", ""),
        ("", "&format=xml"),
        ("text/html", "&format=json"),
    ],
)
def test_content_negotiation_drf_refuses_is_refused(reorder_table, member, accept, query):
    client = token_client(member)
    for url in hot_urls(reorder_table.id):
        assert client.get(url).status_code == 200  # cached
        separator = "&" if "?" in url else "?"
        with drf_calls() as calls:
            response = client.get(
                f"{url}{separator}{query[1:]}" if query else url, HTTP_ACCEPT=accept
            )
        assert calls, url
        assert response.status_code in (404, 406), (url, response.status_code)


def test_browsers_and_json_clients_are_served_from_the_cache(reorder_table, member):
    client = token_client(member)
    url = f"/api/tables/{reorder_table.id}/commits/"
    first = client.get(url)
    for accept in ("text/html,application/xhtml+xml,*/*;q=0.8", "application/json", "*/*"):
        with drf_calls() as calls:
            response = client.get(url, HTTP_ACCEPT=accept)
        assert not calls and response.content == first.content
