"""The REST API against real deltalake tables ingested by audit.ingest: authentication, tables,
commits (timeline, analyses, findings, matrix, explain, schema: test_api_findings.py).

Users as in healthchecks' tests: alice (`owner`, an administrator), bob (`member`, read-only)
and charlie (`outsider`, another non-admin). Anonymous requests are refused everywhere.
Fixtures: tests/app/api/conftest.py.
"""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from audit.models import Commit, Finding, Table
from tests.support import scenarios
from tests.support.clients import error_of, session_client, walk

pytestmark = pytest.mark.django_db


# --------------------------------------------------------------------------- authentication


ANONYMOUS_REFUSED = [
    ("get", "/api/tables/"),
    ("get", "/api/tables/{table}/"),
    ("post", "/api/tables/"),
    ("delete", "/api/tables/{table}/"),
    ("get", "/api/tables/{table}/commits/"),
    ("get", "/api/tables/{table}/commits/3/"),
    ("get", "/api/tables/{table}/timeline/"),
    ("get", "/api/tables/{table}/hotspots/"),
    ("get", "/api/tables/{table}/settings/"),
    ("get", "/api/tables/{table}/recommendations/"),
    ("get", "/api/findings/"),
    ("get", "/api/findings/{finding}/"),
    ("post", "/api/findings/{finding}/acknowledge/"),
    ("post", "/api/findings/{finding}/reopen/"),
    ("get", "/api/conflict-matrix/"),
    ("post", "/api/explain/"),
    ("get", "/api/schema/"),
    ("get", "/api/docs/"),
    ("get", "/api/redoc/"),
]


@pytest.mark.parametrize("method,url", ANONYMOUS_REFUSED)
def test_it_refuses_anonymous_requests(reorder_table, method, url):
    finding = Finding.objects.filter(table=reorder_table).first()
    url = url.format(table=reorder_table.id, finding=finding.id)

    response = getattr(APIClient(), method)(url)

    assert response.status_code == 401, (url, response.status_code)
    assert response["WWW-Authenticate"].startswith("Token")
    assert Table.objects.filter(id=reorder_table.id).exists()
    finding.refresh_from_db()
    assert finding.acknowledged_at is None


def test_it_refuses_a_wrong_token(reorder_table):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")

    response = client.get("/api/tables/")

    assert response.status_code == 401
    assert "token" in error_of(response).lower()


def test_it_accepts_token_authentication(reorder_table, member):
    token = Token.objects.create(user=member)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    response = client.get("/api/tables/")

    assert response.status_code == 200
    assert [t["id"] for t in response.json()["results"]] == [reorder_table.id]


def test_it_refuses_an_inactive_user(reorder_table, member):
    token = Token.objects.create(user=member)
    member.is_active = False
    member.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    assert client.get("/api/tables/").status_code == 401


def test_a_valid_token_is_remembered_briefly_and_a_revoked_one_expires(
    reorder_table, member, settings
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit.api.authentication import forget_tokens

    token = Token.objects.create(user=member)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/tables/").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/tables/").status_code == 200
    assert not [q for q in queries.captured_queries if "authtoken_token" in q["sql"]]

    token.delete()
    assert client.get("/api/tables/").status_code == 200  # within AUDIT_API_TOKEN_CACHE_SECONDS
    forget_tokens()  # what the TTL does
    assert client.get("/api/tables/").status_code == 401

    settings.AUDIT_API_TOKEN_CACHE_SECONDS = 0  # off: every request checks the database
    other = Token.objects.create(user=member)
    client.credentials(HTTP_AUTHORIZATION=f"Token {other.key}")
    assert client.get("/api/tables/").status_code == 200
    other.delete()
    assert client.get("/api/tables/").status_code == 401


# --------------------------------------------------------------------------- tables


def test_it_lists_tables_with_counts_lag_and_status(reorder_table, long_table, member_client):
    Table.objects.filter(id=long_table.id).update(latest_version_in_log=30)

    response = member_client.get("/api/tables/")

    assert response.status_code == 200
    rows = {row["name"]: row for row in response.json()["results"]}
    reorder = rows["reorder"]
    assert reorder["status"] == "ok"
    assert reorder["version"] == reorder["last_seen_version"] == 3
    assert reorder["lag"]["versions"] == 0
    assert reorder["lag"]["seconds_since_last_commit"] >= 0
    expected_open = Finding.objects.filter(table=reorder_table, status="open")
    assert reorder["open_findings"]["critical"] == expected_open.filter(severity="critical").count()
    assert reorder["open_findings"]["critical"] >= 2
    assert reorder["open_findings"]["total"] == expected_open.count()
    assert reorder["backfill"] is None
    assert "settings_snapshot" not in reorder
    assert rows["long"]["lag"]["versions"] == 30 - 24
    assert rows["long"]["open_findings"]["total"] == 0


def test_it_shows_backfill_progress(long_table, member_client):
    Table.objects.filter(id=long_table.id).update(
        status="backfilling", backfill_target_version=99, backfill_done=25
    )

    body = member_client.get(f"/api/tables/{long_table.id}/").json()

    assert body["status"] == "backfilling"
    assert body["backfill"] == {
        "target_version": 99,
        "done": 25,
        "fraction": 0.25,
        "remaining": 75,
        "started_at": None,
        "commits_per_second": None,
        "eta_seconds": None,
    }

    Table.objects.filter(id=long_table.id).update(
        backfill_started_at=timezone.now(), backfill_rate=12.5
    )
    backfill = member_client.get(f"/api/tables/{long_table.id}/").json()["backfill"]
    assert (backfill["commits_per_second"], backfill["eta_seconds"]) == (12.5, 6.0)
    assert backfill["started_at"].endswith("Z") or "+" in backfill["started_at"]


def test_it_filters_tables_by_status(reorder_table, long_table, member_client):
    Table.objects.filter(id=long_table.id).update(status="error", last_error="log vanished")

    body = member_client.get("/api/tables/", {"status": "error"}).json()

    assert [(t["id"], t["last_error"]) for t in body["results"]] == [
        (long_table.id, "log vanished")
    ]
    assert member_client.get("/api/tables/", {"status": "sideways"}).status_code == 400


def test_it_retrieves_a_table_with_its_settings_snapshot(reorder_table, member_client):
    body = member_client.get(f"/api/tables/{reorder_table.id}/").json()

    assert body["uri"] == reorder_table.uri
    assert body["settings_snapshot"]["partition_columns"] == ["day"]
    assert body["settings_snapshot"]["properties"]["delta.isolationLevel"] == "writeSerializable"


def test_it_answers_unknown_tables_with_json_404(member_client):
    for url in ("/api/tables/999999/", "/api/tables/999999/commits/", "/api/tables/abc/"):
        response = member_client.get(url)
        assert response.status_code == 404, url
        error_of(response)


def test_it_lets_an_admin_register_a_table(delta_table_factory, admin_client, queued):
    path = delta_table_factory("fresh", commits=2)

    response = admin_client.post(
        "/api/tables/", {"uri": str(path), "name": "fresh one"}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    table = Table.objects.get(id=body["id"])
    assert (table.uri, table.name, table.status) == (str(path), "fresh one", "ingesting")
    assert body["latest_version_in_log"] == 1
    assert body["tail_queued"] is True
    assert queued == [table.id]


def test_it_registers_the_table_when_the_broker_is_down(
    delta_table_factory, admin_client, monkeypatch
):
    from workers.tasks import tail_table

    def broker_down(*args, **kwargs):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tail_table, "apply_async", broker_down)
    path = delta_table_factory("offline")

    response = admin_client.post("/api/tables/", {"uri": str(path)}, format="json")

    assert response.status_code == 201
    assert response.json()["tail_queued"] is False
    assert Table.objects.get(uri=str(path)).status == "ingesting"


@pytest.mark.parametrize("user", ["member", "outsider"])
def test_it_refuses_registration_by_non_admins(request, delta_table_factory, user, queued):
    client = session_client(request.getfixturevalue(user))
    path = delta_table_factory("nope")

    response = client.post("/api/tables/", {"uri": str(path)}, format="json")

    assert response.status_code == 403
    assert "administrator" in error_of(response)
    assert not Table.objects.exists()
    assert queued == []


def test_it_rejects_a_uri_outside_the_allowed_roots(admin_client, tmp_path, queued, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "allowed")]
    scenarios.build_sequential(str(tmp_path / "elsewhere"))

    response = admin_client.post(
        "/api/tables/", {"uri": str(tmp_path / "elsewhere")}, format="json"
    )

    assert response.status_code == 400
    assert "not under an allowed root" in error_of(response)
    assert not Table.objects.exists()


@pytest.mark.parametrize(
    "uri,message",
    [
        ("{tmp}/allowed/../../etc", "not under an allowed root"),
        ("s3://bucket/table", "not under an allowed root"),
        ("ftp://host/table", "unsupported URI scheme"),
        ("", "uri"),
    ],
)
def test_it_rejects_bad_uris(admin_client, tmp_path, uri, message, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "allowed")]

    response = admin_client.post("/api/tables/", {"uri": uri.format(tmp=tmp_path)}, format="json")

    assert response.status_code == 400
    assert message in error_of(response)


def test_it_rejects_a_directory_that_is_not_a_delta_table(admin_client, tmp_path, queued):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "data.csv").write_text("a,b\n")

    response = admin_client.post("/api/tables/", {"uri": str(tmp_path / "plain")}, format="json")

    assert response.status_code == 400
    assert "_delta_log" in error_of(response) or "Delta" in error_of(response)
    assert queued == []


def test_it_refuses_to_register_a_table_twice(reorder_table, admin_client, queued):
    response = admin_client.post("/api/tables/", {"uri": reorder_table.uri}, format="json")

    assert response.status_code == 409
    assert response.json()["detail"] == {"id": reorder_table.id}
    assert queued == []


def test_it_lets_an_admin_remove_a_table(reorder_table, admin_client):
    response = admin_client.delete(f"/api/tables/{reorder_table.id}/")

    assert response.status_code == 204
    assert not Table.objects.exists()
    assert not Commit.objects.exists() and not Finding.objects.exists()


@pytest.mark.parametrize("user", ["member", "outsider"])
def test_it_refuses_removal_by_non_admins(request, reorder_table, user):
    response = session_client(request.getfixturevalue(user)).delete(
        f"/api/tables/{reorder_table.id}/"
    )

    assert response.status_code == 403
    assert Table.objects.filter(id=reorder_table.id).exists()


# --------------------------------------------------------------------------- commits


def test_it_lists_commits_newest_first_with_spec_field_names(reorder_table, member_client):
    body = member_client.get(f"/api/tables/{reorder_table.id}/commits/").json()

    rows = body["results"]
    assert [r["version"] for r in rows] == [3, 2, 1, 0]
    delete = rows[0]
    assert delete["operation"] == "DELETE"
    assert delete["read_version"] == 1
    assert delete["concurrent_versions"] == [2]
    assert delete["files_removed"] >= 1
    assert {
        "version", "timestamp", "operation", "read_version", "isolation_level", "blind_append",
        "concurrent_versions", "files_added", "files_removed",
    } <= set(delete)  # fmt: skip
    assert isinstance(delete["timestamp"], int) and delete["timestamp"] > 1_600_000_000_000
    assert "recheck" not in delete  # lists stay small; the detail has the heavy JSON


def test_it_pages_through_commits_with_cursors_both_ways(long_table, member_client):
    url = f"/api/tables/{long_table.id}/commits/"

    newest_first = [r["version"] for r in walk(member_client, url, page_size=7)]
    oldest_first = [r["version"] for r in walk(member_client, url, page_size=7, order="asc")]

    assert newest_first == list(range(24, -1, -1))
    assert oldest_first == list(range(25))
    # The previous link of the second page leads back to the first page.
    first = member_client.get(url, {"page_size": 7}).json()
    second = member_client.get(first["next"]).json()
    back = member_client.get(second["previous"]).json()
    assert [r["version"] for r in back["results"]] == [24, 23, 22, 21, 20, 19, 18]


def test_it_filters_commits(reorder_table, long_table, member_client):
    url = f"/api/tables/{reorder_table.id}/commits/"

    def versions(**params):
        response = member_client.get(url, params)
        assert response.status_code == 200, response.content
        return [r["version"] for r in response.json()["results"]]

    assert versions(operation="DELETE") == [3]
    assert versions(operation="DELETE,WRITE") == [3, 2, 1, 0]
    assert versions(min_version=1, max_version=2) == [2, 1]
    assert versions(has_concurrent="true") == [3]
    assert versions(has_concurrent="false") == [2, 1, 0]
    ts = dict(Commit.objects.filter(table=reorder_table).values_list("version", "timestamp"))
    for v in ts:
        at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ts[v])
        for since in (ts[v], at.isoformat(), at.strftime("%Y-%m-%dT%H:%M:%S.%f")):
            assert versions(since=since) == [w for w in (3, 2, 1, 0) if ts[w] >= ts[v]]
        assert versions(until=ts[v]) == [w for w in (3, 2, 1, 0) if ts[w] <= ts[v]]
    assert versions(since="2999-01-01") == []
    assert versions(until="1990-01-01T00:00:00Z") == []
    assert versions(since="1990-01-01", until="2999-12-31T23:59:59+02:00") == [3, 2, 1, 0]
    assert versions(operation="MERGE") == []


BAD_COMMIT_FILTERS = [
    {"min_version": "abc"},
    {"max_version": "1.5"},
    {"min_version": "99999999999999999999999"},
    {"since": "yesterday"},
    {"until": "2024-13-45"},
    {"since": "9" * 30},
    {"has_concurrent": "maybe"},
    {"order": "sideways"},
    {"cursor": "not base64 at all!"},
    {"cursor": base64.b64encode(b"p=abc").decode()},
    {"cursor": base64.b64encode(b"p=99999999999999999999999").decode()},
    {"operation": "DELETE\x00"},
]


@pytest.mark.parametrize("params", BAD_COMMIT_FILTERS)
def test_it_answers_bad_commit_filters_with_400(reorder_table, member_client, params):
    response = member_client.get(f"/api/tables/{reorder_table.id}/commits/", params)

    assert response.status_code == 400, (params, response.content)
    error = error_of(response)
    name = next(iter(params))
    assert name in error or name == "cursor" and "cursor" in error


def test_it_shows_a_commit_with_verdicts_predicate_and_findings(reorder_table, member_client):
    response = member_client.get(f"/api/tables/{reorder_table.id}/commits/3/")

    assert response.status_code == 200
    body = response.json()
    assert body["operation"] == "DELETE"
    assert body["read_version"] == 1 and body["read_version_fact"] == "recorded"
    assert body["recheck"]["2"] == {
        "Serializable": "ConcurrentAppendException",
        "WriteSerializable": None,
    }
    assert body["predicate"]["raw"] == "id >= 4"
    assert "id" in body["predicate"]["sql"]
    assert body["partitions"] == [{"day": "2024-01-01"}]
    assert {f["kind"] for f in body["findings"]} >= {
        "write_serializable_reorder",
        "never_existed_snapshot",
    }
    # The blind append is related to those findings, so its page lists them too.
    append = member_client.get(f"/api/tables/{reorder_table.id}/commits/2/").json()
    assert {f["id"] for f in append["findings"]} >= {f["id"] for f in body["findings"]}
    assert append["predicate"] is None
    first = member_client.get(f"/api/tables/{reorder_table.id}/commits/0/").json()
    assert first["findings"] == []


def test_it_answers_unknown_commits_with_404(reorder_table, member_client):
    for version in ("4", "99999999999999999999"):
        response = member_client.get(f"/api/tables/{reorder_table.id}/commits/{version}/")
        assert response.status_code == 404
        error_of(response)


def test_the_tables_list_reads_every_tables_health_in_one_query(reorder_table, member, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit.health.models import TableHealth

    settings.AUDIT_API_LIST_CACHE_SECONDS = 0  # the computation, not a cached body
    client = session_client(member)

    def queries_and_health() -> tuple[int, dict]:
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/api/tables/").json()
        return len(queries.captured_queries), {t["name"]: t["health"] for t in body["results"]}

    one, _ = queries_and_health()
    for i in range(4):
        table = Table.objects.create(uri=f"/data/more-{i}", name=f"more-{i}")
        TableHealth.objects.create(
            table=table, version=i, computed_at=timezone.now(), num_files=10 + i, small_files=i
        )
    five, health = queries_and_health()
    assert five == one
    assert [health[f"more-{i}"]["num_files"] for i in range(4)] == [10, 11, 12, 13]


@pytest.mark.parametrize("n_tables", [0, 1, 3, 4, 5, 9])
def test_the_tables_list_pages_are_django_paginators(member, settings, n_tables):
    """The first page is read with one row more and counted from it when the fleet fits
    (pagination.FleetPaginator): every page, `count`, the links and the rows are those of
    Django's own paginator over the same ordered tables, and a fitting fleet needs no COUNT."""
    from django.core.paginator import Paginator
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.AUDIT_API_LIST_CACHE_SECONDS = 0
    for i in range(n_tables):
        Table.objects.create(uri=f"/data/fleet-{i}", name=f"fleet-{i % 3}", status="ok")
    client = session_client(member)
    ordered = list(Table.objects.order_by("name", "id").values_list("name", flat=True))
    reference = Paginator(ordered, 4)
    pages = [*range(1, reference.num_pages + 1), "last"]
    for page in pages:
        body = client.get(f"/api/tables/?page_size=4&page={page}").json()
        expected = reference.page(reference.num_pages if page == "last" else page)
        assert body["count"] == n_tables
        assert [t["name"] for t in body["results"]] == list(expected.object_list)
        assert (body["next"] is not None) == expected.has_next()
        assert (body["previous"] is not None) == expected.has_previous()
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/tables/?page_size=4")
    counts = [q for q in queries.captured_queries if q["sql"].startswith("SELECT COUNT(*)")]
    assert (not counts) == (n_tables <= 4), counts
