"""Alerts per incident, through the worker's own task (`process_alerts`) to a real HTTP
receiver, on tables real delta-rs writers made and the tail ingested: one notification when an
incident opens, one when it grew past the rule's threshold, one when it resolves; never one
per symptom. Findings rules keep working beside them."""

from __future__ import annotations

import orjson
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from django.urls import resolve

from audit.alerting.models import AlertRule, Delivery
from audit.ingest.tables import register_table
from audit.models import Finding, Incident, Table
from audit.tail.step import tail_once
from frontend.views import incident_detail
from tests.support.alerting import rule_for, webhook
from workers import alert_tasks

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def lake(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.ALERT_SITE_URL = "https://audit.example.org"
    return tmp_path


def _rows(day: str, ids: list[int]) -> pa.Table:
    return pa.table({"day": [day] * len(ids), "id": ids, "value": [float(i) for i in ids]})


def stale_overwrites(path: str, times: int, start: int = 0) -> None:
    """One writer overwriting the whole table from a stale snapshot, `times` times, each
    after another writer appended: delta-rs checks nothing for an overwrite without
    predicate (one incident, `stale_write_unchecked`)."""
    for k in range(start, start + times):
        stale = DeltaTable(path)
        write_deltalake(path, _rows("d2", [1000 + k]), mode="append")
        write_deltalake(stale, _rows("d1", [k]), mode="overwrite")


def tail(table_id: int, chunk: int = 4) -> None:
    while tail_once(table_id, chunk=chunk).more:
        pass
    tail_once(table_id)  # caught up: the whole-table refresh regroups


def bodies(receiver) -> list[dict]:
    return [orjson.loads(body) for _, _, body in receiver.requests]


def test_it_sends_one_alert_for_an_incident_of_forty_findings(lake, receiver):
    path = str(lake / "orders")
    write_deltalake(path, _rows("d1", [0]))
    stale_overwrites(path, 40)
    table, _ = register_table(path, name="orders")
    tail(table.id)  # chunk by chunk: the incident opened early and grew with every chunk
    incident = Incident.objects.get(table=table, cause="stale_write_unchecked")
    assert incident.finding_count >= 40 and incident.status == "open"
    assert Finding.objects.filter(table=table, incident=incident, status="open").count() >= 40
    rule_for(webhook(receiver.url), name="incidents", target="incidents", min_severity="info")

    line = alert_tasks.process_alerts()

    deliveries = Delivery.objects.filter(incident=incident)
    assert deliveries.count() == 1, line
    assert Delivery.objects.count() == Incident.objects.filter(table=table).count()
    sent = [b for b in bodies(receiver) if b["incident"]["id"] == incident.incident_id]
    assert len(sent) == 1
    (body,) = sent
    assert body["event"] == "incident.opened" and body["incident"]["cause"] == incident.cause
    assert body["incident"]["findings"] >= 40 and body["incident"]["occurrences"] >= 40
    page = f"/tables/{incident.table_id}/incidents/{incident.pk}/"
    assert body["dashboard_url"] == f"https://audit.example.org{page}"
    assert resolve(page).func is incident_detail  # the link opens the incident page
    # Nothing new happened: the next pass sends nothing.
    alert_tasks.process_alerts()
    assert Delivery.objects.filter(incident=incident).count() == 1


def test_it_alerts_again_only_when_the_incident_grew_past_the_threshold(lake, receiver):
    path = str(lake / "orders")
    write_deltalake(path, _rows("d1", [0]))
    stale_overwrites(path, 3)
    table, _ = register_table(path, name="orders")
    tail(table.id)
    rule = rule_for(
        webhook(receiver.url), target="incidents", min_severity="info", growth_threshold=4
    )
    alert_tasks.process_alerts()
    incident = Incident.objects.get(table=table, cause="stale_write_unchecked")
    assert list(Delivery.objects.filter(incident=incident).values_list("event", flat=True)) == [
        "opened"
    ]

    stale_overwrites(path, 2, start=3)  # 2 new occurrences: under the threshold
    tail(table.id)
    alert_tasks.process_alerts()
    assert Delivery.objects.filter(incident=incident).count() == 1

    stale_overwrites(path, 2, start=5)  # 4 since the last notification: it grew
    tail(table.id)
    alert_tasks.process_alerts()
    events = Delivery.objects.filter(incident=incident, rule=rule).order_by("id")
    assert [(d.event, d.status) for d in events] == [("opened", "sent"), ("grew", "sent")]
    grew = events.last()
    assert grew.occurrences - events.first().occurrences >= 4
    assert bodies(receiver)[-1]["event"] == "incident.grew"


def test_it_alerts_once_when_an_incident_resolves(lake, receiver):
    """An isolation setting delta-rs ignores, and the conflicts it let through: resolved once
    the table says what delta-rs parses."""
    path = str(lake / "metrics")
    write_deltalake(
        path, _rows("p0", [1, 2, 3]), configuration={"delta.isolationLevel": "WriteSerializable"}
    )
    for k in range(3):
        stale = DeltaTable(path)
        write_deltalake(path, _rows("p0", [100 + k]), mode="append")
        stale.delete(f"id = {k + 1}")
    table, _ = register_table(path, name="metrics")
    tail(table.id)
    incident = Incident.objects.get(table=table, cause="isolation_setting_ignored")
    assert incident.status == "open"
    rule_for(webhook(receiver.url), target="incidents", min_severity="info")
    alert_tasks.process_alerts()

    DeltaTable(path).alter.set_table_properties({"delta.isolationLevel": "serializable"})
    tail(table.id)
    incident.refresh_from_db()
    assert incident.status == "resolved", incident.resolved_because
    alert_tasks.process_alerts()
    alert_tasks.process_alerts()

    events = Delivery.objects.filter(incident=incident).order_by("id")
    assert [d.event for d in events] == ["opened", "resolved"]
    resolved = [b for b in bodies(receiver) if b["event"] == "incident.resolved"]
    assert len(resolved) == 1 and resolved[0]["incident"]["resolved_because"]


def test_findings_rules_keep_alerting_per_finding_and_ignore_incidents(lake, receiver):
    path = str(lake / "orders")
    write_deltalake(path, _rows("d1", [0]))
    stale_overwrites(path, 3)
    table, _ = register_table(path, name="orders")
    tail(table.id)
    rule = rule_for(webhook(receiver.url), min_severity="info")  # made as before incidents
    assert rule.target == AlertRule.Target.FINDINGS

    alert_tasks.process_alerts()

    open_findings = Finding.objects.filter(table=table, status="open").count()
    assert Delivery.objects.filter(finding__isnull=False).count() == open_findings
    assert not Delivery.objects.filter(incident__isnull=False).exists()


def test_incident_deliveries_are_only_shown_to_the_projects_readers(lake, receiver, member):
    """A delivery names its incident's table: only its project's readers list it."""
    from tests.support.clients import token_client
    from tests.support.projects import into

    path = str(lake / "orders")
    write_deltalake(path, _rows("d1", [0]))
    stale_overwrites(path, 2)
    table, _ = register_table(path, name="orders")
    tail(table.id)
    rule = rule_for(webhook(receiver.url), target="incidents", min_severity="info")
    alert_tasks.process_alerts()
    assert Delivery.objects.filter(incident__isnull=False).exists()
    client = token_client(member)
    listed = client.get("/api/alerts/deliveries/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {d["table"] for d in rows if d["incident"]} == {table.id}
    into(Table.objects.get(pk=table.pk), "elsewhere")  # the rule stays in the default project
    hidden = client.get("/api/alerts/deliveries/").json()
    rows = hidden["results"] if isinstance(hidden, dict) else hidden
    assert not [d for d in rows if d["incident"]]
    assert rule.project_id != Table.objects.get(pk=table.pk).project_id
