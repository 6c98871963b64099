"""Every routed page and API endpoint, walked as a member of another project.

Two projects: "finance" (erin is a member) and "people" (frank is a member). The people table,
its findings (their summaries), its incidents (their headlines), a witness row, its alert channel (name and recipients) and rule
(name and table pattern) carry the marker `hrsecret`. The routes come
from the URL resolver, so a new route cannot escape the walk: a route with a parameter this
module does not know fails it. Bodies are warmed first by frank (the cached API bodies, the
fast path, the cached pages), then read by erin:

- a route naming the people table, one of its findings or incidents, deliveries, alert rules or
  channels
  answers erin 404 on every method (and frank not 404 on GET, so the 404 is about the project, not the URL);
- no body erin gets (lists, counts, pages, /metrics, the schema) holds the marker.
"""

from __future__ import annotations

import re

import pytest
from django.urls import get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from audit.alerting.models import Channel, Delivery
from audit.models import Finding, Incident, Table
from tests.support import scenarios
from tests.support.alerting import rule_for, webhook
from tests.support.clients import session_client, token_client
from tests.support.ingested import ingest_table
from tests.support.projects import into, join
from tests.support.routes import routes, url_of

MARKER = b"hrsecret"
# The parameters of routes that name one of the people project's objects.
PROJECT_OBJECTS = {
    "table_id",
    "finding_id",
    "tables/pk",
    "findings/pk",
    "incidents/pk",
    "deliveries/pk",
    "rules/pk",
    "rule_id",
    "channels/pk",
    "channel_id",
    "incident_id",
}


@pytest.fixture
def lake(tmp_path, settings, django_user_model, fresh_cache):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    for name in ("AUDIT_API_LIST_CACHE_SECONDS", "AUDIT_PAGE_CACHE_SECONDS"):
        setattr(settings, name, 60)
    settings.AUDIT_API_FAST_PATH = True
    settings.AUDIT_API_EXPENSIVE_RATE = None
    scenarios.build_ws_reorder_matching(str(tmp_path / "ledger"))
    scenarios.build_ws_reorder_matching(str(tmp_path / "hrsecretdir"))
    ledger = into(ingest_table(tmp_path / "ledger", name="ledger"), "finance")
    people = into(ingest_table(tmp_path / "hrsecretdir", name="hrsecrettable"), "people")
    findings = Finding.objects.filter(table=people)
    assert findings.exists()
    findings.update(
        summary="hrsecretsummary: a stale delete",
        witness={"row_count": 1, "sample_rows": [{"name": "hrsecretrow"}], "files": []},
    )
    incidents = Incident.objects.filter(table=people)
    assert incidents.exists()
    incidents.update(headline="hrsecretheadline: one stale writer")
    incident = incidents.first()
    Table.bump_findings(people.id)
    erin = join(django_user_model.objects.create_user("erin", password="password"), "finance")
    frank = join(
        django_user_model.objects.create_user("frank", password="password"), "people", "member"
    )
    channel = webhook("http://127.0.0.1:9/hrsecrethook", name="hrsecret ops")
    channel.project = frank.memberships.get().project
    channel.save()
    rule = rule_for(
        channel, name="hrsecret rule", table_pattern="hrsecret*", project=channel.project
    )
    # Erin's own project has alerting too: the lists are not merely empty for her.
    mine = Channel.objects.create(
        name="finance mail", kind="email", config={"emails": ["oncall@finance.example"]},
        project=erin.memberships.get().project,
    )  # fmt: skip
    rule_for(mine, name="finance rule", project=mine.project)
    delivery = Delivery.objects.create(
        finding=findings.first(),
        rule=rule,
        channel=channel,
        severity="warning",
        next_attempt_at=timezone.now(),
    )
    return {
        "ledger": ledger,
        "people": people,
        "erin": erin,
        "frank": frank,
        "values": {
            "table_id": people.id,
            "tables/pk": people.id,
            "finding_id": findings.first().id,
            "findings/pk": findings.first().id,
            "deliveries/pk": delivery.id,
            "rules/pk": rule.id,
            "rule_id": rule.id,
            "channels/pk": channel.id,
            "channel_id": channel.id,
            "incidents/pk": incident.id,
            "incident_id": incident.id,
            "version": 3,
            "format": "json",
            "rest": f"tables/{people.id}/nothing/",
        },
    }


def test_it_walks_every_route_as_a_member_of_another_project(lake):
    erin, frank = lake["erin"], lake["frank"]
    as_erin = [token_client(erin), session_client(erin)]
    as_frank = [token_client(frank), session_client(frank)]
    walked = 0
    for route in routes():
        url, used = url_of(route, lake["values"])
        if url == "/logout/":
            continue  # would end the session clients' login
        names_object = bool(used & PROJECT_OBJECTS)
        # The same route naming objects that do not exist: what erin must get instead.
        ghost, _ = url_of(route, {**lake["values"], **dict.fromkeys(PROJECT_OBJECTS, 999999)})
        # Tokens only reach the API (and /metrics); pages need the login.
        token_too = url.startswith(("/api/", "/metrics"))
        for warm, client in list(zip(as_frank, as_erin, strict=True))[0 if token_too else 1 :]:
            frank_status = warm.get(url).status_code  # fills the caches first
            response = client.get(url)
            assert MARKER not in response.content.lower(), (url, response.status_code)
            if not names_object:
                assert response.status_code < 500, (url, response.status_code)
                continue
            if frank_status == 405:  # a POST-only route (acknowledge, re-open)
                frank_status = warm.post(url).status_code
            assert frank_status not in (404, 405), (url, "the walk does not reach the object")
            for method in ("get", "post", "put", "patch", "delete"):
                status = getattr(client, method)(url).status_code
                # As if it did not exist: a 404, or the 405 a route without the method gives.
                assert status in (404, 405), (url, method, status)
                assert status == getattr(client, method)(ghost).status_code, (url, method)
        walked += 1
    assert walked > 60


@pytest.mark.parametrize(
    "url",
    [
        "/api/tables/",
        "/api/tables/?ordering=open_findings",
        "/api/findings/",
        "/api/findings/?severity=critical&acknowledged=false",
        "/api/findings/?status=open",
        "/api/alerts/deliveries/",
        "/api/alerts/rules/",
        "/api/alerts/channels/",
        "/metrics",
        "/",
        "/findings/",
        "/findings/?status=all",
        "/alerts/",
        "/explain/",
    ],
)
def test_it_keeps_the_other_projects_rows_out_of_every_list(lake, url):
    ledger = lake["ledger"]
    pairs = [(session_client(lake["frank"]), session_client(lake["erin"]))]
    if url.startswith(("/api/", "/metrics")):  # tokens reach the API and /metrics only
        pairs.insert(0, (token_client(lake["frank"]), token_client(lake["erin"])))
    for warm, client in pairs:
        theirs = (MARKER, f'"table":{lake["people"].id},'.encode())
        seen = warm.get(url).content.lower()  # fills the caches first
        assert any(mark in seen for mark in theirs) or url == "/explain/", url
        body = client.get(url)
        assert body.status_code == 200
        assert not any(mark in body.content.lower() for mark in theirs), url
        # ... and still holds the reader's own project's rows.
        own = f'"table":{ledger.id}'.encode() if url.startswith("/api/findings") else b"ledger"
        if url.startswith(("/api/alerts/rules", "/api/alerts/channels", "/alerts/")):
            own = b"finance"
        assert own in body.content or url == "/api/alerts/deliveries/", url


def test_it_answers_a_filter_naming_another_projects_table_404(lake):
    people = lake["people"].id
    erin_token, frank = token_client(lake["erin"]), session_client(lake["frank"])
    erin_session = session_client(lake["erin"])
    for url, clients in (
        (f"/api/findings/?table={people}", (erin_token, erin_session)),
        (f"/findings/?table={people}", (erin_session,)),
    ):
        for client in clients:
            assert frank.get(url).status_code == 200  # cached now
            assert client.get(url).status_code == 404, url
    body = {"text": "ConcurrentAppendException", "table": people}
    answer = erin_token.post("/api/explain/", body, format="json")
    assert answer.status_code == 400 and MARKER not in answer.content.lower()


def test_it_counts_only_the_readers_projects(lake):
    erin = token_client(lake["erin"])
    tables = erin.get("/api/tables/").json()
    assert [t["name"] for t in tables["results"]] == ["ledger"] and tables["count"] == 1
    page = session_client(lake["erin"]).get("/")
    assert page.context is None or b"1 table" in page.content or b"ledger" in page.content


def test_staff_see_every_project(lake, admin):
    client = token_client(admin)
    names = {t["name"] for t in client.get("/api/tables/").json()["results"]}
    assert names == {"ledger", "hrsecrettable"}


def test_anonymous_clients_get_nothing(lake):
    assert APIClient().get(f"/api/tables/{lake['people'].id}/").status_code == 401


# --------------------------------------------------------------------------- filters by id


def list_filters_taking_ids(values: dict) -> list[tuple[str, str, type]]:
    """(list URL, query parameter, model) of every filter of an API list route (a route of the
    URL resolver without parameters, served by a DRF view with a FilterSet) whose value is the
    id of a row: a model choice, or a number compared with a foreign key or `<name>_id`."""
    import django_filters
    from django.db.models import ForeignKey
    from django_filters.utils import get_model_field

    found = []
    for route in routes():
        url, used = url_of(route, values)
        if used:
            continue  # a list route has no parameter
        view = get_resolver().resolve(url)
        cls = getattr(view.func, "cls", None)
        if cls is None or (getattr(view.func, "actions", None) or {}).get("get") != "list":
            continue
        filterset = getattr(cls, "filterset_class", None)
        if filterset is None and getattr(cls, "filterset_fields", None):
            filterset = django_filters.filterset.filterset_factory(
                cls.serializer_class.Meta.model, fields=cls.filterset_fields
            )
        for name, flt in filterset.base_filters.items() if filterset else ():
            field = get_model_field(filterset._meta.model, flt.field_name or "")
            if isinstance(flt, django_filters.ModelChoiceFilter):
                found.append((url, name, field.related_model))
            elif isinstance(field, ForeignKey) or (flt.field_name or "").endswith("_id"):
                target = field.related_model if field is not None else None
                found.append((url, name, target or field))
        found += declared_filters_taking_ids(url)
    return found


def declared_filters_taking_ids(url: str) -> list[tuple[str, str, type]]:
    """The same of a list declared in audit/reads (audit/reads/declared/lists.py): its integer filters
    whose condition compares a foreign key or a `<name>_id` column."""
    from django.db.models import ForeignKey

    from audit.reads.declared import routes

    read = routes.BY_ROUTE.get(url.removeprefix("/api/"))
    found = []
    for param in read.list.params if read is not None and read.list is not None else ():
        if param.kind != "int":
            continue
        for column, *_ in param.where(1):
            field = read.list.model._meta.get_field(column)
            if isinstance(field, ForeignKey) or column.endswith("_id"):
                found.append((url, param.name, field.related_model))
    return found


def test_every_list_filter_naming_another_projects_object_answers_as_for_none(lake):
    from audit.alerting.models import AlertRule, Channel

    people = lake["values"]
    theirs = {  # the people project's row of each model a filter may name
        Table: people["table_id"],
        Finding: people["finding_id"],
        Delivery: people["deliveries/pk"],
        AlertRule: people["rule_id"],
        Channel: people["channel_id"],
        Incident: people["incident_id"],
    }
    filters = list_filters_taking_ids(people)
    params = {(url, name) for url, name, _ in filters}
    # The walk finds what the API has (a filter the walk misses would escape it).
    assert {
        ("/api/findings/", "table"),
        ("/api/alerts/deliveries/", "finding"),
        ("/api/alerts/deliveries/", "rule"),
        ("/api/alerts/deliveries/", "channel"),
    } <= params, params
    frank = [token_client(lake["frank"]), session_client(lake["frank"])]
    erin = [token_client(lake["erin"]), session_client(lake["erin"])]
    for url, name, model in filters:
        assert model in theirs, f"{url}?{name}= names a {model}: add one to the walk"
        real, ghost = theirs[model], 999_999
        for warm, client in zip(frank, erin, strict=True):
            seen = warm.get(f"{url}?{name}={real}")  # fills the caches first
            assert seen.status_code == 200, (url, name)
            other = client.get(f"{url}?{name}={real}")
            missing = client.get(f"{url}?{name}={ghost}")
            assert other.status_code == missing.status_code, (url, name)
            shown = re.sub(rf"\b{ghost}\b", str(real), missing.content.decode())
            assert other.content.decode() == shown, (url, name)
