"""/tables/<id>/history/: the commits as DESCRIBE HISTORY shows them, on a real delta-rs table
whose writers record users, jobs and metadata; its filters are the commits list's, its pages
start from the rollups (shrunk here so a page crosses several)."""

from __future__ import annotations

import re

import pytest
from deltalake import CommitProperties, write_deltalake

import audit.models
from audit.models import Commit, Finding
from audit.reads import history
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.projects import into
from tests.support.tables import rows

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('h')</script>"
COMMITS = 23  # v0..v22


def _write(path, i: int, **custom) -> None:
    props = CommitProperties(custom_metadata=custom) if custom else None
    write_deltalake(str(path), rows(1, start=i), mode="append", commit_properties=props)


@pytest.fixture
def table(tmp_path, settings, monkeypatch):
    """v0..v22: alice's appends, a nightly job every third commit, one hostile user (v7)
    and one commit with metadata naming a ticket (v11); a finding at v7."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    monkeypatch.setattr(audit.models, "ROLLUP_SIZE", 4)  # pages cross rollup blocks
    path = tmp_path / "events"
    for i in range(COMMITS):
        if i == 7:
            _write(path, i, userName=HOSTILE)
        elif i == 11:
            _write(path, i, userName="alice", userMetadata="ticket OPS-42")
        elif i % 3 == 0:
            _write(path, i, job="nightly")
        else:
            _write(path, i, userName="alice")
    table = ingest_table(path)
    Finding.objects.create(
        table=table, kind="metrics_mismatch", severity="warning", version=7,
        related_versions=[], summary=HOSTILE, key="k", last_seen="2026-01-01T00:00:00Z",
    )  # fmt: skip
    return table


def _versions(body: str) -> list[int]:
    return [int(v) for v in re.findall(r'class="history-row" data-version="(\d+)"', body)]


def _get(user, table, query: str = "") -> tuple[int, str]:
    response = session_client(user).get(f"/tables/{table.id}/history/{query}")
    return response.status_code, response.content.decode()


def test_it_lists_every_commit_newest_first_with_its_columns(table, member):
    status, body = _get(member, table)
    assert status == 200
    assert _versions(body) == list(range(COMMITS - 1, -1, -1))
    assert "23 commits" in body and "page 1 of 1" in body
    assert "nightly" in body and "WRITE" in body
    assert "Read version" in body and "Isolation level" in body and "Blind append" in body
    assert f'href="/findings/{Finding.objects.get(table=table).id}/"' in body


def test_it_filters_by_user_job_metadata_operation_and_time(table, member):
    alice = Commit.objects.filter(table=table, user_name="alice").values_list("version", flat=True)
    assert _versions(_get(member, table, "?user=alice")[1]) == sorted(alice, reverse=True)
    assert _versions(_get(member, table, "?job=nightly")[1]) == [21, 18, 15, 12, 9, 6, 3, 0]
    assert _versions(_get(member, table, "?q=ops-42")[1]) == [11]
    assert _versions(_get(member, table, "?operation=WRITE&job=nightly&page=1")[1])[:2] == [21, 18]
    assert _versions(_get(member, table, "?operation=DELETE")[1]) == []
    v5 = Commit.objects.get(table=table, version=5).timestamp
    v9 = Commit.objects.get(table=table, version=9).timestamp
    window = _versions(_get(member, table, f"?since={v5}&until={v9}")[1])
    assert window == [9, 8, 7, 6, 5] or set(window) >= {9, 5}  # commits a ms apart may tie


def test_it_pages_from_the_rollups_as_from_the_rows(table, member, monkeypatch):
    monkeypatch.setattr(history, "PAGE_SIZE", 5)
    newest_first = list(range(COMMITS - 1, -1, -1))
    for number in range(1, 7):
        page = history.history_page(table.id, {}, number)
        assert [r["version"] for r in page.rows] == newest_first[(number - 1) * 5 : number * 5]
        assert page.has_next == (number * 5 < COMMITS) and page.total == COMMITS
    writes = history.history_page(table.id, {"operation": "WRITE"}, 3)
    assert [r["version"] for r in writes.rows] == newest_first[10:15] and writes.total == COMMITS
    quoted = history.history_page(table.id, {"operation": 'WRITE,WR"ITE'}, 3)  # decoded here
    assert [r["version"] for r in quoted.rows] == newest_first[10:15] and quoted.total == COMMITS
    assert history.history_page(table.id, {"operation": "WRITE"}, 6).rows == []
    _, body = _get(member, table, "?page=2")
    assert _versions(body) == [17, 16, 15, 14, 13]
    assert 'rel="prev"' in body and "page=1" in body and "page 2 of 5" in body
    assert _versions(_get(member, table, "?page=99")[1]) == []  # past the end: no row, no error


def test_it_links_the_next_page_keeping_the_filters(table, member, monkeypatch):
    monkeypatch.setattr(history, "PAGE_SIZE", 3)
    _, body = _get(member, table, "?job=nightly")
    assert _versions(body) == [21, 18, 15]
    assert "?job=nightly&amp;page=2" in body
    assert _versions(_get(member, table, "?job=nightly&page=3")[1]) == [3, 0]


def test_it_walks_the_pages_by_their_links_as_by_their_numbers(table, member, monkeypatch):
    """The links carry a keyset (before / after): following them gives the pages the numbers
    give, older and back newer; read by version windows (two versions wide at first here, so
    a page spans several)."""
    monkeypatch.setattr(history, "PAGE_SIZE", 3)
    monkeypatch.setattr(history, "FIRST_WINDOW", 2)
    pages, query = [], "?user=alice"
    while query:
        _, body = _get(member, table, query)
        pages.append(_versions(body))
        found = re.search(r'rel="next" href="([^"]+)"', body)
        query = found.group(1).replace("&amp;", "&") if found else ""
        assert not found or "before=" in query
    by_number = [_versions(_get(member, table, f"?user=alice&page={n}")[1]) for n in range(1, 6)]
    assert pages == [p for p in by_number if p] and len(pages) == 5
    back = re.search(r'rel="prev" href="([^"]+)"', body).group(1).replace("&amp;", "&")
    assert "after=" in back and _versions(_get(member, table, back)[1]) == pages[-2]


@pytest.mark.parametrize("query", ["user=alice", "job=nightly", "operation=WRITE&user=alice"])
def test_a_typed_page_number_gives_that_slice_of_the_filtered_rows(
    table, member, monkeypatch, query
):
    """A filter the rollups do not count: the page's first row found by an offset over the
    versions, the page read from there by version windows (two versions wide at first here);
    with a time window too (its versions bound the windows)."""
    monkeypatch.setattr(history, "PAGE_SIZE", 3)
    monkeypatch.setattr(history, "FIRST_WINDOW", 2)
    monkeypatch.setattr(history, "PAGE_SIZE", 100)
    every = _versions(_get(member, table, f"?{query}")[1])
    monkeypatch.setattr(history, "PAGE_SIZE", 3)
    for number in range(1, len(every) // 3 + 3):
        body = _get(member, table, f"?{query}&page={number}")[1]
        assert _versions(body) == every[(number - 1) * 3 : number * 3], number
        assert ('rel="next"' in body) == (number * 3 < len(every))
    times = (
        Commit.objects.filter(table=table).order_by("version").values_list("timestamp", flat=True)
    )
    window = f"since={times[4]}&until={times[16]}"
    inside = [v for v in every if 4 <= v <= 16]
    for number in range(1, len(inside) // 3 + 2):
        body = _get(member, table, f"?{query}&{window}&page={number}")[1]
        assert _versions(body) == inside[(number - 1) * 3 : number * 3], number


def test_it_answers_a_bad_filter_400_on_the_page(table, member):
    status, body = _get(member, table, "?engine=cobol&since=yesterday")
    assert status == 400
    assert "engine:" in body and "since:" in body and "history-row" not in body


def test_it_escapes_what_writers_wrote(table, member):
    _, body = _get(member, table, "?user=" + HOSTILE)
    assert _versions(body) == [7]
    assert HOSTILE not in body and "&lt;script&gt;" in body
    table.name, table.settings_snapshot = HOSTILE, {"partition_columns": [HOSTILE]}
    table.save(update_fields=["name", "settings_snapshot"])
    _, body = _get(member, table, "?q=" + HOSTILE)  # the head, the form's value
    assert HOSTILE not in body and body.count("&lt;script&gt;") >= 3


def test_it_is_404_to_another_projects_reader_and_asks_for_login(table, member, outsider):
    into(table, "finance")
    assert _get(outsider, table)[0] == 404
    assert _get(member, table)[0] == 404
    assert _get(None, table)[0] == 302


def test_it_is_linked_from_the_table_page(table, member):
    body = session_client(member).get(f"/tables/{table.id}/").content.decode()
    assert f'href="/tables/{table.id}/history/"' in body
