"""The commits list's time window (`since` / `until`) is read inside version bounds taken from
the rollups (audit.reads.queries.commit_time_bounds). Delta commit timestamps are not monotonic
(clock skew between writers), so the bounds must never drop a commit whose timestamp is in
the window: each answer here is compared with the plain timestamp filter of the same rows."""

from __future__ import annotations

import random

import pytest

import audit.models
from audit.ingest.rollup_store import rebuild_rollups
from audit.models import Commit, CommitRollup, Table
from audit.reads import queries
from tests.support.clients import token_client

pytestmark = pytest.mark.django_db

SIZE = 8  # small rollups: a window crosses many of them
BASE = 1_700_000_000_000


@pytest.fixture(autouse=True)
def small_rollups(monkeypatch):
    monkeypatch.setattr(audit.models, "ROLLUP_SIZE", SIZE)


def skewed_table(versions: range, seed: int) -> Table:
    """Commits one second apart, a fifth of them skewed by up to a minute either way (out of
    version order), some without a timestamp."""
    table = Table.objects.create(uri=f"/data/skewed-{seed}", name="skewed", status="ok")
    rng = random.Random(seed)
    commits = []
    for v in versions:
        ts = BASE + v * 1000
        if rng.random() < 0.2:
            ts += rng.randint(-60_000, 60_000)
        if rng.random() < 0.03:
            ts = None
        commits.append(Commit(table=table, version=v, timestamp=ts, operation="WRITE"))
    Commit.objects.bulk_create(commits)
    table.last_seen_version = versions[-1]
    table.save(update_fields=["last_seen_version"])
    return table


def expected(table: Table, since: int | None, until: int | None, order: str) -> list[int]:
    rows = Commit.objects.filter(table=table)
    if since is not None:
        rows = rows.filter(timestamp__gte=since)
    if until is not None:
        rows = rows.filter(timestamp__lte=until)
    return list(rows.order_by("version" if order == "asc" else "-version").values_list(
        "version", flat=True
    ))  # fmt: skip


def listed(client, table: Table, params: dict) -> list[int]:
    """Every page of the list, following `next`."""
    url, out = f"/api/tables/{table.id}/commits/", []
    response = client.get(url, {**params, "page_size": 7})
    while True:
        assert response.status_code == 200, response.content
        body = response.json()
        out += [r["version"] for r in body["results"]]
        if not body["next"]:
            return out
        response = client.get(body["next"])


def windows(rng: random.Random, n: int) -> list[tuple[int | None, int | None]]:
    out: list[tuple[int | None, int | None]] = [(None, BASE + 5_000), (BASE + 150_000, None)]
    for _ in range(n):
        a, b = sorted(rng.randint(BASE - 70_000, BASE + 270_000) for _ in range(2))
        out.append((a, b))
    return out + [(BASE + 500_000, None), (None, BASE - 100_000), (BASE + 9_000, BASE + 8_000)]


def test_a_time_window_gives_the_rows_of_the_timestamp_filter(owner):
    table = skewed_table(range(3, 203), seed=1)  # versions need not start at 0
    rebuild_rollups(table.id)
    client, rng = token_client(owner), random.Random(2)
    for since, until in windows(rng, 25):
        assert queries.commit_time_bounds(table.id, since, until) is not None  # bounded path
        for order in ("desc", "asc"):
            params = {"order": order}
            params |= {"since": since} if since is not None else {}
            params |= {"until": until} if until is not None else {}
            assert listed(client, table, params) == expected(table, since, until, order)


def test_bounds_hold_every_commit_of_the_window_even_far_out_of_order(owner):
    table = skewed_table(range(0, 100), seed=3)
    # v5 written with a clock an hour fast, v90 with one an hour slow.
    Commit.objects.filter(table=table, version=5).update(timestamp=BASE + 3_600_000)
    Commit.objects.filter(table=table, version=90).update(timestamp=BASE - 3_600_000)
    rebuild_rollups(table.id)
    client = token_client(owner)
    assert listed(client, table, {"since": BASE + 3_000_000}) == [5]
    assert listed(client, table, {"until": BASE - 3_000_000}) == [90]
    lo, hi = queries.commit_time_bounds(table.id, BASE + 3_000_000, None)
    assert lo <= 5 <= hi


def test_without_complete_rollups_it_filters_by_time_alone(owner):
    table = skewed_table(range(0, 60), seed=4)
    rebuild_rollups(table.id)
    # Commits stored without their rollups (a bulk load that did not rebuild them).
    Commit.objects.bulk_create(
        [Commit(table=table, version=v, timestamp=BASE + 10, operation="WRITE") for v in (60, 61)]
    )
    client = token_client(owner)
    assert queries.commit_time_bounds(table.id, BASE, BASE + 20) is None
    assert listed(client, table, {"since": BASE, "until": BASE + 20}) == expected(
        table, BASE, BASE + 20, "desc"
    )
    CommitRollup.objects.filter(table=table).delete()
    assert queries.commit_time_bounds(table.id, BASE, None) is None
    assert listed(client, table, {"since": BASE}) == expected(table, BASE, None, "desc")
