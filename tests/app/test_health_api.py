"""Table health through the API: stored health equals the core (and so deltalake), changes, diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import override_settings
from rest_framework.test import APIClient

from audit.core.health.compute import health_at
from audit.core.log import open_log
from audit.health.models import HealthPoint, TableChange, TableHealth
from audit.ingest.tables import register_table
from audit.models import Finding
from audit.tail.step import tail_once
from tests.support.health_tables import (
    HOSTILE_COLUMN,
    V_LAST,
    V_OPTIMIZE,
    V_PROPS,
    V_PROTOCOL,
    V_SCHEMA,
    add_actions,
    build_evolving_table,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build_evolving_table(tmp_path_factory.mktemp("health-api") / "evolving")


@pytest.fixture
def table(built, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    path = shutil.copytree(built, tmp_path / "evolving")
    t, _ = register_table(str(path), name="evolving")
    # Small chunks: points and changes are stored chunk by chunk, as a backfill does.
    while tail_once(t.id, chunk=5).more:
        pass
    t.refresh_from_db()
    return t


@pytest.fixture
def client(member) -> APIClient:
    c = APIClient()
    c.force_authenticate(member)
    return c


def test_points_are_stored_per_version_and_equal_deltalake(table):
    points = {p.version: p for p in HealthPoint.objects.filter(table=table)}
    assert sorted(points) == list(range(V_LAST + 1))
    for version in (0, 5, 11, V_OPTIMIZE, V_LAST):
        sizes = add_actions(table.uri, version)["size_bytes"].to_pylist()
        p = points[version]
        assert (p.num_files, p.total_bytes, p.small_files) == (len(sizes), sum(sizes), len(sizes))


def test_latest_health_is_stored_and_served_without_the_log(table, client):
    stored = TableHealth.objects.get(table=table)
    assert stored.version == V_LAST
    expected = health_at(open_log(table.uri))
    for key in ("num_files", "total_bytes", "tombstones", "small_files", "partitions", "log"):
        assert stored.data[key] == expected[key]
    shutil.rmtree(Path(table.uri) / "_delta_log")  # latest health needs no log read
    response = client.get(f"/api/tables/{table.id}/health/")
    assert response.status_code == 200
    assert response.json()["num_files"] == expected["num_files"]
    assert stored.vacuumable_bytes == expected["tombstones"]["vacuumable_bytes"] > 0


def test_past_version_health_and_errors(table, client):
    response = client.get(f"/api/tables/{table.id}/health/", {"version": V_OPTIMIZE})
    assert response.status_code == 200
    body = response.json()
    sizes = add_actions(table.uri, V_OPTIMIZE)["size_bytes"].to_pylist()
    assert (body["version"], body["num_files"], body["total_bytes"]) == (
        V_OPTIMIZE,
        len(sizes),
        sum(sizes),
    )
    assert body["tombstones"]["count"] == 12
    for bad in ("x", "-1", str(V_LAST + 1), "9" * 30):
        r = client.get(f"/api/tables/{table.id}/health/", {"version": bad})
        assert r.status_code == 400, bad
        assert "error" in r.json()
    assert APIClient().get(f"/api/tables/{table.id}/health/").status_code in (401, 403)


def test_changes_endpoint_lists_schema_property_and_protocol_changes(table, client):
    body = client.get(f"/api/tables/{table.id}/changes/").json()
    assert [(c["version"], c["kind"]) for c in body["changes"]] == [
        (V_SCHEMA, "schema"),
        (V_PROPS, "properties"),
        (V_PROTOCOL, "protocol"),
    ]
    assert body["changes"][0]["diff"]["added"][0]["name"] == HOSTILE_COLUMN
    assert TableChange.objects.filter(table=table).count() == 3
    # Who made each change: the provenance of its commit (delta-rs writes engineInfo).
    assert all(c["by"]["engine"].startswith("delta-rs:") for c in body["changes"])


def test_changes_link_concurrent_metadata_change_findings(table, client):
    finding = Finding.objects.create(
        table=table,
        kind="concurrent_metadata_change",
        severity="warning",
        version=V_SCHEMA,
        related_versions=[V_SCHEMA + 1],
        summary="s",
        key="k",
        last_seen="2026-01-01T00:00:00Z",
    )
    body = client.get(f"/api/tables/{table.id}/changes/").json()
    assert body["changes"][0]["findings"] == [finding.id]
    assert body["changes"][1]["findings"] == []


def test_diff_endpoint(table, client):
    body = client.get(f"/api/tables/{table.id}/diff/", {"from": 5, "to": V_LAST}).json()
    before = set(add_actions(table.uri, 5)["path"].to_pylist())
    after = set(add_actions(table.uri, V_LAST)["path"].to_pylist())
    assert body["files_added"]["count"] == len(after - before)
    assert body["files_removed"]["count"] == len(before - after)
    assert body["commit_count"] == V_LAST - 5
    for params in (
        {"from": 3, "to": 3},
        {"from": 4},
        {"from": 1, "to": V_LAST + 5},
        {"from": "a", "to": 2},
    ):
        r = client.get(f"/api/tables/{table.id}/diff/", params)
        assert r.status_code == 400, params


@override_settings()
def test_health_history_is_thinned(table, client):
    body = client.get(f"/api/tables/{table.id}/health/history/", {"max_points": 4}).json()
    versions = [p["version"] for p in body["points"]]
    assert versions[-1] == V_LAST and len(versions) <= 6
    full = client.get(f"/api/tables/{table.id}/health/history/").json()["points"]
    assert [p["version"] for p in full] == list(range(V_LAST + 1))


def test_fleet_is_sortable_by_health_and_open_findings(table, client):
    from audit.health.models import TableHealth
    from audit.models import Table

    other = Table.objects.create(uri="/nowhere/other", name="other")
    TableHealth.objects.create(
        table=other, version=1, computed_at="2026-01-01T00:00:00Z", small_files=10**6,
        vacuumable_bytes=0, checkpoint_lag=0,
    )  # fmt: skip
    bare = Table.objects.create(uri="/nowhere/bare", name="bare")  # no health yet: last
    ours = TableHealth.objects.get(table=table)
    for key, first in (
        ("small_files", other.id),
        ("vacuumable_bytes", table.id),
        ("checkpoint_lag", table.id if ours.checkpoint_lag else other.id),
    ):
        body = client.get("/api/tables/", {"ordering": key}).json()
        ids = [t["id"] for t in body["results"]]
        assert ids[0] == first, key
        assert ids[-1] == bare.id, key
    rows = {t["id"]: t for t in client.get("/api/tables/").json()["results"]}
    assert rows[table.id]["health"]["vacuumable_bytes"] == ours.vacuumable_bytes > 0
    assert rows[bare.id]["health"] is None
    assert client.get("/api/tables/", {"ordering": "bogus"}).status_code == 400
    for i in range(Finding.objects.filter(table=table, status="open").count() + 1):
        Finding.objects.create(
            table=bare, kind="x", severity="info", version=i, summary="s", key=f"k{i}",
            last_seen="2026-01-01T00:00:00Z",
        )  # fmt: skip
    ids = [
        t["id"] for t in client.get("/api/tables/", {"ordering": "open_findings"}).json()["results"]
    ]
    assert ids[0] == bare.id


def test_fleet_page_sorts_by_vacuumable_bytes(table, member):
    from django.test import Client

    c = Client()
    c.force_login(member)
    html = c.get("/", {"sort": "vacuumable"}).content.decode()
    assert 'data-col="vacuumable"' in html and "Checkpoint lag" in html


def test_a_steady_tail_keeps_the_stored_health_exact(table):
    import pyarrow as pa
    from deltalake import write_deltalake

    from tests.support.health_tables import HOSTILE_COLUMN, _batch

    for i in (60, 61):
        batch = _batch(i).append_column(HOSTILE_COLUMN, pa.array([None] * 10, pa.float64()))
        write_deltalake(table.uri, batch, mode="append")
    result = tail_once(table.id)
    assert result.stored == 2
    stored = TableHealth.objects.get(table=table)
    expected = health_at(open_log(table.uri))
    assert stored.version == V_LAST + 2
    # log bytes were added up from the new commits, not listed again: still exact
    assert stored.data["log"] == expected["log"]
    assert stored.data["num_files"] == expected["num_files"] == len(add_actions(table.uri))
    points = HealthPoint.objects.filter(table=table, version__gt=V_LAST).order_by("version")
    assert [p.num_files for p in points] == [
        len(add_actions(table.uri, v)) for v in (V_LAST + 1, V_LAST + 2)
    ]


def test_the_finding_page_links_a_metadata_change_finding_to_its_change(table, member):
    from django.test import Client

    finding = Finding.objects.get(table=table, kind="schema_change")
    c = Client()
    c.force_login(member)
    html = c.get(f"/findings/{finding.id}/").content.decode()
    assert f'href="/tables/{table.id}/#changes"' in html
    assert f"/tables/{table.id}/diff/?from={V_SCHEMA - 1}&amp;to={V_SCHEMA}" in html
    assert HOSTILE_COLUMN not in html  # escaped in the summary, never raw markup
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


FILE_SECTIONS = ("num_files", "total_bytes", "num_records", "file_size_histogram", "small_files",
                 "files_without_stats", "partitions", "partition_skew", "deletion_vectors")  # fmt: skip


def test_the_sums_kept_between_steps_stay_exact(table):
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from audit.ingest import health_store as store
    from tests.support.health_tables import HOSTILE_COLUMN, _batch

    def batch(i):
        return _batch(i).append_column(HOSTILE_COLUMN, pa.array([None] * 10, pa.float64()))

    writes = [
        lambda: write_deltalake(table.uri, batch(70), mode="append"),
        lambda: DeltaTable(table.uri).delete("id < 5"),
        lambda: write_deltalake(table.uri, batch(71), mode="append"),
        lambda: DeltaTable(table.uri).optimize.compact(),
        lambda: DeltaTable(table.uri).create_checkpoint(),  # the next step replays afresh
        lambda: write_deltalake(table.uri, batch(72), mode="append"),
    ]
    for write in writes:
        write()
        stored_commits = tail_once(table.id).stored
        # The next step moves these sums and these tombstones.
        assert table.id in store._kept_store("totals")
        assert (table.id, open_log(table.uri).uri) in store._kept_store("tombstones")
        stored = TableHealth.objects.get(table=table).data
        expected = health_at(open_log(table.uri))
        assert stored["version"] == expected["version"]
        assert {k: stored[k] for k in FILE_SECTIONS} == {k: expected[k] for k in FILE_SECTIONS}
        # A checkpoint alone stores no commit, but its idle step recomputes the health: the
        # checkpoint dropped expired tombstones (retention 0 days) and moved the lag.
        assert stored_commits == (0 if write is writes[4] else 1)
        for key in ("tombstones", "checkpoint", "log"):
            assert stored[key] == expected[key], key


def test_a_checkpoint_without_a_commit_refreshes_the_stored_health(table, receiver):
    from deltalake import DeltaTable
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit.ingest import health_store as store
    from tests.support.alerting import rule_for, webhook

    rule_for(webhook(receiver.url), name="lag", health_metric="checkpoint_lag", threshold=1)
    DeltaTable(table.uri).delete("id < 3")  # a commit: the health, and its lag alert
    assert tail_once(table.id).stored == 1
    before = TableHealth.objects.get(table=table).data["checkpoint"]
    lag = Finding.objects.get(table=table, kind="health_checkpoint_lag")
    assert lag.status == Finding.Status.OPEN and before["commits_since"] > 1

    DeltaTable(table.uri).create_checkpoint()  # no commit: the batch table's whole day
    assert tail_once(table.id).stored == 0
    stored = TableHealth.objects.get(table=table)
    expected = health_at(open_log(table.uri))
    assert stored.version == expected["version"] == V_LAST + 1
    assert stored.data["checkpoint"] == expected["checkpoint"]
    assert expected["checkpoint"]["commits_since"] == 0 == stored.checkpoint_lag
    assert not stored.data["checkpoint"]["last_checkpoint_stale"]
    assert stored.data["tombstones"] == expected["tombstones"]
    lag.refresh_from_db()
    assert lag.status == Finding.Status.RESOLVED  # the checkpoint ended the lag

    # Current now; once checked, the next idle steps do not even read it. (A test's
    # transaction never commits, so the check after storing is not remembered here.)
    log_ = open_log(table.uri)
    with CaptureQueriesContext(connection) as queries:
        assert not store.listing_health_due(table.id, log_, V_LAST + 1)
    assert len(queries) == 1
    with CaptureQueriesContext(connection) as queries:
        assert not store.listing_health_due(table.id, log_, V_LAST + 1)
    assert len(queries) == 0


def test_the_changes_read_equals_its_orm_reference(table):
    from django.utils.timezone import now as change_time

    from audit.core.vocab import FindingKind
    from audit.models import Commit
    from audit.reads.health import table_changes

    change = TableChange.objects.filter(table=table).order_by("version").first()
    # An integer past 64 bits (orjson would read a float), markup, a provenance to show.
    change.diff = {"ratio": 0.1, "big": 2**70, "text": "<b>é</b>"}
    change.save()
    Commit.objects.filter(table=table, version=change.version).update(provenance={"user": "u"})
    Finding.objects.create(
        table=table,
        kind=FindingKind.CONCURRENT_METADATA_CHANGE,
        severity="warning",
        version=change.version,
        summary="s",
        key=f"test:{change.version}",
        last_seen=change_time(),
    )
    reference = list(
        TableChange.objects.filter(table=table).values(
            "version", "timestamp", "kind", "before", "after", "diff", "summary"
        )
    )
    for c in reference:
        c["findings"] = sorted(
            Finding.objects.filter(
                table=table, kind=FindingKind.CONCURRENT_METADATA_CHANGE, version=c["version"]
            ).values_list("id", flat=True)
        )
        commit = Commit.objects.filter(table=table, version=c["version"]).first()
        c["by"] = (commit.provenance if commit else None) or {}
    got = table_changes(table)
    assert len(got) == len(reference) >= 3
    assert got == reference
    assert got[0]["by"] == {"user": "u"} and got[0]["findings"]


def test_it_stores_a_steady_commit_without_a_savepoint_or_a_locking_read_of_its_own(table):
    """A steady tail stores one commit a step, all day: the rollups and the latest health are
    written inside the chunk's transaction, the health as one UPDATE of the row read before
    (update_or_create's savepoint, locking read and update were 4 of ~22 queries)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.support.health_tables import _batch

    write_deltalake_append(table.uri, _batch(62))
    with CaptureQueriesContext(connection) as queries:
        assert tail_once(table.id).stored == 1
    sql = [q["sql"] for q in queries.captured_queries]
    health = [s for s in sql if '"audit_tablehealth"' in s and not s.startswith("SELECT")]
    assert len(health) == 1 and health[0].startswith("UPDATE")
    assert not any("FOR UPDATE" in s and '"audit_tablehealth"' in s for s in sql)
    # The test runs in a transaction, so the chunk's own atomic block is a savepoint here:
    # none is nested in it.
    start = next(i for i, s in enumerate(sql) if s.startswith("SAVEPOINT"))
    name = sql[start].split()[1]
    end = sql.index(f"RELEASE SAVEPOINT {name}")
    assert any('"audit_commitrollup"' in s for s in sql[start:end])
    assert not any(s.startswith("SAVEPOINT") for s in sql[start + 1 : end])
    stored = TableHealth.objects.get(table=table)
    assert stored.version == V_LAST + 1
    expected = health_at(open_log(table.uri))
    for part in ("num_files", "total_bytes", "log", "checkpoint", "small_files"):
        assert stored.data[part] == expected[part], part


def write_deltalake_append(uri: str, batch) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    batch = batch.append_column(HOSTILE_COLUMN, pa.array([None] * len(batch), pa.float64()))
    write_deltalake(uri, batch, mode="append")


@pytest.mark.parametrize("max_points", [1, 3, 50, 400, 5000])
def test_health_history_reads_the_chosen_versions_as_the_orm_does(max_points):
    """The thinned history (one `version IN (...)` on SQLite, one array parameter on
    PostgreSQL) holds exactly the stored points at every stride-th version and the last,
    whatever the gaps: the ORM's filter as the reference."""
    import random

    from audit.health.models import HealthPoint
    from audit.models import Table
    from audit.reads.health import POINT_FIELDS, health_history

    table = Table.objects.create(uri="/nowhere/points", name="points")
    versions = sorted(random.Random(max_points).sample(range(3, 3000), 700))
    HealthPoint.objects.bulk_create(
        HealthPoint(table=table, version=v, timestamp=v * 10 if v % 7 else None,
                    num_files=v, total_bytes=2 * v, small_files=v % 5)
        for v in versions
    )  # fmt: skip
    first, last = versions[0], versions[-1]
    stride = max(-(-(last - first + 1) // max_points), 1)
    wanted = [*range(first, last + 1, stride)]
    wanted += [] if wanted[-1] == last else [last]
    expected = list(
        HealthPoint.objects.filter(table=table, version__in=wanted)
        .order_by("version")
        .values(*POINT_FIELDS)
    )
    assert health_history(table, max_points=max_points) == expected
    assert expected and expected[-1]["version"] == last
