"""The API has no `.json` suffix routes: a suffixed path answers the JSON 404 of an unknown
path, never a 500 (views that did not take DRF's `format` argument once crashed on them)."""

from __future__ import annotations

import pytest

from audit.ingest.tables import register_table
from audit.tail.step import tail_once
from tests.support.clients import session_client

pytestmark = pytest.mark.django_db


def test_it_answers_a_suffixed_path_404_not_500(delta_table_factory, member):
    table, _ = register_table(str(delta_table_factory("t", commits=3)))
    tail_once(table.id)
    client = session_client(member)
    paths = [
        f"/api/tables/{table.id}/{action}.json"
        for action in ("commits", "timeline", "health", "changes", "writers", "orphans")
    ] + [f"/api/tables/{table.id}.json"]
    answers = {path: client.get(path).status_code for path in paths}
    assert set(answers.values()) == {404}, answers
    assert client.get(f"/api/tables/{table.id}/commits/").status_code == 200
