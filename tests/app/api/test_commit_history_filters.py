"""The commits list's filters of the history page (user, operation, engine, job, q: the
metadata text, since, until), server-side and cursor-paginated, on /api/tables/{id}/commits/.
Added by declaring one filter (`q`, audit/reads/declared/lists.py): its SQL, validation, schema, cache
key and fast path come from the declaration (tests/app/api/test_lists_equal_their_orm_reference.py
compares it with the ORM byte for byte; here: what each filter selects)."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command

from audit.models import Commit, Table
from tests.support.clients import token_client

pytestmark = pytest.mark.django_db
BASE = 1_700_000_000_000
ROWS = [  # (user_name, user_id, operation, engine, job_id, user_metadata, operation_parameters)
    ("alice", "u1", "WRITE", "spark", "nightly", "backfill of May", {"mode": "Append"}),
    ("bob", "u2", "MERGE", "delta-rs", "", "", {"predicate": "id = 7"}),
    ("alice", "u1", "DELETE", "spark", "cleanup", "GDPR erase", {"predicate": "user = 'x'"}),
    ("", "svc", "OPTIMIZE", "databricks", "nightly", "", {"zOrderBy": '["day"]'}),
    ("carol", "u3", "WRITE", "delta-rs", "", "hotfix 100%", {"mode": "Overwrite"}),
]


@pytest.fixture
def history(member) -> Table:
    table = Table.objects.create(uri="/data/history", name="history", status="ok")
    Commit.objects.bulk_create(
        Commit(table=table, version=v, timestamp=BASE + v * 60_000, user_name=name,
               user_id=uid, operation=op, engine=engine, job_id=job, user_metadata=meta,
               operation_parameters=params)
        for v, (name, uid, op, engine, job, meta, params) in enumerate(ROWS)
    )  # fmt: skip
    table.last_seen_version = len(ROWS) - 1
    table.save(update_fields=["last_seen_version"])
    return table


def versions(client, table: Table, **params) -> list[int]:
    """Every page of the filtered list (two rows a page), following `next`."""
    response = client.get(f"/api/tables/{table.id}/commits/", {"page_size": 2, **params})
    assert response.status_code == 200, response.content
    body = response.json()
    out = [row["version"] for row in body["results"]]
    while body["next"]:
        body = client.get(body["next"]).json()
        out += [row["version"] for row in body["results"]]
    return out


def test_each_history_filter_selects_its_commits(history, member):
    client = token_client(member)
    assert versions(client, history) == [4, 3, 2, 1, 0]
    assert versions(client, history, user="alice") == [2, 0]
    assert versions(client, history, user="svc") == [3]
    assert versions(client, history, operation="WRITE,MERGE") == [4, 1, 0]
    assert versions(client, history, engine="delta-rs") == [4, 1]
    assert versions(client, history, job="nightly") == [3, 0]
    # q: the metadata text, in the userMetadata or the operation's parameters, any case.
    assert versions(client, history, q="BACKFILL") == [0]
    assert versions(client, history, q="append") == [0]
    assert versions(client, history, q="predicate") == [2, 1]
    assert versions(client, history, q="100%") == [4]
    assert versions(client, history, q="_") == []  # LIKE's wildcards are plain text here
    assert versions(client, history, since=str(BASE + 60_000), until=str(BASE + 180_000)) == [
        3, 2, 1,
    ]  # fmt: skip
    assert versions(client, history, q="e", user="alice", order="asc") == [0, 2]


def test_a_bad_history_filter_is_a_400_naming_it(history, member):
    client = token_client(member)
    response = client.get(f"/api/tables/{history.id}/commits/", {"q": "x" * 201})
    assert response.status_code == 400
    assert "q" in response.json()["detail"]
    response = client.get(f"/api/tables/{history.id}/commits/", {"q": "a\x00b"})
    assert response.status_code == 400


def test_another_projects_history_is_a_404(history, member):
    from tests.support.projects import into

    into(history, "elsewhere")
    client = token_client(member)
    response = client.get(f"/api/tables/{history.id}/commits/", {"q": "x"})
    assert response.status_code == 404
    missing = client.get(f"/api/tables/{history.id + 99}/commits/", {"q": "x"})
    assert (response.status_code, response.content) == (missing.status_code, missing.content)


def test_the_schema_documents_the_history_filters(tmp_path):
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(out))
    commits = yaml.safe_load(out.read_text())["paths"]["/api/tables/{id}/commits/"]["get"]
    described = {p["name"]: p.get("description", "") for p in commits["parameters"]}
    assert {"user", "operation", "engine", "job", "q", "since", "until", "cursor"} <= set(described)
    assert "operation's parameters" in described["q"]
