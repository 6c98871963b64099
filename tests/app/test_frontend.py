"""The dashboard pages through Django's test client, on a real ingested deltalake table.

The table (tests/support/scenarios.build_ws_reorder_matching) has a stale DELETE under WriteSerializable
at v3 that read v1 while a blind append (v2) added rows it matches: a confirmed
never_existed_snapshot and a write_serializable_reorder at v3, related to v2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import write_deltalake
from django.utils import timezone
from django.utils.html import escape
from kombu.exceptions import OperationalError

from audit.models import Finding, Table
from audit.tail.step import tail_once
from tests.support import scenarios
from tests.support.ingested import ingest_table
from tests.support.paths import EXCEPTIONS

pytestmark = pytest.mark.django_db

DATA = EXCEPTIONS


@pytest.fixture
def audited(tmp_path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = tmp_path / "orders"
    scenarios.build_ws_reorder_matching(str(path))
    return ingest_table(path, "orders")


@pytest.fixture
def never_existed(audited) -> Finding:
    return Finding.objects.get(table=audited, kind="never_existed_snapshot")


def login(client, user) -> None:
    client.force_login(user)


def page_urls(table: Table, finding: Finding) -> list[str]:
    return [
        "/",
        f"/tables/{table.id}/",
        f"/tables/{table.id}/status/",
        f"/tables/{table.id}/analysis/",
        f"/tables/{table.id}/commits/3/",
        "/findings/",
        f"/findings/{finding.id}/",
        "/explain/",
    ]


# --------------------------------------------------------------------------- access


def test_it_redirects_anonymous_users_to_login(client, audited, never_existed):
    for url in page_urls(audited, never_existed):
        r = client.get(url)
        assert r.status_code == 302, url
        assert r["Location"].startswith("/login/?next="), url


def test_it_serves_every_page_to_a_member(client, member, audited, never_existed):
    login(client, member)
    for url in page_urls(audited, never_existed):
        r = client.get(url)
        assert r.status_code == 200, url


def test_it_logs_in_and_out(client, member):
    r = client.post("/login/", {"username": "bob", "password": "password"})
    assert r.status_code == 302 and r["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.get("/logout/").status_code == 405  # logging out is a POST
    r = client.post("/logout/")
    assert r.status_code == 302
    assert client.get("/").status_code == 302


def test_it_rejects_a_wrong_password(client, member):
    r = client.post("/login/", {"username": "bob", "password": "nope"})
    assert r.status_code == 200
    assert b"correct username and password" in r.content


def test_it_returns_404_for_unknown_ids(client, member, audited):
    login(client, member)
    for url in [
        "/tables/999999/",
        "/tables/999999/analysis/",
        "/tables/999999/status/",
        f"/tables/{audited.id}/commits/999/",
        "/tables/999999/commits/1/",
        "/findings/999999/",
    ]:
        assert client.get(url).status_code == 404, url


def test_it_sends_a_content_security_policy_without_inline_script(client, member, audited):
    login(client, member)
    r = client.get(f"/tables/{audited.id}/")
    policy = r["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";")[0]
    assert "object-src 'none'" in policy
    assert r["X-Content-Type-Options"] == "nosniff"
    assert b"<script>" not in r.content  # only <script src=...> and json_script data blocks


# --------------------------------------------------------------------------- overview


def test_it_shows_the_overview_with_risk_and_open_findings(client, member, audited):
    login(client, member)
    r = client.get("/")
    html = r.content.decode()
    assert "orders" in html
    assert "risk-high" in html  # critical findings are open
    assert f'href="/findings/?table={audited.id}&amp;severity=critical"' in html
    assert "in sync" in html
    assert r.context["page"][0].n_critical == 2
    assert "Register a table" not in html  # members do not register tables


def test_it_searches_and_sorts_tables(client, member, audited, tmp_path):
    Table.objects.create(uri=str(tmp_path / "zeta"), name="zeta", status="error", last_error="boom")
    login(client, member)
    names = [t.name for t in client.get("/?sort=name").context["page"]]
    assert names == ["orders", "zeta"]
    names = [t.name for t in client.get("/?sort=findings").context["page"]]
    assert names[0] == "orders"
    names = [t.name for t in client.get("/?sort=status").context["page"]]
    assert names == ["zeta", "orders"]  # "error" sorts before "ok"
    r = client.get("/?q=zet")
    assert [t.name for t in r.context["page"]] == ["zeta"]
    assert b"boom" in r.content
    assert client.get("/?sort=nonsense").context["sort"] == "findings"


def test_it_shows_the_register_form_to_admins(client, owner):
    login(client, owner)
    assert b"Register a table" in client.get("/").content


def test_it_forbids_members_to_register_tables(client, member, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    login(client, member)
    r = client.post("/", {"uri": str(tmp_path), "name": "x"})
    assert r.status_code == 403
    assert not Table.objects.exists()


def test_it_registers_a_table_and_enqueues_its_tail(
    client, owner, delta_table_factory, monkeypatch
):
    path = delta_table_factory("fresh", commits=2)
    calls = []
    monkeypatch.setattr(
        "workers.tasks.tail_table.apply_async", lambda *a, **kw: calls.append((a, kw))
    )
    login(client, owner)
    r = client.post("/", {"uri": str(path), "name": "fresh"})
    table = Table.objects.get(name="fresh")
    assert r.status_code == 302 and r["Location"] == f"/tables/{table.id}/"
    assert table.uri == str(path)
    assert calls == [(((table.id,),), {"retry": False})]
    page = client.get(r["Location"])
    assert b"being ingested" in page.content


def test_it_registers_a_table_while_the_broker_is_down(
    client, owner, delta_table_factory, monkeypatch
):
    path = delta_table_factory("offline")

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("workers.tasks.tail_table.apply_async", broker_down)
    login(client, owner)
    r = client.post("/", {"uri": str(path)}, follow=True)
    assert Table.objects.filter(uri=str(path)).exists()
    assert b"task queue is unreachable" in r.content


def test_it_shows_registration_errors_inline(client, owner, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "lake")]
    (tmp_path / "lake" / "not-delta").mkdir(parents=True)
    login(client, owner)
    r = client.post("/", {"uri": "/etc"})
    assert r.status_code == 200
    assert b"not under an allowed root" in r.content
    r = client.post("/", {"uri": str(tmp_path / "lake" / "not-delta")})
    assert r.status_code == 200
    assert b"errorlist" in r.content
    assert not Table.objects.exists()


# --------------------------------------------------------------------------- table pages


def test_it_shows_the_table_page_with_timeline_config(client, member, audited):
    login(client, member)
    r = client.get(f"/tables/{audited.id}/")
    html = r.content.decode()
    assert 'id="timeline-config"' in html
    assert f'"timelineUrl": "/api/tables/{audited.id}/timeline/"' in html
    assert "vendor/echarts/echarts.min.js" in html and "frontend/table.js" in html
    assert "never_existed_snapshot" in html  # open findings listed under the timeline
    assert r.context["config"]["latestVersion"] == 3


def test_it_reports_the_table_status_as_json(client, member, audited):
    login(client, member)
    data = client.get(f"/tables/{audited.id}/status/").json()
    assert data["last_seen_version"] == 3
    assert data["lag"] == 0
    assert data["open"]["critical"] == 2


def test_it_shows_isolation_matrix_hotspots_and_partitioning(client, member, audited):
    login(client, member)
    r = client.get(f"/tables/{audited.id}/analysis/")
    html = r.content.decode()
    assert r.context["isolation"]["isolation_level"] == "WriteSerializable"
    assert 'id="conflict-matrix"' in html
    assert "verdict-cannot_conflict" in html and "verdict-can_conflict" in html
    grid = r.context["matrix_grid"]
    assert grid["ops"] and all(len(cells) == len(grid["ops"]) for _, cells in grid["rows"])
    observed = sum(c["observed_pairs"] for c in r.context["matrix"]["cells"])
    assert observed >= 1  # the DELETE at v3 overlapped the append at v2
    assert 'id="partitioning"' in html and 'id="hotspots"' in html


def test_it_explains_an_unreadable_log_on_the_analysis_page(client, member, tmp_path):
    table = Table.objects.create(uri=str(tmp_path / "gone"), name="gone", last_seen_version=3)
    login(client, member)
    r = client.get(f"/tables/{table.id}/analysis/")
    assert r.status_code == 200
    assert b"cannot be analysed" in r.content


def test_it_builds_the_hotspot_heatmap():
    from frontend.views import hotspot_heatmap

    heat = hotspot_heatmap(
        [
            {"partition": "day=1", "pairs": 3, "per_day": {"2024-01-02": 2, "2024-01-01": 1}},
            {"partition": "day=2", "pairs": 1, "per_day": {"2024-01-02": 1}},
            {"partition": "day=1", "pairs": 2, "per_day": {"2024-01-02": 2}},
        ]
    )
    assert heat["partitions"] == ["day=1", "day=2"]
    assert heat["days"] == ["2024-01-01", "2024-01-02"]
    assert sorted(heat["cells"]) == [[0, 0, 1], [1, 0, 4], [1, 1, 1]]
    assert heat["max"] == 4


def test_it_shows_a_commit_with_actions_predicate_and_rechecks(client, member, audited):
    login(client, member)
    r = client.get(f"/tables/{audited.id}/commits/3/")
    html = r.content.decode()
    assert "DELETE" in html
    assert "id &gt;= 4" in html  # the predicate, raw and parsed
    assert r.context["commit"].predicate_sql
    # v2 ran concurrently; Serializable would have failed, WriteSerializable let it through.
    [concurrent] = r.context["concurrent"]
    assert concurrent["version"] == 2
    assert concurrent["verdicts"]["Serializable"] == "ConcurrentAppendException"
    assert not concurrent["verdicts"]["WriteSerializable"]
    assert f'href="/tables/{audited.id}/commits/2/"' in html
    assert "ConcurrentAppend" in html and "no conflict" in html
    kinds = {f.kind for f in r.context["findings"]}
    assert {"never_existed_snapshot", "write_serializable_reorder"} <= kinds
    assert r.context["actions"]["removes_total"] >= 1  # the DELETE rewrote files
    assert "commitInfo" in html and escape('"operation": "DELETE"') in html


def test_it_lists_findings_of_related_commits_and_later_in_flight_commits(client, member, audited):
    login(client, member)
    r = client.get(f"/tables/{audited.id}/commits/2/")
    kinds = {f.kind for f in r.context["findings"]}
    assert "never_existed_snapshot" in kinds  # v2 is a related version of it
    assert [c["version"] for c in r.context["later"]] == [3]
    assert r.context["later"][0]["verdicts"]["Serializable"] == "ConcurrentAppendException"


def test_it_shows_a_commit_whose_log_file_vanished(client, member, audited):
    (Path(audited.uri) / "_delta_log" / f"{1:020d}.json").unlink()
    login(client, member)
    r = client.get(f"/tables/{audited.id}/commits/1/")
    assert r.status_code == 200
    assert b"could not be read" in r.content


# --------------------------------------------------------------------------- findings


def test_it_filters_findings(client, member, audited, tmp_path):
    login(client, member)
    r = client.get("/findings/")
    kinds = {f.kind for f in r.context["page"]}
    assert {"never_existed_snapshot", "write_serializable_reorder"} <= kinds
    r = client.get("/findings/?kind=never_existed_snapshot")
    assert {f.kind for f in r.context["page"]} == {"never_existed_snapshot"}
    r = client.get("/findings/?severity=info")
    assert all(f.severity == "info" for f in r.context["page"])
    other = Table.objects.create(uri=str(tmp_path / "other"), name="other")
    r = client.get(f"/findings/?table={other.id}")
    assert list(r.context["page"]) == []
    r = client.get(f"/findings/?table={audited.id}&severity=critical")
    assert len(r.context["page"]) == 2
    r = client.get("/findings/?status=resolved")
    assert list(r.context["page"]) == []


def test_it_shows_a_finding_with_explanation_and_witness_rows(client, member, never_existed):
    login(client, member)
    r = client.get(f"/findings/{never_existed.id}/")
    html = r.content.decode()
    assert escape(never_existed.summary) in html
    assert 'id="witness-table"' in html
    table = r.context["witness_table"]
    assert "id" in table["columns"]
    ids = {row[table["columns"].index("id")] for row in table["rows"]}
    assert ids == {10, 11}  # the appended rows the stale DELETE should have removed
    assert f'href="/tables/{never_existed.table_id}/commits/2/"' in html
    assert "Acknowledge" not in html  # read-only users get no buttons


def test_it_acknowledges_and_reopens_a_finding(client, owner, never_existed):
    login(client, owner)
    url = f"/findings/{never_existed.id}/"
    assert b"Acknowledge" in client.get(url).content
    r = client.post(f"{url}acknowledge/")
    assert r.status_code == 302 and r["Location"] == url
    never_existed.refresh_from_db()
    assert never_existed.acknowledged_by == owner
    assert never_existed.acknowledged_at is not None
    assert never_existed.status == "open"  # the audit still sees it; it is just acknowledged
    assert b"acknowledged by alice" in client.get(url).content
    listed = client.get("/findings/").context["page"]
    assert never_existed.id not in {f.id for f in listed}
    acked = client.get("/findings/?status=acknowledged").context["page"]
    assert [f.id for f in acked] == [never_existed.id]

    r = client.post(f"{url}reopen/")
    assert r.status_code == 302
    never_existed.refresh_from_db()
    assert never_existed.acknowledged_at is None and never_existed.acknowledged_by is None
    assert never_existed.id in {f.id for f in client.get("/findings/").context["page"]}


def test_it_forbids_read_only_users_to_acknowledge(client, member, outsider, never_existed):
    for user in (member, outsider):
        login(client, user)
        url = f"/findings/{never_existed.id}/"
        assert client.post(f"{url}acknowledge/").status_code == 403
        assert client.post(f"{url}reopen/").status_code == 403
    never_existed.refresh_from_db()
    assert never_existed.acknowledged_at is None


def test_it_requires_post_and_csrf_to_acknowledge(owner, never_existed):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    url = f"/findings/{never_existed.id}/acknowledge/"
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403  # no CSRF token
    never_existed.refresh_from_db()
    assert never_existed.acknowledged_at is None


def test_it_counts_acknowledged_findings_out_of_the_overview(client, owner, audited):
    Finding.objects.filter(table=audited).update(
        acknowledged_by=owner, acknowledged_at=timezone.now()
    )
    login(client, owner)
    page = client.get("/").context["page"]
    assert page[0].n_critical == 0


# --------------------------------------------------------------------------- explainer


def test_it_explains_a_pasted_exception_without_a_table(client, member):
    login(client, member)
    text = (DATA / "databricks_append_real_commit.txt").read_text()
    r = client.post("/explain/", {"text": text})
    assert r.status_code == 200
    result = r.context["result"]
    assert result["exception"] == "ConcurrentAppendException"
    assert b"ConcurrentAppendException" in r.content
    assert result["fixes"]


def test_it_explains_an_exception_against_a_table_with_commit_links(client, member, audited):
    login(client, member)
    text = (
        "io.delta.exceptions.ConcurrentAppendException: Files were added to the root of the "
        "table by a concurrent update. Please try the operation again.\n"
        'Conflicting commit: {"version":2,"timestamp":1700000000000,"operation":"WRITE",'
        '"operationParameters":{"mode":"Append"},"isBlindAppend":true}'
    )
    r = client.post("/explain/", {"text": text, "table": audited.id})
    html = r.content.decode()
    assert r.context["result"]["conflicting_version"] == 2
    assert f'id="conflicting-link" href="/tables/{audited.id}/commits/2/"' in html
    assert 3 in r.context["result"]["likely_peer_versions"]
    assert f'href="/tables/{audited.id}/commits/3/"' in html


def test_it_says_when_a_text_is_not_a_conflict(client, member):
    login(client, member)
    text = (DATA / "not_delta_python.txt").read_text()
    r = client.post("/explain/", {"text": text})
    assert r.context["result"]["exception"] is None
    assert b"Not a conflict exception" in r.content


def test_it_requires_text_to_explain(client, member):
    login(client, member)
    r = client.post("/explain/", {"text": ""})
    assert r.context["result"] is None
    assert b"errorlist" in r.content


def test_it_preselects_the_table_on_the_explainer(client, member, audited):
    login(client, member)
    r = client.get(f"/explain/?table={audited.id}")
    assert f'<option value="{audited.id}" selected>'.encode() in r.content


def test_it_shows_an_appended_commit_live_in_the_status(client, member, audited):
    write_deltalake(audited.uri, scenarios.rows("2024-01-01", [70]), mode="append")
    tail_once(audited.id)
    login(client, member)
    assert client.get(f"/tables/{audited.id}/status/").json()["last_seen_version"] == 4


def test_it_shows_the_risk_score_when_the_scorer_set_one(client, member, audited):
    login(client, member)
    Table.objects.filter(id=audited.id).update(risk=9.5)
    html = client.get("/").content.decode()
    assert "risk-low" in html and "low · 10" in html  # the score wins over the findings
    Table.objects.filter(id=audited.id).update(risk=79.8)
    assert "high · 80" in client.get("/").content.decode()
    assert "high risk · 80" in client.get(f"/tables/{audited.id}/").content.decode()
