"""Oversized and expensive requests.

Bodies over DATA_UPLOAD_MAX_MEMORY_SIZE answer 413 with a clear message on every endpoint and
form (one through a real HTTP server with a 6 MB body); the limits are stated in the OpenAPI
schema and on the explain page; expensive endpoints answer 429 with Retry-After per user/token.
"""

from __future__ import annotations

import orjson
import pytest
import requests
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from audit.api.exceptions import json_exception_handler
from audit.reads import analysis
from audit.trust.limits import MAX_EXCEPTION_CHARS
from tests.support import scenarios
from tests.support.clients import token_client
from tests.support.ingested import ingest_table

pytestmark = pytest.mark.django_db

SIX_MB = 6 * 1024 * 1024


@pytest.fixture(autouse=True)
def fresh(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    cache.clear()
    analysis._HISTORIES.clear()
    yield
    cache.clear()


def _assert_413_json(response) -> None:
    assert response.status_code == 413, response.content[:300]
    body = orjson.loads(response.content)
    assert body["error"].startswith("request body too large")
    assert "2,621,440 bytes" in body["error"]
    assert body["detail"]["limit_bytes"] == 2_621_440


def test_a_6_mb_explain_body_answers_413_over_real_http(live_server, member):
    token = Token.objects.create(user=member).key
    text = "ConcurrentAppendException: Files were added. " + "x" * SIX_MB
    response = requests.post(
        f"{live_server.url}/api/explain/",
        data=orjson.dumps({"text": text}),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 413
    assert response.headers["Content-Type"].startswith("application/json")
    assert "the limit is 2,621,440 bytes" in response.json()["error"]


API_WRITES = [
    ("post", "/api/explain/"),
    ("post", "/api/tables/"),
    ("post", "/api/findings/1/acknowledge/"),
    ("post", "/api/findings/1/reopen/"),
    ("put", "/api/tables/1/"),
    ("patch", "/api/tables/1/"),
    ("delete", "/api/tables/1/"),
    ("post", "/api/no-such-endpoint/"),
]


@pytest.mark.parametrize(("method", "path"), API_WRITES)
def test_every_api_endpoint_answers_413_json_for_an_oversized_body(method, path, owner):
    client = token_client(owner)
    body = orjson.dumps({"text": "x" * (3 * 1024 * 1024)})
    response = getattr(client, method)(path, data=body, content_type="application/json")
    _assert_413_json(response)


@pytest.mark.parametrize("path", ["/explain/", "/", "/login/", "/findings/1/acknowledge/"])
def test_every_form_answers_a_413_page_for_an_oversized_body(client, owner, path):
    if path != "/login/":
        client.force_login(owner)
    body = "text=" + "x" * (3 * 1024 * 1024)
    response = client.post(path, data=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413
    page = response.content.decode()
    assert "Request too large" in page and "the limit is 2,621,440 bytes" in page
    assert f"{MAX_EXCEPTION_CHARS:,} characters" in page


def test_the_limit_follows_the_setting(settings, owner):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = token_client(owner)
    response = client.post("/api/explain/", {"text": "y" * 2000}, format="json")
    assert response.status_code == 413
    assert "the limit is 1,000 bytes" in response.json()["error"]
    small = client.post("/api/explain/", {"text": "ConcurrentAppendException"}, format="json")
    assert small.status_code == 200


def test_a_body_django_refuses_while_reading_is_a_413_in_the_api():
    response = json_exception_handler(RequestDataTooBig("too big"), {})
    assert response.status_code == 413
    assert response.data["error"].startswith("request body too large")


def test_a_text_over_the_character_limit_is_a_clear_400(owner):
    client = token_client(owner)
    response = client.post(
        "/api/explain/", {"text": "z" * (MAX_EXCEPTION_CHARS + 1)}, format="json"
    )
    assert response.status_code == 400
    assert "1000000 characters" in response.json()["error"]


def test_the_schema_and_the_explain_page_state_the_limits(owner, client):
    api = token_client(owner)
    schema = orjson.loads(api.get("/api/schema/", {"format": "json"}).content)
    explain = schema["paths"]["/api/explain/"]["post"]
    assert {"413", "429"} <= set(explain["responses"])
    assert "1,000,000 characters" in explain["description"]
    fields = schema["components"]["schemas"]["ExplainRequestRequest"]["properties"]
    assert fields["text"]["maxLength"] == MAX_EXCEPTION_CHARS
    assert "1,000,000 characters" in fields["text"]["description"]
    timeline = schema["paths"]["/api/tables/{id}/timeline/"]["get"]
    assert "429" in timeline["responses"]
    client.force_login(owner)
    page = client.get("/explain/").content.decode()
    assert "request bodies up to 2.5 MiB" in page and "1,000,000 characters" in page
    assert f'maxlength="{MAX_EXCEPTION_CHARS}"' in page


# --------------------------------------------------------------------------- throttling


@pytest.fixture
def table_id(tmp_path) -> int:
    scenarios.build_ws_reorder_matching(str(tmp_path / "t"))
    table = ingest_table(str(tmp_path / "t"))
    return table.id


def _exhaust(client: APIClient, call, limit: int):
    for _ in range(limit):
        assert call(client).status_code == 200
    return call(client)


def _explain(client: APIClient):
    return client.post("/api/explain/", {"text": "ConcurrentAppendException"}, format="json")


def test_explain_is_throttled_per_token_with_retry_after(settings, member, owner):
    settings.AUDIT_API_EXPENSIVE_RATE = "3/minute"
    first = token_client(member)
    refused = _exhaust(first, _explain, 3)
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert refused.json()["error"].startswith("Request was throttled")
    # Another user is not starved by the first one.
    assert _explain(token_client(owner)).status_code == 200
    # Cheap endpoints stay open to the throttled user.
    assert first.get("/api/findings/").status_code == 200


@pytest.mark.parametrize("action", ["hotspots", "settings", "recommendations"])
def test_analyses_are_throttled(settings, member, table_id, action):
    settings.AUDIT_API_EXPENSIVE_RATE = "2/minute"
    client = token_client(member)
    refused = _exhaust(client, lambda c: c.get(f"/api/tables/{table_id}/{action}/"), 2)
    assert refused.status_code == 429 and "Retry-After" in refused


def test_only_full_zoom_timelines_are_throttled(settings, member, table_id):
    settings.AUDIT_API_EXPENSIVE_RATE = "2/minute"
    settings.AUDIT_API_TIMELINE_CHEAP_SPAN = 100
    client = token_client(member)
    url = f"/api/tables/{table_id}/timeline/"
    for _ in range(5):  # a zoomed-in window is cheap: never throttled
        assert client.get(url, {"from_version": 0, "to_version": 3}).status_code == 200
    refused = _exhaust(client, lambda c: c.get(url), 2)
    assert refused.status_code == 429
    wide = client.get(url, {"from_version": 0, "to_version": 1000})
    assert wide.status_code == 429


def test_an_empty_rate_disables_throttling(settings, member):
    settings.AUDIT_API_EXPENSIVE_RATE = ""
    client = token_client(member)
    assert all(_explain(client).status_code == 200 for _ in range(70))
