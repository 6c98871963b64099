"""A hostile table in a real browser: no payload of its log runs (tests/app/test_xss.py checks
the escaping; the table is tests/support/hostile_table.py)."""

from __future__ import annotations

import os

import pytest

from audit.models import Finding
from tests.e2e import test_browser
from tests.e2e.test_browser import CHROMIUM, EXCEPTIONS, log_in, wait_for_timeline
from tests.support import hostile_table as hostile_tables
from tests.support.hostile_table import HOSTILE_OP, IMG_NAME, TABLE_NAME

# The browser fixtures of tests/e2e/test_browser.py, shared (pytest finds fixtures by attribute).
browser = test_browser.browser
watched = test_browser.watched

# The fixture (pytest finds fixtures by attribute).
hostile_table = hostile_tables.hostile_table

pytestmark = pytest.mark.django_db


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
