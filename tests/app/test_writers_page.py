"""The dashboard's "who changed this table" page, on a table of real delta-rs writers with
user names, a job, a schema change and a finding at one writer's commit."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from audit.core.history.summary import load_history
from audit.core.incidents.causes import writer_parts, writer_text
from audit.models import Finding
from audit.reads.provenance import table_writers
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.tables import rows

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>"


def _write(path, data, *, mode="append", **custom) -> None:
    props = CommitProperties(custom_metadata=custom) if custom else None
    write_deltalake(str(path), data, mode=mode, commit_properties=props, schema_mode="merge")


@pytest.fixture
def table(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "events"
    _write(path, rows(1), userName="alice")
    _write(path, rows(1, start=1), userName="alice")
    wider = rows(1, start=2).append_column("note", pa.array(["x"]))
    _write(path, wider, userName=HOSTILE)  # v2: adds a column
    _write(path, rows(1, start=3), job="nightly", clusterId="0101-run-a")
    _write(path, rows(1, start=4), job="nightly", clusterId="0102-run-b")  # its next run
    table = ingest_table(path)
    Finding.objects.create(
        table=table, kind="metrics_mismatch", severity="warning", version=2,
        related_versions=[], summary="s", key="k", last_seen="2026-01-01T00:00:00Z",
    )  # fmt: skip
    return table


def test_it_groups_commits_changes_and_findings_per_writer(table):
    by = {w["name"]: w for w in table_writers(table)}
    assert set(by) == {"user alice", f"user {HOSTILE}", "job nightly"}
    assert by["user alice"]["commits"] == 2
    assert by["user alice"]["operations"] == [("WRITE", 2)]
    assert [(c["version"], c["kind"]) for c in by[f"user {HOSTILE}"]["changes"]] == [(2, "schema")]
    assert by[f"user {HOSTILE}"]["findings"]["warning"] == 1  # and the schema change (info)
    assert by["job nightly"]["findings"] == {} and by["job nightly"]["changes"] == []
    assert by["job nightly"]["commits"] == 2  # two runs on two clusters: one writer
    assert sorted(by["job nightly"]["clusters"]) == ["0101-run-a", "0102-run-b"]
    assert by["job nightly"]["engine"].startswith("delta-rs:")
    assert sum(week["commits"] for week in by["user alice"]["weeks"]) == 2


def test_it_shows_the_page_escaped_to_signed_in_users(table, member):
    response = session_client(member).get(f"/tables/{table.id}/writers/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Who changed this table" in body and "job nightly" in body
    assert HOSTILE not in body and "&lt;script&gt;" in body
    assert session_client(None).get(f"/tables/{table.id}/writers/").status_code == 302


def test_it_keys_writers_as_the_incident_causes_do(table):
    """One identity: the writers view's key of each commit is the causes' writer text."""
    history = load_history(table.uri)
    keys = {w["writer"] for w in table_writers(table)}
    assert keys == {writer_text(writer_parts(s)) for s in history.summaries}


def test_it_draws_commits_per_week_and_links_each_writers_commits(table, member):
    body = session_client(member).get(f"/tables/{table.id}/writers/").content.decode()
    assert body.count('<svg class="sparkline" role="img"') == 3
    assert "0 0 0 0" not in body  # the counts are the image's name, not the cell's text
    assert f'href="/tables/{table.id}/history/?job=nightly&amp;engine=delta-rs"' in body
    finding = Finding.objects.get(table=table, kind="metrics_mismatch")
    assert f'href="/findings/{finding.id}/"' in body
    history = session_client(member).get(f"/tables/{table.id}/history/?job=nightly&engine=delta-rs")
    assert history.content.decode().count('class="history-row"') == 2


def test_the_table_pages_panel_shows_the_same_writers_table(table, member):
    client = session_client(member)
    tab = client.get(f"/tables/{table.id}/writers/").content.decode()
    part = client.get(f"/tables/{table.id}/writers/?part=table").content.decode()
    assert part.strip() and part.strip() in tab
    page = client.get(f"/tables/{table.id}/").content.decode()
    assert f'data-people="/tables/{table.id}/writers/?part=table"' in page


def test_remembered_totals_follow_new_commits_and_findings(table, tmp_path):
    """The totals are remembered per process and brought up to date from the versions stored
    since: after more commits and a resolved finding, the view is what a fresh process shows."""
    from audit.reads.writer_totals import forget_all
    from audit.tail.step import tail_once

    before = {w["name"]: w["commits"] for w in table_writers(table)}
    path = tmp_path / "events"
    _write(path, rows(1, start=5), job="nightly", clusterId="0103-run-c")
    _write(path, rows(1, start=6), userName="bob")
    while tail_once(table.id).more:
        pass
    Finding.objects.filter(table=table).update(status=Finding.Status.RESOLVED)
    table.refresh_from_db()
    table.bump_findings(table.id)
    table.refresh_from_db()
    updated = table_writers(table)
    assert {w["name"]: w["commits"] for w in updated} == {**before, "job nightly": 3, "user bob": 1}
    assert all(w["findings"] == {} for w in updated)
    forget_all()
    assert table_writers(table) == updated


def test_it_shows_the_busiest_writers_and_counts_the_others(table, member, monkeypatch):
    from audit.reads import provenance

    shown = provenance.shown_writers(table, 2)
    assert [w["name"] for w in shown.writers] == ["job nightly", "user alice"]  # 2 commits each
    assert (shown.more_writers, shown.more_commits) == (1, 1)
    monkeypatch.setattr(provenance, "MAX_WRITERS_SHOWN", 2)
    body = session_client(member).get(f"/tables/{table.id}/writers/").content.decode()
    assert body.count('<tr class="writer-row">') == 2
    assert "1 more writer with 1 commit not shown: the 2 busiest are." in body


def test_a_writer_on_a_new_cluster_each_run_keeps_its_busiest_clusters():
    """Remembered totals stay bounded: past MAX_CLUSTERS a writer keeps its busiest ones."""
    import datetime as dt

    from audit.reads import writer_totals as wt

    totals = wt.TableTotals(0, dt.datetime(2026, 1, 5, tzinfo=dt.UTC), {})
    row = dict.fromkeys(wt.WRITER_COLUMNS, "") | {"operation": "WRITE", "week": None}
    runs = [{**row, "cluster": f"run-{i}", "n": 1, "first": i, "last": i} for i in range(1000)]
    busy = {**row, "cluster": "busy", "n": 50, "first": 0, "last": 0}
    wt._add(totals, [busy, *runs], lambda _: "w")
    w = totals.writers["w"]
    assert w.commits == 1050 and len(w.clusters) <= wt.MAX_CLUSTERS
    assert w.clusters.most_common(1) == [("busy", 50)]


def test_totals_over_the_memory_budget_are_used_once_and_never_kept(table, monkeypatch):
    """A log chooses its writers, operations and times: totals larger than MAX_ENTRIES (a
    hostile log's million writers) answer their request and are not remembered, and the
    tables remembered together stay within it (the least recently used dropped first)."""
    from audit.reads import writer_totals as wt

    wt.forget_all()
    first = table_writers(table)
    key = wt._table_key(table)
    entries = wt._remembered[key].entries
    assert entries > 1
    wt.forget_all()
    monkeypatch.setattr(wt, "MAX_ENTRIES", entries - 1)
    assert table_writers(table) == first
    assert key not in wt._remembered
    monkeypatch.setattr(wt, "MAX_ENTRIES", entries)
    assert table_writers(table) == first
    assert wt._remembered[key].entries == entries
    other = wt.TableTotals(None, wt._remembered[key].since, {})
    wt._remember("another", other)  # no writer: one more table within the budget
    assert set(wt._remembered) == {key, "another"}
    bigger = wt.TableTotals(None, other.since, {"w": wt.WriterTotals({})})
    wt._remember("a third", bigger)  # past the budget: the least recently used goes
    assert key not in wt._remembered and "a third" in wt._remembered
