"""Alert channels and rules belong to projects: members read their project's, owners and staff
manage them and read the recipients, a rule alerts only on its own project's tables through its
own project's channels, deliveries are seen per project, and existing rows migrate into the
default project."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.alerting import delivery
from audit.alerting.health_findings import evaluate_health_rules
from audit.alerting.models import HIDDEN_ERROR, AlertRule, Channel, Delivery
from audit.models import Finding
from tests.support.alerting import SECRET, make_table, open_finding, rule_for
from tests.support.clients import session_client, token_client
from tests.support.projects import into, join, project

pytestmark = pytest.mark.django_db

HOOK = "https://hooks.example.org/services/T0/B0/FinanceHookToken42"
MAIL = "oncall-finance@corp.example"


@pytest.fixture
def finance(django_user_model, settings) -> dict:
    """Project "finance": a table, a webhook and an e-mail channel with an error, a rule; a
    viewer, a member and an owner of it, and an owner of "people" only."""
    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = True
    fin = project("finance")
    hook = Channel.objects.create(
        project=fin, name="fin hook", kind="webhook", config={"url": HOOK, "secret": SECRET},
        last_error=f"ConnectionError: POST {HOOK} failed",
    )  # fmt: skip
    mail = Channel.objects.create(
        project=fin, name="fin mail", kind="email", config={"emails": [MAIL]}
    )
    rule = rule_for(hook, mail, name="fin rule", table_pattern="ledger*", project=fin)
    users = {}
    for role in ("viewer", "member", "owner"):
        made = django_user_model.objects.create_user(f"fin-{role}", password="password")
        users[role] = join(made, "finance", role)
    made = django_user_model.objects.create_user("hr-owner", password="password")
    users["stranger"] = join(made, "people", "owner")
    ledger = into(make_table("ledger", "/lake/fin/ledger"), "finance")
    return {"project": fin, "hook": hook, "mail": mail, "rule": rule, "ledger": ledger, **users}


def _channels(client) -> dict[str, dict]:
    return {c["name"]: c for c in client.get("/api/alerts/channels/").json()}


# --------------------------------------------------------------------------- visibility


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_members_read_their_projects_channels_without_recipients(finance, role):
    api = token_client(finance[role])
    seen = _channels(api)
    assert set(seen) == {"fin hook", "fin mail"}
    assert seen["fin hook"]["url"] == "https://hooks.example.org/…"
    assert seen["fin mail"]["emails"] == ["…@corp.example"]
    assert seen["fin hook"]["last_error"] == HIDDEN_ERROR
    assert seen["fin hook"]["project"] == "finance"
    rules = api.get("/api/alerts/rules/").json()
    assert [(r["name"], r["table_pattern"]) for r in rules] == [("fin rule", "ledger*")]
    page = session_client(finance[role]).get("/alerts/").content.decode()
    assert "fin hook" in page and "ledger*" in page
    for text in (MAIL, "FinanceHookToken42", "Send test", "New channel"):
        assert text not in page, text


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owners_and_staff_read_the_recipients(finance, admin, who):
    user = admin if who == "admin" else finance[who]
    seen = _channels(session_client(user))
    assert seen["fin hook"]["url"] == HOOK and seen["fin mail"]["emails"] == [MAIL]
    assert "FinanceHookToken42" in seen["fin hook"]["last_error"]
    page = session_client(user).get("/alerts/").content.decode()
    assert "Send test" in page and "New channel" in page
    edit = session_client(user).get(f"/alerts/channels/{finance['mail'].id}/").content.decode()
    assert MAIL in edit


def test_another_projects_alerting_is_not_there(finance):
    stranger = token_client(finance["stranger"])
    assert stranger.get("/api/alerts/channels/").json() == []
    assert stranger.get("/api/alerts/rules/").json() == []
    for path in (f"channels/{finance['hook'].id}/", f"rules/{finance['rule'].id}/"):
        assert stranger.get(f"/api/alerts/{path}").status_code == 404
        assert stranger.delete(f"/api/alerts/{path}").status_code == 404
    assert stranger.post(f"/api/alerts/channels/{finance['hook'].id}/test/").status_code == 404
    pages = session_client(finance["stranger"])
    body = pages.get("/alerts/").content.decode()
    assert "fin hook" not in body and "ledger*" not in body and MAIL not in body
    assert pages.get(f"/alerts/channels/{finance['mail'].id}/").status_code == 404
    assert pages.post(f"/alerts/rules/{finance['rule'].id}/delete/").status_code == 404
    assert AlertRule.objects.filter(id=finance["rule"].id).exists()


# --------------------------------------------------------------------------- managing


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_only_owners_change_a_projects_alerting(finance, role):
    api = token_client(finance[role])
    hook = finance["hook"].id
    assert (
        api.patch(f"/api/alerts/channels/{hook}/", {"name": "x"}, format="json").status_code == 403
    )
    assert api.post(f"/api/alerts/channels/{hook}/test/").status_code == 403
    body = {"project": "finance", "name": "m", "kind": "email", "emails": ["a@b.example"]}
    assert api.post("/api/alerts/channels/", body, format="json").status_code == 403
    pages = session_client(finance[role])
    assert pages.get(f"/alerts/channels/{hook}/").status_code == 403
    assert pages.get("/alerts/rules/new/").status_code == 403
    assert Channel.objects.get(id=hook).name == "fin hook"


def test_an_owner_manages_their_project_and_no_other(finance):
    api = token_client(finance["owner"])
    body = {"project": "finance", "name": "pager", "kind": "email", "emails": ["p@corp.example"]}
    made = api.post("/api/alerts/channels/", body, format="json")
    assert made.status_code == 201 and made.json()["project"] == "finance"
    assert Channel.objects.get(name="pager").project_id == finance["project"].id
    # A project they do not see answers as one that does not exist.
    for name in ("people", "no-such-project"):
        answer = api.post("/api/alerts/channels/", {**body, "project": name}, format="json")
        assert (answer.status_code, answer.json()["error"]) == (404, "no such project")
    moved = api.patch(
        f"/api/alerts/channels/{finance['hook'].id}/", {"project": "people"}, format="json"
    )
    assert (
        moved.status_code == 404 and Channel.objects.get(name="fin hook").project.name == "finance"
    )
    page = session_client(finance["owner"]).post(
        "/alerts/channels/new/",
        {"project": project("people").id, "name": "x", "kind": "email", "emails": "x@y.example"},
    )
    assert page.status_code == 200 and not Channel.objects.filter(name="x").exists()


def test_a_rule_sends_only_through_channels_of_its_own_project(finance, admin):
    theirs = Channel.objects.create(
        project=project("people"), name="hr", kind="email", config={"emails": ["hr@x.example"]}
    )
    owner = token_client(finance["owner"])
    rule = {"project": "finance", "name": "r", "channels": [theirs.id]}
    ghost = {**rule, "channels": [theirs.id + 1000]}
    refused = owner.post("/api/alerts/rules/", rule, format="json")
    missing = owner.post("/api/alerts/rules/", ghost, format="json")
    # Another project's channel is refused as a channel that does not exist (no oracle).
    assert refused.status_code == 400
    assert refused.content == missing.content.replace(
        str(theirs.id + 1000).encode(), str(theirs.id).encode()
    )
    # Staff see both projects: the mix is refused by name.
    mixed = token_client(admin).post(
        "/api/alerts/rules/", {**rule, "channels": [theirs.id, finance["hook"].id]}, format="json"
    )
    assert mixed.status_code == 400 and "own project" in mixed.json()["error"]
    page = session_client(admin).post(
        "/alerts/rules/new/",
        {"project": finance["project"].id, "name": "p", "min_severity": "warning",
         "channels": [theirs.id], "enabled": "on"},
    )  # fmt: skip
    assert page.status_code == 200 and "own project" in page.content.decode()
    assert not AlertRule.objects.filter(name__in=["r", "p"]).exists()


# --------------------------------------------------------------------------- matching


def test_a_rule_alerts_only_on_its_own_projects_tables(finance):
    finance["rule"].table_pattern = ""  # every table... of its project
    finance["rule"].save()
    # The same name and URI pattern in another project: still not the rule's.
    theirs = into(make_table("ledger_hr", "/lake/hr/ledger"), "people")
    open_finding(theirs)
    delivery.scan()
    assert not Delivery.objects.exists()
    mine = open_finding(finance["ledger"])
    delivery.scan()
    assert {d.finding_id for d in Delivery.objects.all()} == {mine.id}
    assert Delivery.objects.count() == 2  # the rule's two channels


def test_a_health_rule_watches_only_its_own_projects_tables(finance):
    rule_for(
        finance["hook"], name="files", project=finance["project"],
        health_metric="small_files", threshold=1, min_severity="info",
    )  # fmt: skip
    theirs = into(make_table("hr_files", "/lake/hr/files"), "people")
    assert evaluate_health_rules(theirs, {"small_files": 50, "version": 3}) == (0, 0)
    assert not Finding.objects.filter(table=theirs).exists()
    opened, _ = evaluate_health_rules(finance["ledger"], {"small_files": 50, "version": 3})
    assert opened == 1


def test_deliveries_are_seen_per_project(finance):
    theirs = Channel.objects.create(
        project=project("people"), name="hr", kind="email", config={"emails": ["hr@x.example"]}
    )
    for channel in (theirs, finance["mail"]):
        Delivery.objects.create(channel=channel, is_test=True, next_attempt_at=timezone.now())
    seen = token_client(finance["viewer"]).get("/api/alerts/deliveries/").json()["results"]
    assert [d["channel"] for d in seen] == [finance["mail"].id]
    seen = token_client(finance["stranger"]).get("/api/alerts/deliveries/").json()["results"]
    assert [d["channel"] for d in seen] == [theirs.id]


# --------------------------------------------------------------------------- migration


@pytest.mark.django_db(transaction=True)
def test_the_migration_puts_existing_channels_and_rules_into_the_default_project():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = ("alerting", "0003_publish_lag"), ("alerting", "0004_projects")
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps
        channel = old.get_model("alerting", "Channel").objects.create(name="c", kind="email")
        old.get_model("alerting", "AlertRule").objects.create(name="r").channels.add(channel)
        executor = MigrationExecutor(connection)
        executor.migrate([after])
        new = executor.loader.project_state([after]).apps
        for name in ("Channel", "AlertRule"):
            row = new.get_model("alerting", name).objects.get()
            assert (
                new.get_model("audit", "Project").objects.get(pk=row.project_id).name == "default"
            )
    finally:
        MigrationExecutor(connection).migrate(leaves)
