"""Registering a table that another project holds tells nothing of it: `POST /api/tables/`
with its URI answers byte for byte as for a URI outside the allowed roots. (Filters naming
another project's object: tests/app/test_projects_walk.py walks every list filter.)"""

from __future__ import annotations

import pytest

from audit.models import Table
from tests.support import scenarios
from tests.support.clients import token_client
from tests.support.ingested import ingest_table
from tests.support.projects import into, join

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(tmp_path, settings, django_user_model, fresh_cache) -> dict:
    """`secret_hr` registered in "people"; erin owns "finance", frank owns "people"."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    scenarios.build_ws_reorder_matching(str(tmp_path / "secret_hr"))
    scenarios.build_ws_reorder_matching(str(tmp_path / "mine"))
    table = into(ingest_table(tmp_path / "secret_hr", name="secret_hr"), "people")
    erin = join(django_user_model.objects.create_user("erin"), "finance", "owner")
    frank = join(django_user_model.objects.create_user("frank"), "people", "owner")
    return {"root": tmp_path, "table": table, "erin": erin, "frank": frank}


def test_registering_another_projects_table_answers_as_a_refused_path(lake, settings):
    uri = str(lake["root"] / "secret_hr")
    body = {"uri": uri, "project": "finance"}
    erin = token_client(lake["erin"])
    held = erin.post("/api/tables/", body, format="json")
    settings.AUDIT_ALLOWED_ROOTS = [str(lake["root"] / "mine")]  # now outside every root
    refused = erin.post("/api/tables/", body, format="json")
    assert refused.status_code == 400 and "not under an allowed root" in refused.json()["error"]
    assert (held.status_code, held.content) == (refused.status_code, refused.content)
    assert "registered" not in held.content.decode()
    assert Table.objects.filter(uri=uri).get().project.name == "people"  # untouched


def test_those_who_see_the_table_are_told_it_is_registered(lake, admin):
    uri = str(lake["root"] / "secret_hr")
    for user in (lake["frank"], admin):
        answer = token_client(user).post(
            "/api/tables/", {"uri": uri, "project": "people"}, format="json"
        )
        assert answer.status_code == 409
        assert answer.json()["detail"] == {"id": lake["table"].id}
