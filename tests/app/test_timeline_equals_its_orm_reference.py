"""The timeline's queries compiled once (audit/reads/timeline/sql.py) against the ORM querysets they
replaced (tests/app/timeline_reference.py, main's code): byte-identical JSON on varied data.

Tables: empty; gaps in the versions; out-of-order and missing timestamps; every operation,
blind appends true/false/unknown, concurrency, operations only the window's edges hold; findings of every kind and severity, open,
resolved, acknowledged, on the same version and on the window's edges; schema changes; a
stretch stored without its rollups (the commit-row fallback). Windows: whole history, every
edge, beyond both ends, empty (lo > hi), and widths that take each path (rows, buckets of
whole rollups, of each cell level, of single rows).
"""

from __future__ import annotations

import random

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import audit.models
from audit.core.vocab import SEVERITY_ORDER, FindingKind
from audit.health.models import TableChange
from audit.ingest.rollup_store import rebuild_rollups
from audit.models import Commit, CommitRollup, Finding, Table
from audit.reads.timeline import window as timeline
from tests.app import timeline_reference

pytestmark = pytest.mark.django_db

SIZE = 256  # cells of 16 and 2 versions
OPERATIONS = ["WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE", "CREATE TABLE", ""]


@pytest.fixture(autouse=True)
def small_rollups(monkeypatch):
    monkeypatch.setattr(audit.models, "ROLLUP_SIZE", SIZE)


def _table(
    name: str,
    versions: list[int],
    seed: int,
    *,
    unrolled: range | None = None,
    operations: tuple[list[str], dict[int, str]] = (OPERATIONS, {}),
    packed_by_row: bool = False,
) -> Table:
    rng = random.Random(seed)
    table = Table.objects.create(uri=f"/t/{name}", name=name, status="ok")
    commits = []
    for v in versions:
        lag = rng.choice([1, 1, 1, 2, 5]) if v else 0
        ts = (
            None if rng.random() < 0.03 else 1_700_000_000_000 + v * 1000 + rng.randint(-9000, 9000)
        )
        concurrent = list(range(max(v - lag + 1, 0), v))
        commits.append(
            Commit(
                table=table, version=v, timestamp=ts,
                operation=operations[1].get(v) or rng.choice(operations[0]),
                read_version=v - lag if v else None,
                blind_append=rng.choice([True, False, None]),
                concurrent_versions=concurrent, concurrent_count=len(concurrent),
            )
        )  # fmt: skip
    Commit.objects.bulk_create(commits, batch_size=1000)
    rebuild_rollups(table.id)
    if unrolled is not None:  # commits stored without their rollups (a bulk load)
        CommitRollup.objects.filter(
            table=table, bucket_start__gte=unrolled.start, bucket_start__lt=unrolled.stop
        ).delete()
    if packed_by_row:
        _pack_by_row(table)
    _findings(table, versions, rng)
    for i, v in enumerate(versions[5::400]):
        TableChange.objects.create(
            table=table, version=v, timestamp=v, kind=["schema", "properties"][i % 2],
            before={"a": i}, after={"a": i + 1}, summary=f"change <{i}> at v{v}",
        )  # fmt: skip
    table.last_seen_version = versions[-1] if versions else None
    table.save()
    return table


def _pack_by_row(table: Table) -> None:
    """Rollups as they were packed before `rollups.pack_rows` (a list per row), blind appends
    as 0/1 in every other one: stored by an earlier release, read until rebuilt."""
    for i, rollup in enumerate(CommitRollup.objects.filter(table=table).order_by("bucket_start")):
        rows = timeline_reference.unpack_rows(rollup.rows)
        if i % 2:
            rows = [[*r[:4], None if r[4] is None else int(r[4]), r[5]] for r in rows]
        assert rollup.rows.startswith('{"columns":')
        rollup.rows = orjson.dumps(rows).decode()
        rollup.save(update_fields=["rows"])


def _findings(table: Table, versions: list[int], rng: random.Random) -> None:
    if not versions:
        return
    now = timezone.now()
    kinds = [str(k) for k in FindingKind]
    rows = []
    picks = [versions[0], versions[-1], *rng.choices(versions, k=min(len(versions), 700))]
    for i, v in enumerate(picks):
        status = "resolved" if rng.random() < 0.2 else "open"
        rows.append(
            Finding(
                table=table, kind=kinds[i % len(kinds)],
                severity=str(SEVERITY_ORDER[i % len(SEVERITY_ORDER)]), version=v,
                related_versions=[v - 1, v - 3] if i % 3 else [], confirmed=i % 4 == 0,
                summary=f"f{i}", key=f"k{i}", last_seen=now, status=status,
                acknowledged_at=now if i % 5 == 0 else None,
            )
        )  # fmt: skip
    Finding.objects.bulk_create(rows)


def _windows(first: int, latest: int) -> list[tuple]:
    mid = (first + latest) // 2
    spans = [
        (None, None), (first, latest), (first - 50, latest + 50), (mid, mid), (mid + 5, mid),
        (latest, None), (None, first), (first + 3, first + 700), (mid - 1000, mid + 1000),
        (SIZE - 1, 3 * SIZE), (SIZE, 3 * SIZE - 1), (17, latest - 33), (latest + 5, latest + 9),
    ]  # fmt: skip
    return [(lo, hi, points) for lo, hi in spans for points in (2, 10, 40, 150, 2000)]


CASES = {
    "dense": dict(versions=list(range(0, 3000)), seed=1),
    "gaps": dict(versions=sorted(random.Random(2).sample(range(0, 6000), 2100)), seed=2),
    "late start": dict(versions=list(range(1234, 2900)), seed=3),
    "unrolled stretch": dict(versions=list(range(0, 2600)), seed=4, unrolled=range(512, 1024)),
    "empty": dict(versions=[], seed=5),
    "rollups packed by row": dict(versions=list(range(0, 3000)), seed=6, packed_by_row=True),
    # Operations only the edges hold: the edges' cells cannot say which are in the window.
    "rare operations at the edges": dict(
        versions=list(range(0, 3000)),
        seed=7,
        operations=(["WRITE"], {5: "OPTIMIZE", 120: "DELETE", 1500: "MERGE", 2990: "RESTORE"}),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_window_equals_the_orm_timeline(case):
    table = _table(case.replace(" ", "-"), **CASES[case])
    versions = CASES[case]["versions"]
    first, latest = (versions[0], versions[-1]) if versions else (0, 10)
    modes = set()
    for lo, hi, points in _windows(first, latest):
        ours = timeline._timeline(table.id, lo, hi, points)
        theirs = timeline_reference._timeline(table.id, lo, hi, points)
        assert orjson.dumps(ours) == orjson.dumps(theirs), (case, lo, hi, points)
        modes.add((ours["mode"], bool(ours["findings"])))
    if versions:  # the windows took both paths, with findings
        assert {("rows", True), ("buckets", True)} <= modes


def test_acknowledging_or_resolving_changes_the_timeline_as_it_did():
    table = _table("moves", list(range(0, 1500)), seed=9)
    finding = Finding.objects.filter(table=table, status="open").order_by("version").first()
    Finding.objects.filter(pk=finding.pk).update(status="resolved")
    Finding.objects.filter(table=table, status="open").update(acknowledged_at=timezone.now())
    for lo, hi, points in _windows(0, 1499)[::3]:
        ours = timeline._timeline(table.id, lo, hi, points)
        assert orjson.dumps(ours) == orjson.dumps(
            timeline_reference._timeline(table.id, lo, hi, points)
        )


def test_a_cold_timeline_runs_its_queries_without_building_them_again():
    table = _table("queries", list(range(0, 3000)), seed=6)
    timeline._timeline(table.id, 100, 2900, 40)  # compiled here
    with CaptureQueriesContext(connection) as queries:
        timeline._timeline(table.id, 100, 2900, 40)
    # span, probe, whole rollups, edge rollups' cells, the commits of the one cell the
    # window's end cuts (2900 of 2900-2901), findings, changes
    assert len(queries) == 7, [q["sql"] for q in queries]


def test_a_timeline_request_runs_no_query_but_its_own_and_the_access_check(member, settings):
    """The table row the key reads is built as the ORM builds a row it read: a `Table(...)`
    filled its project with its default, a get-or-create query of the default project."""
    from tests.support.clients import token_client

    settings.AUDIT_API_TIMELINE_CACHE_SECONDS = 0
    table = _table("request", list(range(0, 3000)), seed=5)
    client = token_client(member)
    url = f"/api/tables/{table.id}/timeline/?from_version=100&to_version=2900&max_points=40"
    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert response.json() == timeline.table_timeline(table, 100, 2900, 40)
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in sqls if '"audit_project"' in sql], sqls
