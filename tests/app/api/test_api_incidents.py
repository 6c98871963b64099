"""Incidents on the API, against tables the tail ingested: the list (filters, pagination, only
the reader's projects), a table's list, one incident with the contract's fields, and the
acknowledgement (members and owners; viewers 403; other projects 404)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable, write_deltalake
from django.http import Http404

from audit.models import Finding, Incident
from audit.reads.incidents import (
    incident_for_user_or_404,
    incidents_for_table,
    worst_open_incidents,
)
from audit.tail.step import tail_once
from tests.app.api.conftest import copy_of
from tests.support.clients import session_client, token_client
from tests.support.ingested import ingest_table
from tests.support.projects import into, join
from tests.support.tables import rows

pytestmark = pytest.mark.django_db

CONTRACT = {
    "id", "cause", "headline", "severity", "status", "first_version", "last_version",
    "findings", "damage", "repair", "inspect", "prevent",
}  # fmt: skip
STATEMENT = {"engine", "code", "does", "does_not"}


@pytest.fixture
def team(reorder_table, django_user_model) -> dict:
    """The reorder table in the project "team", with a viewer, a member, an owner of it and
    an outsider (who sees only the default project)."""
    into(reorder_table, "team")

    def user(name: str, role: str | None):
        made = django_user_model.objects.create_user(name, password="password")
        return join(made, "team", role) if role else join(made)

    return {r: user(f"t-{r}", r) for r in ("viewer", "member", "owner")} | {
        "outsider": user("t-outsider", None)
    }


def test_it_lists_the_incidents_the_tail_stored_with_the_contract_fields(reorder_table, team):
    body = token_client(team["viewer"]).get("/api/incidents/").json()
    (incident,) = body["results"]
    assert incident.keys() >= CONTRACT | {"pk", "table"}
    assert incident["table"] == reorder_table.id
    assert len(incident["id"]) == 16 and int(incident["id"], 16) >= 0
    assert incident["cause"] == "stale_write_write_serializable"
    assert incident["severity"] == "critical" and incident["status"] == "open"
    kinds = {(f["kind"], f["version"]) for f in incident["findings"]}
    assert ("write_serializable_reorder", 3) in kinds
    stored = Finding.objects.filter(table=reorder_table, status="open")
    assert {(f.kind, f.version) for f in stored} == kinds
    assert incident["damage"].keys() >= {"rows_wrong_now", "files", "partitions", "exact"}
    for name in ("repair", "inspect", "prevent"):
        for statement in incident[name]:
            assert statement.keys() == STATEMENT
            assert statement["engine"] in ("deltalake", "spark-sql")
    assert incident["prevent"], "a stale write under WriteSerializable says how to prevent it"


def test_it_shows_an_incident_by_its_row_and_the_same_fields(reorder_table, team):
    client = token_client(team["viewer"])
    listed = client.get(f"/api/tables/{reorder_table.id}/incidents/").json()["results"][0]
    detail = client.get(f"/api/incidents/{listed['pk']}/").json()
    assert detail == listed


def test_it_hides_other_projects_incidents_from_every_route(reorder_table, team):
    incident = Incident.objects.get(table=reorder_table)
    client = token_client(team["outsider"])
    assert client.get("/api/incidents/").json()["results"] == []
    missing = client.get("/api/incidents/999999/")
    for url in (f"/api/incidents/{incident.pk}/", f"/api/tables/{reorder_table.id}/incidents/"):
        answer = client.get(url)
        assert answer.status_code == 404
    assert client.get(f"/api/incidents/{incident.pk}/").content == missing.content
    assert client.post(f"/api/incidents/{incident.pk}/acknowledge/").status_code == 404
    assert client.get("/api/incidents/", {"table": reorder_table.id}).status_code == 404
    incident.refresh_from_db()
    assert incident.acknowledged_at is None


@pytest.mark.parametrize("role, status", [("viewer", 403), ("member", 200), ("owner", 200)])
def test_it_lets_members_and_owners_acknowledge_an_incident_and_its_findings(
    reorder_table, team, role, status
):
    incident = Incident.objects.get(table=reorder_table)
    answer = token_client(team[role]).post(f"/api/incidents/{incident.pk}/acknowledge/")
    assert answer.status_code == status
    findings = Finding.objects.filter(incident=incident)
    assert findings.exists()
    if status == 403:
        assert not findings.filter(acknowledged_at__isnull=False).exists()
        return
    body = answer.json()
    assert body["acknowledged"] is True and body["acknowledged_by"] == f"t-{role}"
    assert body["acknowledged_version"] == body["last_version"]
    assert not findings.filter(acknowledged_at__isnull=True).exists()
    assert set(findings.values_list("acknowledged_by__username", flat=True)) == {f"t-{role}"}
    # Idempotent: the first acknowledgement is kept.
    session_client(team["owner"]).post(f"/api/incidents/{incident.pk}/acknowledge/")
    assert Incident.objects.get(pk=incident.pk).acknowledged_by.username == f"t-{role}"


def test_it_filters_the_list(reorder_table, team):
    client = token_client(team["viewer"])

    def causes(**params) -> list[str]:
        answer = client.get("/api/incidents/", params)
        assert answer.status_code == 200, answer.content
        return [i["cause"] for i in answer.json()["results"]]

    assert causes(cause="stale_write_write_serializable") == ["stale_write_write_serializable"]
    assert causes(cause="contention") == []
    assert causes(status="open,growing") == ["stale_write_write_serializable"]
    assert causes(status="resolved") == []
    assert causes(severity="info") == [] and causes(min_severity="warning") != []
    assert causes(table=reorder_table.id) != []
    assert client.get("/api/incidents/", {"status": "nope"}).status_code == 400
    assert client.get("/api/incidents/", {"cause": "<script>"}).status_code == 400


def test_it_turns_growing_after_new_occurrences_once_acknowledged(built_tables, tmp_path, admin):
    """Acknowledged at its last version, an incident that recurs is `growing` at the tail's
    next regrouping; acknowledging it again makes it open."""
    path = tmp_path / "grows"
    path.mkdir()
    write_deltalake(str(path), rows(2, start=1), partition_by=["day"])
    for k in range(2):
        stale = DeltaTable(str(path))
        write_deltalake(str(path), rows(1, day="2024-01-02", start=10 + k), mode="append",
                        partition_by=["day"])  # fmt: skip
        write_deltalake(stale, rows(1, start=100 + k), mode="overwrite", partition_by=["day"])
    table = ingest_table(path, name="grows")
    incident = Incident.objects.get(table=table, cause__startswith="stale_write")
    client = token_client(admin)
    assert client.post(f"/api/incidents/{incident.pk}/acknowledge/").status_code == 200
    stale = DeltaTable(str(path))
    write_deltalake(str(path), rows(1, day="2024-01-02", start=99), mode="append",
                    partition_by=["day"])  # fmt: skip
    write_deltalake(stale, rows(1, start=98), mode="overwrite", partition_by=["day"])
    while tail_once(table.id).more:
        pass
    incident.refresh_from_db()
    assert incident.status == "growing" and incident.last_version > incident.acknowledged_version
    again = client.post(f"/api/incidents/{incident.pk}/acknowledge/").json()
    assert again["status"] == "open"


def test_it_paginates_a_tables_incidents_for_the_pages(reorder_table, team, built_tables, tmp_path):
    """The query layer the dashboard's pages use: a page of a table's incidents, each with its
    findings folded under it, and one incident for its reader or a 404."""
    page = incidents_for_table(reorder_table, 1)
    assert page.paginator.count == 1
    (incident,) = page.object_list
    assert {f.kind for f in incident.folded} >= {"write_serializable_reorder"}
    assert incident_for_user_or_404(team["viewer"], incident.pk) == incident
    with pytest.raises(Http404):
        incident_for_user_or_404(team["outsider"], incident.pk)
    assert worst_open_incidents([reorder_table.id]) == {reorder_table.id: incident}


def test_it_keeps_secrets_out_of_the_paths_it_shows(reorder_table, team):
    """A stored damage path carrying a credential is shown without it."""
    incident = Incident.objects.get(table=reorder_table)
    secret = "abfss://c@acct.dfs.core.windows.net/t/part-0.parquet?sig=SECRETSIG&se=2030"
    Incident.objects.filter(pk=incident.pk).update(damage={**incident.damage, "files": [secret]})
    body = token_client(team["viewer"]).get(f"/api/incidents/{incident.pk}/").content
    assert b"SECRETSIG" not in body


def test_an_empty_table_has_no_incident(tmp_path, admin, built_tables):
    table = ingest_table(copy_of(built_tables, tmp_path, "long"), name="long")
    assert token_client(admin).get(f"/api/tables/{table.id}/incidents/").json()["results"] == []
