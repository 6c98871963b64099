"""Projects: roles (viewer, member, owner, staff), the commands, read-only tokens, the migration
into the default project, the log-reading throttles, and /metrics per token."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from audit.api.authentication import forget_tokens
from audit.models import ApiToken, Finding, Membership, Table
from tests.support import scenarios
from tests.support.alerting import make_table, open_finding
from tests.support.clients import session_client, token_client
from tests.support.ingested import ingest_table
from tests.support.projects import into, join

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(fresh_cache) -> Table:
    """A table of the project "people", with one open finding."""
    table = into(make_table("salaries", "/lake/hr/salaries"), "people")
    open_finding(table)
    return table


@pytest.fixture
def users(django_user_model) -> dict:
    def user(name: str, role: str | None):
        made = django_user_model.objects.create_user(name, password="password")
        return join(made, "people", role) if role else made

    return {role: user(f"u-{role}", role) for role in ("viewer", "member", "owner")} | {
        "stranger": user("u-stranger", None)
    }


# --------------------------------------------------------------------------- roles


@pytest.mark.parametrize("role, status", [("viewer", 403), ("member", 200), ("owner", 200)])
def test_it_lets_members_and_owners_acknowledge_and_viewers_not(people, users, role, status):
    finding = Finding.objects.get(table=people)
    client = token_client(users[role])
    assert client.post(f"/api/findings/{finding.id}/acknowledge/").status_code == status
    assert client.post(f"/api/findings/{finding.id}/reopen/").status_code == status
    page = session_client(users[role])
    assert page.post(f"/findings/{finding.id}/acknowledge/").status_code in (
        {403} if status == 403 else {302}
    )


def test_it_hides_a_finding_from_non_members_on_acknowledge(people, users):
    finding = Finding.objects.get(table=people)
    client = token_client(users["stranger"])
    assert client.post(f"/api/findings/{finding.id}/acknowledge/").status_code == 404
    assert (
        session_client(users["stranger"]).post(f"/findings/{finding.id}/acknowledge/").status_code
        == 404
    )
    finding.refresh_from_db()
    assert finding.acknowledged_at is None


@pytest.mark.parametrize("role, status", [("viewer", 403), ("member", 403), ("owner", 204)])
def test_it_lets_only_owners_remove_a_projects_table(people, users, role, status):
    response = token_client(users[role]).delete(f"/api/tables/{people.id}/")
    assert response.status_code == status
    assert Table.objects.filter(id=people.id).exists() == (status != 204)


def test_it_lets_owners_register_into_their_project_only(
    people, users, delta_table_factory, monkeypatch
):
    from workers.tasks import tail_table

    monkeypatch.setattr(tail_table, "apply_async", lambda *a, **k: None)
    path = delta_table_factory("newhr")
    owner = token_client(users["owner"])
    body = {"uri": str(path), "project": "people"}
    assert token_client(users["member"]).post("/api/tables/", body).status_code == 403
    assert owner.post("/api/tables/", {**body, "project": "default"}).status_code == 404
    created = owner.post("/api/tables/", body)
    assert created.status_code == 201
    assert Table.objects.get(id=created.json()["id"]).project.name == "people"


def test_staff_see_and_change_every_project(people, admin):
    finding = Finding.objects.get(table=people)
    client = token_client(admin)
    assert client.get(f"/api/tables/{people.id}/").status_code == 200
    assert client.post(f"/api/findings/{finding.id}/acknowledge/").status_code == 200


# --------------------------------------------------------------------------- tokens


def test_it_refuses_unsafe_methods_to_a_read_only_token(people, users):
    finding = Finding.objects.get(table=people)
    client = token_client(users["owner"])
    token = Token.objects.get(user=users["owner"])
    ApiToken.objects.create(token=token, read_only=True)
    forget_tokens()
    assert client.get(f"/api/findings/{finding.id}/").status_code == 200
    response = client.post(f"/api/findings/{finding.id}/acknowledge/")
    assert response.status_code == 403 and "read-only" in response.json()["error"]
    assert client.delete(f"/api/tables/{people.id}/").status_code == 403
    assert Table.objects.filter(id=people.id).exists()


def test_the_api_token_command_marks_a_token_read_only(users, capsys):
    call_command("api_token", "u-owner", "--read-only")
    out = capsys.readouterr().out
    key = out.split()[0]
    assert "(read-only)" in out and ApiToken.objects.get(token_id=key).read_only
    call_command("api_token", "u-owner", "--read-write")
    assert "(read-write)" in capsys.readouterr().out
    assert not ApiToken.objects.get(token_id=key).read_only


# --------------------------------------------------------------------------- commands


def test_add_table_puts_a_table_into_the_named_project(delta_table_factory, capsys):
    path = delta_table_factory("ledger")
    call_command("add_table", str(path), "--name", "ledger", "--project", "finance")
    assert "in project 'finance'" in capsys.readouterr().out
    assert Table.objects.get(name="ledger").project.name == "finance"
    other = delta_table_factory("plain")
    call_command("add_table", str(other))
    assert Table.objects.get(uri=str(other)).project.name == "default"
    call_command("add_table", str(path))  # again, no project named: it stays in finance
    assert Table.objects.get(name="ledger").project.name == "finance"


def test_project_member_gives_changes_and_takes_a_role(users, capsys):
    call_command("project_member", "finance", "u-stranger", "--role", "member")
    membership = Membership.objects.get(user=users["stranger"])
    assert membership.project.name == "finance" and membership.role == "member"
    call_command("project_member", "finance", "u-stranger", "--role", "owner")
    assert Membership.objects.get(user=users["stranger"]).role == "owner"
    call_command("project_member", "finance", "u-stranger", "--remove")
    assert not Membership.objects.filter(user=users["stranger"]).exists()
    with pytest.raises(SystemExit):
        call_command("project_member", "finance", "nobody")
    with pytest.raises(Exception, match="invalid choice"):
        call_command("project_member", "finance", "u-stranger", "--role", "god")


def test_discovery_registers_into_the_roots_project(tmp_path, settings):
    from audit.tail.discovery import discover

    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_DISCOVERY_PROJECTS = [f"{tmp_path / 'hr'}=people"]
    scenarios.build_sequential(str(tmp_path / "hr" / "salaries"))
    discover(str(tmp_path / "hr"), register=True)
    assert Table.objects.get().project.name == "people"
    scenarios.build_sequential(str(tmp_path / "misc" / "events"))
    discover(str(tmp_path / "misc"), register=True, project="ops")
    assert Table.objects.get(name="events").project.name == "ops"


# --------------------------------------------------------------------------- migration


@pytest.mark.django_db(transaction=True)
def test_the_migration_puts_every_existing_table_into_the_default_project():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = ("audit", "0008_finding_attention_indexes"), ("audit", "0009_teams")
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps.get_model("audit", "Table")
        old.objects.create(uri="/lake/old", name="old")
        executor = MigrationExecutor(connection)
        executor.migrate([after])
        new = executor.loader.project_state([after]).apps
        table = new.get_model("audit", "Table").objects.get(uri="/lake/old")
        assert new.get_model("audit", "Project").objects.get(pk=table.project_id).name == "default"
    finally:
        MigrationExecutor(connection).migrate(leaves)


# --------------------------------------------------------------------------- throttles


@pytest.fixture
def reorder(tmp_path, settings, fresh_cache) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    scenarios.build_ws_reorder_matching(str(tmp_path / "reorder"))
    return ingest_table(tmp_path / "reorder", name="reorder")


@pytest.mark.parametrize("sub", ["writers/", "diff/?from=1&to=3", "health/?version=2"])
def test_it_throttles_every_read_of_a_log(reorder, member, settings, sub):
    settings.AUDIT_API_EXPENSIVE_RATE = "2/minute"
    client = token_client(member)
    url = f"/api/tables/{reorder.id}/{sub}"
    assert [client.get(url).status_code for _ in range(3)] == [200, 200, 429]


# --------------------------------------------------------------------------- metrics


def test_metrics_by_a_users_token_report_only_their_projects_tables(people, users, settings):
    settings.METRICS_TOKEN = "metrics-token-0123456789"
    ledger = into(make_table("ledger", "/lake/fin/ledger"), "finance")
    open_finding(ledger)
    key = Token.objects.create(user=users["viewer"]).key
    from django.test import Client

    mine = Client().get("/metrics", HTTP_AUTHORIZATION=f"Token {key}").content
    assert b'table="salaries"' in mine and b"ledger" not in mine
    everything = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token-0123456789")
    assert b"ledger" in everything.content and b"salaries" in everything.content
    stranger = Token.objects.create(user=users["stranger"]).key
    theirs = Client().get("/metrics", HTTP_AUTHORIZATION=f"Token {stranger}").content
    assert b"salaries" not in theirs and b"ledger" not in theirs


def test_moving_a_table_between_projects_shows_at_once_in_cached_lists(people, users, settings):
    settings.AUDIT_API_LIST_CACHE_SECONDS = 60
    settings.AUDIT_PAGE_CACHE_SECONDS = 60
    ledger = into(make_table("ledger", "/lake/fin/ledger"), "finance")
    open_finding(ledger)
    client = token_client(users["viewer"])
    page = session_client(users["viewer"])
    assert [t["name"] for t in client.get("/api/tables/").json()["results"]] == ["salaries"]
    assert b"ledger" not in page.get("/").content
    findings = {f["table"] for f in client.get("/api/findings/").json()["results"]}
    assert findings == {people.id}
    into(ledger, "people")
    findings = {f["table"] for f in client.get("/api/findings/").json()["results"]}
    assert findings == {people.id, ledger.id}
    assert {t["name"] for t in client.get("/api/tables/").json()["results"]} == {
        "salaries",
        "ledger",
    }
    assert b"ledger" in page.get("/").content
    into(ledger, "finance")
    assert [t["name"] for t in client.get("/api/tables/").json()["results"]] == ["salaries"]


@pytest.mark.parametrize("url", ["/api/tables/", "/", "/findings/"])
def test_it_asks_a_readers_projects_once_a_request(client, member, settings, url):
    """A cold list needs the reader's projects for its cache key and for its rows: one query
    (access.projects), and still the reader's own (not another user's) projects."""
    settings.AUDIT_API_LIST_CACHE_SECONDS = 0
    settings.AUDIT_PAGE_CACHE_SECONDS = 0
    Table.objects.create(uri="/lake/mine", name="mine", status="ok")
    client.force_login(member)
    with CaptureQueriesContext(connection) as queries_run:
        response = client.get(url)
    assert response.status_code == 200 and b"mine" in response.content
    asked = [q["sql"] for q in queries_run.captured_queries if "audit_membership" in q["sql"]]
    assert len(asked) == 1, asked


@pytest.mark.parametrize("route", ["commits/", "health/", "health/history/", "changes/"])
def test_it_reads_a_table_routes_row_and_the_readers_projects_once(people, users, route, settings):
    """A route under /api/tables/{id}/ checks access (the table's project against the reader's
    projects) and then reads the table's row: one read of each, not a project query, a
    membership query, the row, and the memberships again; an outsider still gets a 404.
    Caches off: the cold path, where the fast path (a cache hit) does not answer."""
    settings.AUDIT_API_LIST_CACHE_SECONDS = 0
    url = f"/api/tables/{people.id}/{route}"
    reader, stranger = token_client(users["viewer"]), token_client(users["stranger"])
    with CaptureQueriesContext(connection) as queries_run:
        response = reader.get(url)
    assert response.status_code in (200, 404, 409)
    if response.status_code == 404:  # no stored health for this table: said, not hidden
        assert "No Table matches" not in response.content.decode()
    sql = [q["sql"] for q in queries_run.captured_queries]
    assert len([q for q in sql if "audit_membership" in q]) == 1, "\n".join(sql)
    table_reads = [q for q in sql if q.startswith("SELECT") and 'FROM "audit_table"' in q]
    assert len(table_reads) == 1, table_reads
    refused = stranger.get(url)
    assert refused.status_code == 404 and "No Table matches" in refused.content.decode()


def test_a_fast_path_miss_and_its_view_read_the_readers_projects_once(people, users, settings):
    """With the caches on, a miss of the fast path (it checks access before it looks) goes on
    to the view, which asks the same request's projects: one membership query for both."""
    settings.AUDIT_API_LIST_CACHE_SECONDS = 60
    settings.AUDIT_API_FAST_PATH = True
    reader = token_client(users["viewer"])
    with CaptureQueriesContext(connection) as queries_run:
        assert reader.get(f"/api/tables/{people.id}/commits/").status_code == 200
    sql = [q["sql"] for q in queries_run.captured_queries]
    assert len([q for q in sql if "audit_membership" in q]) == 1, "\n".join(sql)
    stranger = token_client(users["stranger"])
    assert stranger.get(f"/api/tables/{people.id}/commits/").status_code == 404


@pytest.mark.parametrize("by_table", [False, True])
def test_it_reads_a_findings_lists_readers_projects_once(people, users, settings, by_table):
    """The findings list asks the reader's projects for `?table=`'s check, for its rows and
    for its cache key: one query, and the lists stay the reader's own."""
    settings.AUDIT_API_LIST_CACHE_SECONDS = 0
    url = f"/api/findings/?table={people.id}" if by_table else "/api/findings/"
    reader, stranger = token_client(users["viewer"]), token_client(users["stranger"])
    with CaptureQueriesContext(connection) as queries_run:
        response = reader.get(url)
    assert response.status_code == 200
    assert {f["table"] for f in response.json()["results"]} == {people.id}
    sql = [q["sql"] for q in queries_run.captured_queries]
    assert len([q for q in sql if "audit_membership" in q]) == 1, "\n".join(sql)
    refused = stranger.get(url)
    if by_table:
        assert refused.status_code == 404
    else:
        assert refused.status_code == 200 and refused.json()["results"] == []


def test_it_lists_a_readers_tables_as_the_orm_does(people, users):
    """`visible.table_ids_in` (plain SQL compiled once per number of projects) names exactly
    the tables the ORM finds in those projects: none, one, several, every one (staff)."""
    from audit.models import Project
    from audit.reads import visible
    from audit.trust import access

    into(make_table("payroll", "/lake/hr/payroll"), "people")
    into(make_table("orders", "/lake/shop/orders"), "shop")
    make_table("loose", "/lake/loose")
    every = frozenset(Project.objects.values_list("id", flat=True))
    people_only = frozenset({people.project_id})
    for projects in (frozenset(), people_only, every, every | {10**9}):
        want = sorted(Table.objects.filter(project_id__in=projects).values_list("id", flat=True))
        assert visible.table_ids_in(projects) == want, projects
    assert len(visible.table_ids_in(people_only)) == 2
    assert visible.table_ids_in(None) is None
    for role in ("owner", "stranger"):
        seen = visible.table_ids_in(access.projects(users[role]))
        assert (people.id in seen) == (role == "owner")
