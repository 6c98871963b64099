"""Who wrote each commit, through the API: the stored provenance and the list filters, on a
table of real delta-rs writers with custom commit metadata."""

from __future__ import annotations

import pytest
from deltalake import CommitProperties, write_deltalake

from tests.app.api import list_reference
from tests.support.ingested import ingest_table
from tests.support.tables import rows

pytestmark = pytest.mark.django_db


def _write(path, n: int, **custom) -> None:
    props = CommitProperties(custom_metadata=custom) if custom else None
    write_deltalake(str(path), rows(1, start=n), mode="append", commit_properties=props)


@pytest.fixture
def written(tmp_path):
    path = tmp_path / "events"
    _write(path, 0)
    _write(path, 1, userName="alice", job="nightly", userMetadata="Backfill 100% of May")
    _write(path, 2, userName="bob", userMetadata="hotfix for ticket T-7", ticket="T-7")
    _write(path, 3, userName="alice", job="adhoc")
    return ingest_table(path)


def test_it_stores_and_serves_each_commits_provenance(written, member_client):
    body = member_client.get(f"/api/tables/{written.id}/commits/2/").json()
    provenance = body["provenance"]
    assert provenance["user_name"] == "bob"
    assert provenance["user_metadata"] == "hotfix for ticket T-7"
    assert provenance["custom"] == {"ticket": "T-7"}
    assert provenance["engine"].startswith("delta-rs:")


@pytest.mark.parametrize("plain", [False, True])
def test_it_filters_commits_by_user_engine_job_and_user_metadata(
    written, member_client, monkeypatch, plain
):
    if not plain:  # the FilterSet + ORM reference
        list_reference.use(monkeypatch)
    url = f"/api/tables/{written.id}/commits/"

    def versions(**params):
        response = member_client.get(url, params)
        assert response.status_code == 200, response.content
        return [r["version"] for r in response.json()["results"]]

    assert versions(user="alice") == [3, 1]
    assert versions(user="nobody") == []
    assert versions(engine="delta-rs") == [3, 2, 1, 0]
    assert versions(engine="spark") == []
    assert versions(job="nightly") == [1]
    assert versions(user_metadata="HOTFIX") == [2]
    assert versions(user_metadata="100%") == [1]
    assert versions(user_metadata="%") == [1]  # a literal percent, not a wildcard
    assert versions(user="alice", job="adhoc") == [3]
    assert member_client.get(url, {"engine": "bogus"}).status_code == 400
    bad = member_client.get(url, {"engine": "K%R"})  # a '%' in an unknown value: still a 400
    assert bad.status_code == 400 and "K%R" in bad.content.decode()
