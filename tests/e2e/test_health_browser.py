"""The health panel, change marks and diff page in headless Chromium: no console
errors, and hostile column names and property values stay text."""

from __future__ import annotations

import pytest

from audit.tail import orphan_scans
from tests.e2e.test_browser import (  # noqa: F401  (fixtures)
    CHROMIUM,
    browser,
    log_in,
    wait_for_timeline,
    wait_until,
    watched,
)
from tests.support.health_tables import (
    HOSTILE_COLUMN,
    HOSTILE_PROPERTY,
    add_hostile_property_commit,
    build_broken_time_travel_table,
    build_evolving_table,
)
from tests.support.ingested import ingest_table

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

INJECTED = "main img, main script:not([type='application/json']), main svg image, main iframe"


@pytest.fixture
def hostile_health_table(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = build_evolving_table(tmp_path / "evolving")
    last = add_hostile_property_commit(path)
    table = ingest_table(str(path), name="evolving")
    assert table.last_seen_version == last
    return table


def _walk_the_diff_pages(w, base: str, t) -> None:
    """The diff page with hostile names, the commit page's Diff button, a bad query (400)."""
    w.page.goto(f"{base}/tables/{t.id}/diff/?from=12&to={t.last_seen_version}")
    w.page.wait_for_selector("#diff-stats")
    text = w.page.locator("main").inner_text()
    assert HOSTILE_COLUMN in text and "schema" in text
    w.page.locator("details").last.evaluate("d => d.open = true")
    assert HOSTILE_PROPERTY in w.page.locator("main").inner_text()
    assert w.page.locator(INJECTED).count() == 0
    w.shot("health-diff")

    # From a commit page, the Diff button leads to that commit's diff.
    w.page.goto(f"{base}/tables/{t.id}/commits/13/")
    w.page.click("#diff-previous")
    w.page.wait_for_selector("#diff-stats")
    assert "from=12" in w.page.url and "to=13" in w.page.url
    assert w.problems == [], w.problems
    # A bad query is the client's: the page shows the error and answers 400, which the
    # browser reports as a failed load (that one, and nothing else, is expected).
    response = w.page.goto(f"{base}/tables/{t.id}/diff/?from=9&to=3")
    assert response.status == 400
    assert "must be lower" in w.page.locator("#diff-error").inner_text()
    assert [p for p in w.problems if "status of 400" not in p] == [], w.problems
    w.problems.clear()


def test_health_panel_changes_and_diff_render_hostile_strings_as_text(
    watched,  # noqa: F811
    live_server,
    owner,
    hostile_health_table,
):
    w, base, t = watched, live_server.url, hostile_health_table
    log_in(w, base)
    w.page.goto(f"{base}/tables/{t.id}/")
    wait_for_timeline(w.page)
    wait_until(w.page, "document.querySelectorAll('#health-stats .stat').length > 5")
    wait_until(w.page, "document.querySelectorAll('#changes-rows tr[id^=change-]').length >= 4")
    changes = w.page.locator("#changes-rows").inner_text()
    assert HOSTILE_COLUMN in changes and "window.__xss='prop'" in changes  # as text
    assert "VACUUM" in w.page.locator("#health-recs").inner_text()
    # Charts drew: the histogram, partitions, two gauges and the health-over-time lines.
    drawn = w.page.evaluate(
        """() => ['health-histogram', 'health-partitions', 'health-tombstones',
                  'health-checkpoint', 'health-history'].filter(id => {
            const c = echarts.getInstanceByDom(document.getElementById(id));
            return c && c.getOption().series.length > 0;
        }).length"""
    )
    assert drawn == 5
    # The timeline marks each change where it happened.
    marks = w.page.evaluate(
        """() => {
            const opt = echarts.getInstanceByDom(document.getElementById('timeline')).getOption();
            const s = opt.series.find(s => s.name === 'changes');
            return s ? s.markLine.data.map(d => d.name) : [];
        }"""
    )
    assert {"schema v13", "properties v14", "protocol v15"} <= set(marks)
    assert w.page.locator(INJECTED).count() == 0
    w.shot("health-panel")

    _walk_the_diff_pages(w, base, t)
    assert w.page.evaluate("() => window.__xss === undefined")
    assert w.dialogs == []
    assert w.problems == [], w.problems


def test_it_shows_the_readable_range_of_the_latest_scan_in_the_health_panel(
    watched,  # noqa: F811
    live_server,
    owner,
    tmp_path,
    settings,
):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    table = ingest_table(str(build_broken_time_travel_table(tmp_path / "t")), name="t")
    w, base = watched, live_server.url
    log_in(w, base)
    w.page.goto(f"{base}/tables/{table.id}/")
    wait_until(w.page, "document.querySelectorAll('#health-stats .stat').length > 5")
    assert "not scanned yet" in w.page.locator("#health-stats").text_content()
    orphan_scans.scan_table(table)
    w.page.goto(f"{base}/tables/{table.id}/")
    wait_until(w.page, "document.querySelector('#health-stats').textContent.includes('Broken')")
    stats = w.page.locator("#health-stats").text_content()
    assert "Readable fromv2" in stats and "Broken versionsv0–v1" in stats
    assert w.problems == [], w.problems
