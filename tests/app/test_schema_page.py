"""/tables/<id>/schema/: the schema at a version and the changes between two, on a real
delta-rs table whose schema evolves (tests/support/schema_tables.py), ingested."""

from __future__ import annotations

import pytest

from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.projects import into
from tests.support.schema_tables import evolving_schema_table

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    return ingest_table(evolving_schema_table(tmp_path / "evolving"), name="evolving")


def _get(user, table, query=""):
    response = session_client(user).get(f"/tables/{table.id}/schema/{query}")
    return response.status_code, response.content.decode()


def test_it_shows_the_latest_schema_by_default(table, member):
    status, body = _get(member, table)
    assert status == 200
    assert "Schema at version 3" in body and ">double<" in body and ">note<" not in body
    assert "Versions that changed the schema" in body and 'href="?version=1"' in body


def test_it_shows_a_past_version_and_the_changes_to_another(table, member):
    status, body = _get(member, table, "?version=3&compare=1")
    assert status == 200
    assert "From version 1 to version 3" in body
    changes = body.split('id="schema-changes"')[1].split("</div>")[0]
    assert "Dropped:" in changes and "note" in changes
    assert "long → double" in changes and "Partitioning:" in changes and "day" in changes
    _, old = _get(member, table, "?version=1")
    assert ">note<" in old and ">long<" in old


def test_it_answers_a_bad_version_400(table, member):
    assert _get(member, table, "?version=99")[0] == 400
    assert _get(member, table, "?version=x")[0] == 400
    assert _get(member, table, "?compare=-1")[0] == 400


def test_it_is_404_to_another_projects_reader(table, member, outsider):
    into(table, "finance")
    assert _get(outsider, table)[0] == 404 and _get(None, table)[0] == 302


def test_the_history_links_each_metadata_change_to_the_schema_compared(table, member):
    body = session_client(member).get(f"/tables/{table.id}/history/").content.decode()
    assert f'href="/tables/{table.id}/schema/?version=1&amp;compare=0"' in body
    assert f'href="/tables/{table.id}/schema/?version=3&amp;compare=2"' in body
