"""Hostile log strings stay inert on every dashboard page.

The table is written with the real `deltalake` writer: user names (commitInfo.userName through
CommitProperties custom metadata), a DELETE predicate, a partition value and data rows carry
`<script>`, `<img src=x onerror=...>` and `javascript:` payloads; a stale DELETE turns the
hostile rows into a never-existed-snapshot witness. One more commit file is written by hand, as
a hostile writer could: its operation name is markup, so the timeline's JavaScript (legend,
tooltip) gets it too. Every payload either sets `window.__xss` or opens a dialog if it runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit import ingest
from audit.models import Commit, Finding, Table
from tests.e2e.test_browser import EXCEPTIONS

pytestmark = pytest.mark.django_db

SCRIPT_USER = "<script>window.__xss='user';alert('user')</script>"
IMG_NAME = "<img src=x onerror=\"window.__xss='row';alert('row')\">"
JS_URL = "javascript:window.__xss='url';alert('url')"
TAG = "\"><svg onload=\"window.__xss='tag';alert('tag')\">"
HOSTILE_OP = "<img src=x onerror=\"window.__xss='op';alert('op')\">"
TABLE_NAME = "<script>window.__xss='name'</script>"
PAYLOAD_MARKERS = ("<script>window.__xss", "<img src=x onerror", "<svg onload")


def hostile(**extra: str) -> CommitProperties:
    return CommitProperties(custom_metadata={"userName": SCRIPT_USER, "userId": JS_URL, **extra})


def rows(names: list[str]) -> pa.Table:
    return pa.table(
        {
            "tag": pa.array([TAG] * len(names)),
            "name": pa.array(names),
            "link": pa.array([JS_URL] * len(names)),
        }
    )


def build_hostile_table(path: Path) -> None:
    config = {"delta.isolationLevel": "writeSerializable"}
    write_deltalake(
        str(path),
        rows(["a", "b"]),
        partition_by=["tag"],
        configuration=config,
        commit_properties=hostile(),
    )  # v0
    write_deltalake(
        str(path), rows(["c", IMG_NAME]), mode="append", commit_properties=hostile()
    )  # v1
    stale = DeltaTable(str(path))  # reads v1
    write_deltalake(
        str(path), rows([IMG_NAME]), mode="append", commit_properties=hostile(isBlindAppend=True)
    )  # v2: a blind append of rows the stale DELETE matches
    escaped = IMG_NAME.replace("'", "''")
    stale.delete(f"name = '{escaped}'", commit_properties=hostile())  # v3
    # v4, written by hand: a writer that names its operation with markup.
    commit_info = {
        "commitInfo": {
            "timestamp": 1_800_000_000_000,
            "operation": HOSTILE_OP,
            "operationParameters": {"note": JS_URL, "predicate": IMG_NAME},
            "userName": SCRIPT_USER,
            "engineInfo": "<b>hostile-writer</b>",
        }
    }
    log_file = path / "_delta_log" / f"{4:020d}.json"
    log_file.write_bytes(orjson.dumps(commit_info) + b"\n")


@pytest.fixture
def hostile_table(tmp_path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = tmp_path / "hostile"
    build_hostile_table(path)
    table, _ = ingest.register_table(str(path), name=TABLE_NAME)
    while ingest.tail_once(table.id).more:
        pass
    table.refresh_from_db()
    assert table.status == "ok", table.last_error
    return table


def assert_inert(html: str) -> None:
    for marker in PAYLOAD_MARKERS:
        assert marker not in html, marker
    assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)


def test_it_stores_the_hostile_strings_as_they_were_written(hostile_table):
    c3 = Commit.objects.get(table=hostile_table, version=3)
    assert c3.user_name == SCRIPT_USER
    assert IMG_NAME.replace("'", "''") in c3.predicate_raw
    assert Commit.objects.get(table=hostile_table, version=4).operation == HOSTILE_OP
    finding = Finding.objects.get(table=hostile_table, kind="never_existed_snapshot")
    assert any(row.get("name") == IMG_NAME for row in finding.witness["sample_rows"])


def test_it_escapes_log_strings_on_every_page(client, member, hostile_table):
    client.force_login(member)
    finding = Finding.objects.get(table=hostile_table, kind="never_existed_snapshot")
    t = hostile_table.id
    pages = {
        "/": [TABLE_NAME],
        f"/tables/{t}/": [TABLE_NAME],
        f"/tables/{t}/analysis/": [TABLE_NAME],
        f"/tables/{t}/commits/3/": [SCRIPT_USER, IMG_NAME.replace("'", "''"), TAG, JS_URL],
        f"/tables/{t}/commits/4/": [HOSTILE_OP, SCRIPT_USER, JS_URL],
        f"/tables/{t}/commits/2/": [SCRIPT_USER],
        "/findings/": [TABLE_NAME],
        f"/findings/{finding.id}/": [IMG_NAME, JS_URL, TAG],
    }
    for url, shown in pages.items():
        r = client.get(url)
        assert r.status_code == 200, url
        html = r.content.decode()
        assert_inert(html)
        for text in shown:
            # Shown, as text: escaped by the template (JSON dumps escape quotes first).
            escaped = [
                _escape(text),
                _escape(orjson.dumps(text).decode()[1:-1]),
                _escape(text.replace("'", "''")),
            ]
            assert any(e in html for e in escaped), (url, text)


def test_it_escapes_a_hostile_exception_text_on_the_explainer(client, member, hostile_table):
    client.force_login(member)
    text = (EXCEPTIONS / "hostile_script.txt").read_text()
    r = client.post("/explain/", {"text": text, "table": hostile_table.id})
    html = r.content.decode()
    assert_inert(html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html or "&lt;script&gt;" in html


def test_it_keeps_the_timeline_json_as_data(client, member, hostile_table):
    client.force_login(member)
    r = client.get(f"/api/tables/{hostile_table.id}/timeline/")
    assert r["Content-Type"].startswith("application/json")
    assert HOSTILE_OP in r.json()["operations"]


def _escape(text: str) -> str:
    from django.utils.html import escape

    return escape(text)
