"""The tables list without query parameters, from its SQL compiled once
(audit/reads/declared/list_sql.py DefaultTablesPage), gives the body the ORM path (filters, pagination) gives: for
staff (every project) and for a member (its project only), with findings of every severity,
acknowledged or not, health and none; and a list longer than a page goes the ORM's way."""

from __future__ import annotations

import orjson
import pytest
from django.utils import timezone

from audit.api.pagination import TablePagination
from audit.core.vocab import SEVERITY_ORDER
from audit.health.models import TableHealth
from audit.ingest.health_store import health_fields
from audit.models import Finding, Table
from audit.reads.declared import list_sql, lists
from tests.support.projects import into

pytestmark = pytest.mark.django_db

HEALTH = {
    "version": 7, "num_files": 3, "total_bytes": 3000, "small_files": {"count": 1},
    "tombstones": {"vacuumable_bytes": 7}, "checkpoint": {"commits_since": 1},
}  # fmt: skip


@pytest.fixture(autouse=True)
def cold(settings):
    settings.AUDIT_API_LIST_CACHE_SECONDS = 0


def _lake(owner) -> None:
    now = timezone.now()
    for i, name in enumerate(["b", "a", "a", "c"]):
        table = Table.objects.create(
            uri=f"/lake/{i}", name=name, status="ok", last_seen_version=7 + i, risk=i * 1.5,
            latest_version_in_log=9 + i, first_available_version=0,
        )  # fmt: skip
        if i == 3:
            into(table, "other")  # a project the member does not see
        if i % 2:
            TableHealth.objects.create(table=table, **health_fields(HEALTH))
        for j in range(i + 2):
            severity = SEVERITY_ORDER[j % len(SEVERITY_ORDER)]
            Finding.objects.create(
                table=table, kind="k", severity=str(severity), version=j, summary="s",
                key=f"k{j}", last_seen=now, status="resolved" if j == 4 else "open",
                acknowledged_by=owner if j % 2 else None, acknowledged_at=now if j % 2 else None,
            )  # fmt: skip


def _bodies(client, monkeypatch, query: str = "") -> tuple[bytes, bytes, list]:
    used = []

    def spy(*args):
        # The class's method: an earlier call of this function left the instance's patched.
        rows = list_sql.DefaultTablesPage.page(lists.default_tables_page, *args)
        used.append(rows is not None)
        return rows

    monkeypatch.setattr(lists.default_tables_page, "page", spy)
    fast = client.get(f"/api/tables/{query}")
    monkeypatch.setattr(lists.default_tables_page, "page", lambda *args: None)
    orm = client.get(f"/api/tables/{query}")
    assert fast.status_code == orm.status_code
    return fast.content, orm.content, used


ORDERINGS = ["open_findings", "-open_findings", "small_files", "-checkpoint_lag",
             "vacuumable_bytes", "small_file_ratio"]  # fmt: skip


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_it_gives_the_orm_paths_body_for_each_ordering_and_status(
    persona, owner, member, admin_client, member_client, monkeypatch
):
    # Lists with an ordering and/or a status are compiled once per shape (lists.default_shape).
    _lake(owner)
    Table.objects.filter(uri="/lake/1").update(status="error")
    client = admin_client if persona == "owner" else member_client
    seen = set()
    for ordering in ["", *ORDERINGS]:
        for status in ["", "ok", "error", "backfilling"]:
            query = "&".join(
                f"{k}={v}" for k, v in (("ordering", ordering), ("status", status)) if v
            )
            fast, orm, used = _bodies(client, monkeypatch, f"?{query}")
            assert used == [True], query
            assert fast == orm, query
            seen.add(tuple(row["id"] for row in orjson.loads(fast)["results"]))
    assert len(seen) > 5  # orderings and filters changed the lists


@pytest.mark.parametrize(
    "query", ["?ordering=bogus", "?status=nope", "?ordering=", "?status=", "?ordering= name",
              "?ordering=small_files&ordering=name", "?page=1", "?status=ok&page_size=2"],
)  # fmt: skip
def test_it_leaves_other_shapes_to_the_orm(query, owner, admin_client, monkeypatch):
    _lake(owner)
    fast, orm, used = _bodies(admin_client, monkeypatch, query)
    assert used == [] and fast == orm


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_it_gives_the_orm_paths_body(
    persona, owner, member, admin_client, member_client, monkeypatch
):
    _lake(owner)
    client = admin_client if persona == "owner" else member_client
    fast, orm, used = _bodies(client, monkeypatch)
    assert used == [True]
    assert fast == orm
    names = [row["name"] for row in orjson.loads(fast)["results"]]
    assert names == (["a", "a", "b", "c"] if persona == "owner" else ["a", "a", "b"])


def test_it_leaves_a_list_longer_than_a_page_to_the_orm(owner, admin_client, monkeypatch):
    _lake(owner)
    monkeypatch.setattr(TablePagination, "page_size", 3)
    fast, orm, used = _bodies(admin_client, monkeypatch)
    assert used == [False]
    assert fast == orm and b'"next":"http' in fast
