"""The REST API against real deltalake tables ingested by audit.ingest.

Users as in healthchecks' tests: alice (`owner`, an administrator), bob (`member`, read-only)
and charlie (`outsider`, another non-admin). Anonymous requests are refused everywhere.
"""

from __future__ import annotations

import base64
import datetime as dt
import shutil
from pathlib import Path

import pytest
from deltalake import write_deltalake
from django.core.cache import cache
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from audit import analysis
from audit.core.matrix import conflict_matrix
from audit.models import Commit, Finding, Table
from tests.support import scenarios
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.paths import EXCEPTIONS
from tests.support.tables import rows

pytestmark = pytest.mark.django_db


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def fresh_caches(settings, tmp_path):
    # Users are created and logged in per test: PBKDF2 would cost ~1 s each time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    analysis._HISTORIES.clear()
    yield
    cache.clear()
    analysis._HISTORIES.clear()


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Tail tasks the API queued (the broker is replaced by a list)."""
    from workers.tasks import tail_table

    calls: list[int] = []
    monkeypatch.setattr(tail_table, "apply_async", lambda args, **kw: calls.append(args[0]))
    return calls


@pytest.fixture(scope="session")
def built_tables(tmp_path_factory) -> Path:
    """The Delta tables, written once; each test ingests its own copy."""
    root = tmp_path_factory.mktemp("api-tables")
    scenarios.build_ws_reorder_matching(str(root / "reorder"))
    write_deltalake(str(root / "long"), rows())
    for i in range(24):
        write_deltalake(str(root / "long"), rows(start=10 * (i + 1)), mode="append")
    return root


def copy_of(built_tables: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(built_tables / name, tmp_path / name))


@pytest.fixture
def reorder_table(built_tables, tmp_path) -> Table:
    """A stale DELETE under WriteSerializable after a blind append (findings at v3)."""
    return ingest_table(copy_of(built_tables, tmp_path, "reorder"), name="reorder")


@pytest.fixture
def long_table(built_tables, tmp_path) -> Table:
    """25 sequential appends (v0..v24), for pagination and the timeline."""
    return ingest_table(copy_of(built_tables, tmp_path, "long"), name="long")


@pytest.fixture
def admin_client(owner) -> APIClient:
    return session_client(owner)


@pytest.fixture
def member_client(member) -> APIClient:
    return session_client(member)


def error_of(response) -> str:
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert isinstance(body["error"], str) and body["error"]
    return body["error"]


def walk(client: APIClient, url: str, **params) -> list[dict]:
    """Every page, following `next` links."""
    items, pages = [], 0
    response = client.get(url, params)
    while True:
        assert response.status_code == 200, response.content
        body = response.json()
        items += body["results"]
        pages += 1
        assert pages < 100
        if not body["next"]:
            return items
        response = client.get(body["next"])


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


# --------------------------------------------------------------------------- timeline


def test_it_returns_the_timeline_as_rows(reorder_table, member_client):
    response = member_client.get(f"/api/tables/{reorder_table.id}/timeline/")

    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "rows"
    assert (body["table"], body["first_version"], body["latest_version"]) == (
        reorder_table.id,
        0,
        3,
    )
    assert (body["from_version"], body["to_version"]) == (0, 3)
    assert body["columns"] == [
        "version", "read_version", "timestamp", "op", "blind_append", "concurrent_count",
    ]  # fmt: skip
    assert [row[0] for row in body["rows"]] == [0, 1, 2, 3]
    delete = body["rows"][3]
    assert body["operations"][delete[3]] == "DELETE"
    assert delete[1] == 1 and delete[5] == 1
    assert body["rows"][0][1] is None  # the create read nothing: unknown read version
    assert body["buckets"] == []
    kinds = {(f["kind"], f["version"], tuple(f["related_versions"])) for f in body["findings"]}
    assert ("write_serializable_reorder", 3, (2,)) in kinds
    assert set(body["findings"][0]) == {
        "id", "version", "kind", "severity", "confirmed", "related_versions",
    }  # fmt: skip


def test_it_aggregates_a_large_window_into_buckets(long_table, member_client):
    url = f"/api/tables/{long_table.id}/timeline/"

    body = member_client.get(url, {"max_points": 6}).json()

    assert body["mode"] == "buckets"
    assert body["rows"] == []
    # About max_points/2 buckets, and no more: a wanted width of 9 versions is widened to whole
    # stored cells of 8 versions (16 a bucket), so the buckets are summed from rollup cells.
    assert 2 <= len(body["buckets"]) <= 3
    assert [b[:2] for b in body["buckets"]] == [[0, 15], [16, 24]]
    assert sum(b[2] for b in body["buckets"]) == 25
    assert body["buckets"][0][0] == 0 and body["buckets"][-1][1] == 24
    for lo, hi, commits, max_concurrent, findings in body["buckets"]:
        assert commits == hi - lo + 1 and max_concurrent == 0 and findings == 0
    assert body["operations"] == ["WRITE"]

    window = member_client.get(url, {"from_version": 5, "to_version": 9, "max_points": 6}).json()
    assert window["mode"] == "rows"
    assert [r[0] for r in window["rows"]] == [5, 6, 7, 8, 9]
    assert (window["from_version"], window["to_version"]) == (5, 9)


@pytest.mark.parametrize(
    "params",
    [
        {"from_version": "x"},
        {"from_version": 9, "to_version": 3},
        {"max_points": 1},
        {"max_points": 10_001},
        {"to_version": "99999999999999999999999"},
    ],
)
def test_it_answers_bad_timeline_parameters_with_400(long_table, member_client, params):
    response = member_client.get(f"/api/tables/{long_table.id}/timeline/", params)

    assert response.status_code == 400
    assert next(iter(params)) in error_of(response)


# --------------------------------------------------------------------------- analyses


def test_it_returns_settings_recommendations_and_hotspots(reorder_table, member_client):
    base = f"/api/tables/{reorder_table.id}"

    settings_ = member_client.get(f"{base}/settings/").json()
    recommendations = member_client.get(f"{base}/recommendations/").json()
    hotspots = member_client.get(f"{base}/hotspots/").json()

    isolation = settings_["isolation_settings"]
    assert settings_["version"] == 3 and settings_["table"] == reorder_table.id
    assert isolation["isolation_level"] == "WriteSerializable"
    assert isolation["partition_columns"] == ["day"]
    assert len(isolation["matrix"]["cells"]) == 6
    assert "candidates" in recommendations["recommendations"]
    assert recommendations["recommendations"]["partition_columns"] == ["day"]
    assert isinstance(hotspots["hotspots"], list)
    pairs = {tuple(h["operations"]): h["pairs"] for h in hotspots["hotspots"]}
    assert sum(pairs.values()) >= 1


def test_it_caches_the_analysis_per_stored_version(reorder_table, monkeypatch):
    loads = []
    real = analysis.load_history
    monkeypatch.setattr(analysis, "load_history", lambda *a, **k: loads.append(a) or real(*a, **k))

    first = analysis.table_analysis(reorder_table)
    again = analysis.table_analysis(Table.objects.get(id=reorder_table.id))
    analysis._HISTORIES.clear()
    Table.objects.filter(id=reorder_table.id).update(last_seen_version=2)
    older = analysis.table_analysis(Table.objects.get(id=reorder_table.id))

    assert first == again and len(loads) == 2
    assert (first["version"], older["version"]) == (3, 2)


def test_it_answers_409_when_the_log_is_gone(reorder_table, member_client):
    Table.objects.filter(id=reorder_table.id).update(uri=reorder_table.uri + "-moved")

    response = member_client.get(f"/api/tables/{reorder_table.id}/settings/")

    assert response.status_code == 409
    assert "cannot be read" in error_of(response)


# --------------------------------------------------------------------------- findings


def test_it_lists_and_filters_findings(reorder_table, long_table, member_client):
    def kinds(**params):
        response = member_client.get("/api/findings/", params)
        assert response.status_code == 200, response.content
        return sorted(f["kind"] for f in response.json()["results"])

    everything = kinds()
    assert {"write_serializable_reorder", "never_existed_snapshot"} <= set(everything)
    assert kinds(table=reorder_table.id) == everything
    assert kinds(table=long_table.id) == []
    assert kinds(kind="never_existed_snapshot") == ["never_existed_snapshot"]
    assert kinds(kind="never_existed_snapshot,write_serializable_reorder") == sorted(
        ["never_existed_snapshot", "write_serializable_reorder"]
    )
    assert kinds(severity="critical") == kinds(min_severity="critical")
    assert set(kinds(min_severity="info")) == set(everything)
    assert "never_existed_snapshot" in kinds(confirmed="true")
    assert kinds(status="resolved") == []
    assert kinds(status="open") == everything
    assert kinds(acknowledged="true") == []
    assert kinds(min_version=4) == []
    row = member_client.get("/api/findings/", {"kind": "never_existed_snapshot"}).json()
    finding = row["results"][0]
    assert finding["table"] == reorder_table.id
    assert finding["related_versions"] == [2] and finding["version"] == 3
    assert finding["acknowledged"] is False and finding["acknowledged_by"] is None
    assert "witness" not in finding  # in the detail only


@pytest.mark.parametrize(
    "params",
    [
        {"severity": "urgent"},
        {"min_severity": "urgent"},
        {"confirmed": "perhaps"},
        {"status": "closed"},
        {"acknowledged": "2"},
        {"table": "first"},
        {"cursor": "%%%"},
        {"cursor": ""},
        {"cursor": base64.b64encode(b"x").decode()},
    ],
)
def test_it_answers_bad_finding_filters_with_400(reorder_table, member_client, params):
    response = member_client.get("/api/findings/", params)

    assert response.status_code == 400
    assert next(iter(params)) in error_of(response)


def test_it_pages_findings_newest_first(reorder_table, member_client):
    ids = sorted(Finding.objects.values_list("id", flat=True), reverse=True)

    walked = [f["id"] for f in walk(member_client, "/api/findings/", page_size=1)]

    assert walked == ids and len(ids) >= 2


def test_it_shows_a_finding_with_explanation_and_witness(reorder_table, member_client):
    finding = Finding.objects.get(table=reorder_table, kind="never_existed_snapshot")

    body = member_client.get(f"/api/findings/{finding.id}/").json()

    assert body["explanation"] == finding.explanation and body["explanation"]
    assert body["witness"]["row_count"] == 2
    assert body["confirmed"] is True


def test_it_lets_admins_acknowledge_and_reopen(reorder_table, owner):
    person = owner
    client = session_client(person)
    finding = Finding.objects.filter(table=reorder_table).first()

    acked = client.post(f"/api/findings/{finding.id}/acknowledge/")

    assert acked.status_code == 200
    assert acked.json()["acknowledged"] is True
    assert acked.json()["acknowledged_by"] == person.username
    finding.refresh_from_db()
    assert finding.acknowledged_by_id == person.id and finding.status == "open"
    listed = client.get("/api/findings/", {"acknowledged": "true"}).json()["results"]
    assert [f["id"] for f in listed] == [finding.id]

    reopened = client.post(f"/api/findings/{finding.id}/reopen/")

    assert reopened.status_code == 200
    assert reopened.json()["acknowledged"] is False
    finding.refresh_from_db()
    assert finding.acknowledged_at is None and finding.acknowledged_by is None


def test_it_refuses_acknowledgements_from_read_only_users(reorder_table, member):
    finding = Finding.objects.filter(table=reorder_table).first()

    for action in ("acknowledge", "reopen"):
        response = session_client(member).post(f"/api/findings/{finding.id}/{action}/")
        assert response.status_code == 403
    finding.refresh_from_db()
    assert finding.acknowledged_at is None


def test_it_keeps_the_first_acknowledgement(reorder_table, owner, admin):
    finding = Finding.objects.filter(table=reorder_table).first()
    session_client(owner).post(f"/api/findings/{finding.id}/acknowledge/")

    body = session_client(admin).post(f"/api/findings/{finding.id}/acknowledge/").json()

    assert body["acknowledged_by"] == "alice"


def test_it_does_not_allow_get_on_actions_or_writes_on_findings(reorder_table, member_client):
    finding = Finding.objects.filter(table=reorder_table).first()

    assert member_client.get(f"/api/findings/{finding.id}/acknowledge/").status_code == 405
    assert member_client.delete(f"/api/findings/{finding.id}/").status_code == 405
    assert member_client.post("/api/findings/", {}).status_code == 405


# --------------------------------------------------------------------------- matrix, explain


@pytest.mark.parametrize(
    "level,rlc,dv,zorder",
    [("Serializable", False, False, False), ("WriteSerializable", True, True, True)],
)
def test_it_returns_the_conflict_matrix_like_the_cli(member_client, level, rlc, dv, zorder):
    on = {True: "on", False: "off"}

    response = member_client.get(
        "/api/conflict-matrix/",
        {
            "isolation_level": level,
            "row_level_concurrency": on[rlc],
            "deletion_vectors": on[dv],
            "zorder": on[zorder],
        },
    )

    assert response.status_code == 200
    assert response.json() == {
        "cells": [c.as_dict() for c in conflict_matrix(level, rlc, dv, zorder)]
    }


@pytest.mark.parametrize("params", [{"isolation_level": "ReadCommitted"}, {"zorder": "sometimes"}])
def test_it_answers_bad_matrix_parameters_with_400(member_client, params):
    response = member_client.get("/api/conflict-matrix/", params)

    assert response.status_code == 400
    assert next(iter(params)) in error_of(response) or "isolation level" in error_of(response)


def test_it_explains_an_exception_located_in_a_table(reorder_table, member_client):
    text = (EXCEPTIONS / "delta_rs_append.txt").read_text()

    alone = member_client.post("/api/explain/", {"text": text}, format="json")
    located = member_client.post(
        "/api/explain/", {"text": text, "table": reorder_table.id}, format="json"
    )

    assert alone.status_code == located.status_code == 200
    assert alone.json()["exception"] == located.json()["exception"]
    assert "Append" in located.json()["exception"]
    assert located.json()["fixes"]
    assert located.json() != alone.json()  # the table's facts changed the answer


def test_it_says_when_a_text_is_not_a_conflict(member_client):
    body = member_client.post("/api/explain/", {"text": "hello"}, format="json").json()

    assert body["exception"] is None and body["fixes"] == []


@pytest.mark.parametrize(
    "payload", [{}, {"text": ""}, {"text": "x", "table": 999999}, {"text": "x", "table": "one"}]
)
def test_it_answers_bad_explain_requests_with_400(member_client, payload):
    response = member_client.post("/api/explain/", payload, format="json")

    assert response.status_code == 400
    error_of(response)


# --------------------------------------------------------------------------- schema and docs


def test_it_serves_the_schema_and_docs_to_users(member_client):
    schema = member_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    docs = member_client.get("/api/docs/")
    script = member_client.get("/api/docs/", {"script": ""})

    assert schema.status_code == 200
    assert "/api/tables/{id}/timeline/" in schema.json()["paths"]
    assert docs.status_code == 200
    html = docs.content.decode()
    # Assets come from drf-spectacular-sidecar through staticfiles, never from a CDN.
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert script.status_code == 200 and "/api/schema/" in script.content.decode()


def test_it_redirects_to_the_trailing_slash_and_404s_unknown_paths(member_client):
    assert member_client.get("/api/tables").status_code == 301
    response = member_client.get("/api/tables/1/nothing-here/")
    assert response.status_code == 404
    error_of(response)


def test_the_fast_finding_timestamps_read_as_drf_writes_them():
    from datetime import UTC, datetime, timedelta, timezone

    from audit.api.serializers import _DATETIME, _when

    values = [
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
    ]
    assert [_when(v) for v in values] == [_DATETIME.to_representation(v) for v in values]
    assert _when(None) is None


def test_a_commits_page_is_served_from_cache_until_new_commits_are_stored(
    long_table, member_client, settings
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.AUDIT_API_LIST_CACHE_SECONDS = 30
    url = f"/api/tables/{long_table.id}/commits/?page_size=5"
    first = member_client.get(url).json()
    with CaptureQueriesContext(connection) as queries:
        again = member_client.get(url).json()
    assert again == first
    assert not [q for q in queries.captured_queries if '"audit_commit"' in q["sql"]]

    # A new stored version is a new generation: the page is computed again, not served stale.
    latest = first["results"][0]["version"]
    Commit.objects.filter(table=long_table, version=latest).delete()
    Table.objects.filter(id=long_table.id).update(last_seen_version=latest - 1)
    fresh = member_client.get(url).json()
    assert fresh["results"][0]["version"] == latest - 1
