"""The commits and findings lists by plain SQL (audit/api/list_sql.py) answer what django-filter
and the ORM answered (tests/app/api/list_reference.py, the reference): the same status and the
same body bytes for every filter the API documents, combinations of them, hostile values,
empty results, cursors followed both ways from both ends and forged cursors."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
from urllib.parse import urlencode

import pytest

import audit.models
from audit.ingest.rollup_store import rebuild_rollups
from audit.models import Commit, Finding, Table
from tests.app.api import list_reference
from tests.support.clients import token_client

pytestmark = pytest.mark.django_db

BASE = 1_700_000_000_000
OPERATIONS = ["WRITE", "DELETE", "MERGE", "UPDATE", "OPTIMIZE", "CREATE TABLE"]
KINDS = ["write_serializable_reorder", "never_existed_snapshot", "conflict_hotspot", "health_x"]
SEVERITIES = ["info", "warning", "critical"]


@pytest.fixture(autouse=True)
def uncached(settings, monkeypatch):
    settings.AUDIT_API_LIST_CACHE_SECONDS = 0  # every request computes its answer
    settings.AUDIT_API_FAST_PATH = False
    monkeypatch.setattr(audit.models, "ROLLUP_SIZE", 8)  # time windows cross many rollups


def _commits(table: Table, count: int, rng: random.Random) -> None:
    commits = []
    for v in range(count):
        ts = BASE + v * 1000 + (rng.randint(-30_000, 30_000) if rng.random() < 0.2 else 0)
        concurrent = sorted(rng.sample(range(max(v - 5, 0), v), min(v, rng.choice([0, 0, 1, 3]))))
        commits.append(
            Commit(
                table=table,
                version=v,
                timestamp=None if rng.random() < 0.03 else ts,
                operation=rng.choice(OPERATIONS),
                read_version=rng.choice([None, max(v - 2, 0)]),
                isolation_level=rng.choice([None, "Serializable", "WriteSerializable"]),
                blind_append=rng.choice([None, True, False]),
                concurrent_versions=concurrent,
                concurrent_count=len(concurrent),
                files_added=rng.randint(0, 9),
                files_removed=rng.randint(0, 3),
                engine=rng.choice(["spark", "delta-rs", ""]),
                user_name=rng.choice(["alice", "bob", ""]),
                user_id=rng.choice(["u1", "alice", ""]),
                job_id=rng.choice(["nightly", "42", ""]),
                user_metadata=rng.choice(["Backfill 100%_done", "hotfix", "", "ÉTÉ run"]),
                operation_parameters=rng.choice(
                    [
                        {},
                        {"mode": "Append"},
                        {"predicate": "[\"id = 'x'\"]"},
                        {"note": "été"},
                        {"mode": "Overwrite", "n": 100},
                    ]
                ),  # fmt: skip
            )
        )
    Commit.objects.bulk_create(commits)
    table.last_seen_version = count - 1
    table.save(update_fields=["last_seen_version"])
    rebuild_rollups(table.id)


def _findings(tables: list[Table], count: int, users, rng: random.Random) -> None:
    start = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    findings = []
    for i in range(count):
        version = rng.randrange(0, 120)
        acked = rng.random() < 0.3
        resolved = rng.random() < 0.25
        findings.append(
            Finding(
                table=rng.choice(tables),
                kind=rng.choice(KINDS),
                severity=rng.choice(SEVERITIES),
                version=version,
                related_versions=rng.choice([[], [version - 1], [1, 2, 2**40]]),
                confirmed=rng.random() < 0.4,
                summary=f'finding {i} \u00e9 "q" <b>',
                key=f"k{i}",
                last_seen=start + dt.timedelta(seconds=i, microseconds=i),
                status="resolved" if resolved else "open",
                resolved_at=start + dt.timedelta(hours=i) if resolved else None,
                acknowledged_by=rng.choice(users) if acked else None,
                acknowledged_at=start + dt.timedelta(minutes=i) if acked else None,
            )
        )
    Finding.objects.bulk_create(findings)


@pytest.fixture
def data(member, owner):
    rng = random.Random(5)
    big = Table.objects.create(uri="/data/big", name="big", status="ok")
    small = Table.objects.create(uri="/data/small", name="small", status="ok")
    Table.objects.create(uri="/data/empty", name="empty", status="ok")
    _commits(big, 130, rng)
    _commits(small, 9, rng)
    _findings([big, small], 160, [member, owner, None], rng)
    return big, small


def _both(client, settings, url: str) -> tuple[int, bytes]:
    """The reference's and the plain path's answer to `url`; asserts they are equal."""
    answers = []
    for plain in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if not plain:
                list_reference.use(patch)
            response = client.get(url)
        answers.append((response.status_code, response.content))
    assert answers[0] == answers[1], url
    return answers[1]


def _cursor(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


HOSTILE_CURSORS = [
    "%%%", "", _cursor("p=5"), _cursor("r=1&p=50"), _cursor("o=3&p=100"), _cursor("o=3&r=1&p=60"),
    _cursor("o=2000"), _cursor("o=5"), _cursor("p=abc"), _cursor("x=1"), _cursor("p=99999999999999999999"),
    _cursor("p=-1"), _cursor("r=1"), _cursor("o=1&r=1"),
]  # fmt: skip

COMMIT_VALUES = {
    "operation": ["WRITE", "DELETE,MERGE", "WRITE,WRITE", "NOPE", "", ",,", " MERGE , UPDATE ",
                  ",".join(["A"] * 51), "CREATE TABLE", "x\x00y"],
    "min_version": ["10", "0", "-5", "abc", "99999999999999999999", "129", "500", "1.5", ""],
    "max_version": ["20", "0", "7", "-1", "9223372036854775807", "x", ""],
    "since": [str(BASE + 40_000), "2023-11-14T22:14:00", "2023-11-14", "2023-11-14T22:14:00+02:00",
              "bad", "99999999999999999999", "", str(BASE + 200_000), "-5"],
    "until": [str(BASE + 60_000), "2023-11-14T22:15:30Z", "9999-12-31T23:59:59-23:59", str(BASE)],
    "has_concurrent": ["true", "false", "yes", "0", "maybe", "", "TRUE"],
    "user": ["alice", "u1", "nobody", "", "x" * 201, "a\x00"],
    "engine": ["spark", "delta-rs,spark", "bogus", ""],
    "job": ["nightly", "42", "none", ""],
    "user_metadata": ["backfill", "100%", "_", "%_d", "HOT", "été", "", "\\"],
    "q": ["backfill", "append", "MODE", "100%", "_", '"', "été", "x" * 201, "", "\\"],
    "order": ["asc", "desc", "sideways", ""],
    "page_size": ["1", "7", "1000", "0", "-1", "abc", "5000"],
    "cursor": HOSTILE_CURSORS,
    "unknown": ["1"],
}  # fmt: skip
FINDING_VALUES = {
    "kind": [",".join(KINDS[:2]), "conflict_hotspot", "health_anything", "bogus", "", "a," * 60],
    "severity": ["warning,critical", "info", "bad", ""],
    "min_severity": ["warning", "critical", "info", "bogus", ""],
    "confirmed": ["true", "false", "1", "nah"],
    "status": ["open", "resolved", "null", "bogus", ""],
    "acknowledged": ["true", "false", "x"],
    "min_version": ["10", "abc", "-99999999999999999999"],
    "max_version": ["60", "0"],
    "order": ["asc", "desc", "up"],
    "page_size": ["1", "7", "1000", "0", "zz"],
    "cursor": HOSTILE_CURSORS,
}  # fmt: skip


def _combinations(values: dict, rng: random.Random, count: int):
    """Each value of each parameter alone, then `count` random combinations."""
    for name, options in values.items():
        for option in options:
            yield {name: option}
    names = list(values)
    for _ in range(count):
        chosen = rng.sample(names, rng.randint(2, 5))
        yield {name: rng.choice(values[name]) for name in chosen}


def _walk(client, settings, url: str, link: str = "next") -> list[int]:
    """Follow `link` from `url` to the end on both paths; the statuses seen."""
    statuses = []
    while url:
        status, body = _both(client, settings, url)
        statuses.append(status)
        if status != 200:
            break
        url = json.loads(body)[link]
    return statuses


def test_commit_filters_answer_as_before(data, member, settings):
    big, small = data
    client = token_client(member)
    rng = random.Random(1)
    seen = set()
    for table in (big, small):
        for params in _combinations(COMMIT_VALUES, rng, 120):
            status, _ = _both(
                client, settings, f"/api/tables/{table.id}/commits/?{urlencode(params)}"
            )
            seen.add(status)
    assert seen == {200, 400}
    # Repeated parameters (the last one counts) and missing or empty tables.
    for url in (
        f"/api/tables/{big.id}/commits/?operation=WRITE&operation=DELETE&min_version=3&min_version=x",
        f"/api/tables/{big.id + 99}/commits/",
        f"/api/tables/{big.id + 2}/commits/?order=asc",
    ):
        _both(client, settings, url)


def test_commit_pages_walk_both_ways_as_before(data, member, settings):
    big, _ = data
    client = token_client(member)
    for query in ("page_size=7", "page_size=7&order=asc", "page_size=5&operation=WRITE",
                  f"page_size=4&since={BASE + 20_000}&until={BASE + 70_000}",
                  "page_size=9&has_concurrent=true&order=asc", "min_version=200"):  # fmt: skip
        url = f"/api/tables/{big.id}/commits/?{query}"
        forward = _walk(client, settings, url)
        assert set(forward) == {200}
        # From the last page back to the first.
        last = url
        while (page := client.get(last).json())["next"]:
            last = page["next"]
        assert set(_walk(client, settings, last, "previous")) == {200}


def test_finding_filters_answer_as_before(data, member, settings):
    big, small = data
    client = token_client(member)
    rng = random.Random(2)
    values = {**FINDING_VALUES, "table": [str(big.id), str(small.id), "abc", "99999", "", "-1"]}
    seen = set()
    for params in _combinations(values, rng, 200):
        status, _ = _both(client, settings, f"/api/findings/?{urlencode(params)}")
        seen.add(status)
    # A table filter naming no table the user sees (none, or another project's) is a 404.
    assert seen == {200, 400, 404}


def test_finding_pages_walk_both_ways_as_before(data, member, settings):
    big, _ = data
    client = token_client(member)
    for query in ("page_size=7", "page_size=7&order=asc", f"page_size=6&table={big.id}&status=open",
                  "page_size=5&acknowledged=true&min_severity=warning", f"kind=health_none&table={big.id}"):  # fmt: skip
        url = f"/api/findings/?{query}"
        assert set(_walk(client, settings, url)) == {200}
        last = url
        while (page := client.get(last).json())["next"]:
            last = page["next"]
        assert set(_walk(client, settings, last, "previous")) == {200}


def test_the_plain_path_is_the_one_measured(data, member, settings, monkeypatch):
    """The default is the plain path (a broken FilterSet no longer matters to it)."""
    from tests.app.api.list_reference import CommitFilter

    big, _ = data
    client = token_client(member)

    def broken(*args, **kwargs):
        raise AssertionError("django-filter used")

    monkeypatch.setattr(CommitFilter, "__init__", broken)
    assert client.get(f"/api/tables/{big.id}/commits/?operation=WRITE").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_rows_compiled_in_one_thread_are_read_in_another():
    """gunicorn's threads share the compiled query, each with its own connection."""
    import threading

    from django.db import connection

    from audit.reads.declared import list_sql

    table = Table.objects.create(uri="/data/threads", name="threads", status="ok")
    _commits(table, 12, random.Random(3))
    source = list_sql.values_source(Commit, ("version", "concurrent_versions"))
    conditions = [("table", "=", table.id), ("version", ">=", 3)]
    here = source.query(conditions).order_by("-version")[0:5]
    there: list = []

    def read():
        try:
            there.append(source.query(conditions).order_by("-version")[0:5])
        except Exception as err:  # noqa: BLE001 - reported below
            there.append(err)
        finally:
            connection.close()

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert [row["version"] for row in here] == [11, 10, 9, 8, 7]
    assert there == [here]


def test_the_reference_has_every_declared_filter_in_its_order():
    """The oracle filters what the declarations declare, in the same order (the order of a
    400's errors): a filter declared without its reference is not compared."""
    from audit.reads.declared.lists import COMMITS, FINDINGS
    from tests.app.api.list_reference import CommitFilter, FindingFilter

    assert list(CommitFilter.base_filters) == [p.name for p in COMMITS.params]
    assert list(FindingFilter.base_filters) == [p.name for p in FINDINGS.params]
    assert all(p.where is not None for p in (*COMMITS.params, *FINDINGS.params))


@pytest.mark.parametrize("use_tz", [True, False])
def test_the_fast_datetime_converter_answers_as_djangos(settings, use_tz):
    """SQLite's datetime converter, sped up for the lists (list_sql._fast_datetime), gives what
    Django's gives for every kind of value, with USE_TZ on and off (changed at run time)."""
    from django.db import connection

    from audit.reads.declared.list_sql import _fast

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's converter (PostgreSQL's driver returns aware datetimes)")
    settings.USE_TZ = use_tz
    django_converter = connection.ops.convert_datetimefield_value
    fast = _fast(django_converter)
    assert fast is not django_converter
    values = [
        None,
        dt.datetime(2026, 1, 2, 3, 4, 5, 6),
        dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        "2026-01-02 03:04:05.000006",
    ]
    for value in values:
        assert repr(fast(value, None, connection)) == repr(
            django_converter(value, None, connection)
        ), value
