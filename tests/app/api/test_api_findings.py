"""The REST API's reading side against real ingested tables: the timeline, the analyses, findings
and their acknowledgement, the conflict matrix, explain, schema and docs, the page cache
(authentication, tables, commits: test_api.py; fixtures: tests/app/api/conftest.py)."""

from __future__ import annotations

import base64

import pytest

from audit.core.conflicts.matrix import conflict_matrix
from audit.models import Commit, Finding, Table
from audit.reads import analysis
from tests.support.clients import error_of, session_client, walk
from tests.support.paths import EXCEPTIONS

pytestmark = pytest.mark.django_db


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
    real = analysis.open_table
    monkeypatch.setattr(analysis, "open_table", lambda *a, **k: loads.append(a) or real(*a, **k))

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
