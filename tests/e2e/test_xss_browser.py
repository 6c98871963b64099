"""Hostile log strings stay inert on every dashboard page.

The table is written with the real `deltalake` writer: user names (commitInfo.userName through
CommitProperties custom metadata), a DELETE predicate, a partition value and data rows carry
`<script>`, `<img src=x onerror=...>` and `javascript:` payloads; a stale DELETE turns the
hostile rows into a never-existed-snapshot witness. One more commit file is written by hand, as
a hostile writer could: its operation name is markup, so the timeline's JavaScript (legend,
tooltip) gets it too. Every payload either sets `window.__xss` or opens a dialog if it runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit import ingest
from audit.models import Finding, Table
from tests.e2e import test_browser
from tests.e2e.test_browser import CHROMIUM, EXCEPTIONS, log_in, wait_for_timeline

# The browser fixtures of tests/e2e/test_browser.py, shared (pytest finds fixtures by attribute).
browser = test_browser.browser
watched = test_browser.watched

pytestmark = pytest.mark.django_db

SCRIPT_USER = "<script>window.__xss='user';alert('user')</script>"
IMG_NAME = "<img src=x onerror=\"window.__xss='row';alert('row')\">"
JS_URL = "javascript:window.__xss='url';alert('url')"
TAG = "\"><svg onload=\"window.__xss='tag';alert('tag')\">"
HOSTILE_OP = "<img src=x onerror=\"window.__xss='op';alert('op')\">"
TABLE_NAME = "<script>window.__xss='name'</script>"


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


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent")
def test_it_runs_no_script_from_the_log_in_the_browser(watched, live_server, owner, hostile_table):
    w, base, t = watched, live_server.url, hostile_table.id
    finding = Finding.objects.get(table=hostile_table, kind="never_existed_snapshot")
    log_in(w, base)
    assert w.page.locator("#tables tbody a").first.inner_text() == TABLE_NAME

    w.page.goto(f"{base}/tables/{t}/")
    wait_for_timeline(w.page)
    assert HOSTILE_OP in w.page.locator("#legend").inner_text()  # shown as text
    assert w.page.locator("#legend img, #legend script").count() == 0
    # Hover the hostile commit: the tooltip shows its operation name as text, not markup.
    x, y = w.page.evaluate(
        """() => {
            const chart = echarts.getInstanceByDom(document.getElementById('timeline'));
            return chart.convertToPixel({gridIndex: 0}, [4, window.__timeline.laneOf.get(4)]);
        }"""
    )
    box = w.page.locator("#timeline canvas").first.bounding_box()
    w.page.mouse.move(box["x"] + x, box["y"] + y)
    tooltip = w.page.locator(".timeline-tooltip")
    tooltip.wait_for(state="visible", timeout=5000)
    assert HOSTILE_OP in tooltip.inner_text()
    assert tooltip.locator("img").count() == 0
    w.shot("xss-table")

    urls = [
        f"/tables/{t}/commits/3/",
        f"/tables/{t}/commits/4/",
        f"/tables/{t}/analysis/",
        f"/findings/{finding.id}/",
        "/findings/?status=all",
    ]
    for url in urls:
        w.page.goto(base + url)
        w.page.wait_for_load_state("load")
        injected = "main img, main script:not([type='application/json']), main svg, main iframe"
        assert w.page.locator(injected).count() == 0, url
    w.page.goto(f"{base}/findings/{finding.id}/")
    assert IMG_NAME in w.page.locator("#witness-table").inner_text()  # the row, as text
    w.shot("xss-finding")

    w.page.goto(f"{base}/explain/")
    w.page.fill("#id_text", (EXCEPTIONS / "hostile_script.txt").read_text())
    w.page.click("#explain-form button[type=submit]")
    w.page.wait_for_selector("#explanation h2")
    assert w.page.locator("#explanation img, #explanation script").count() == 0
    w.shot("xss-explain")

    assert w.page.evaluate("() => window.__xss") is None
    assert w.dialogs == []
    assert [p for p in w.problems if "Content Security Policy" in p] == []
