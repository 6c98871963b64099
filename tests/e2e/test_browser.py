"""The dashboard in a real browser: Playwright for Python driving Debian's headless Chromium.

No browser is downloaded: the tests use /usr/bin/chromium (`apt-get install -y chromium`) and
are skipped with that reason when it is absent. Screenshots of every page land in
tests/artifacts/ (gitignored) for a human to look at.
"""

from __future__ import annotations

import os
import time

import pytest

from audit.ingest.rollup_store import rebuild_rollups, refresh_rollups
from audit.models import Commit, Finding, Table
from tests.support import scenarios
from tests.support.ingested import ingest_table
from tests.support.paths import ARTIFACTS, EXCEPTIONS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"
    ),
]

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make between
# browser steps are ordinary synchronous ones, so Django's async guard must let them through.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Watched:
    """A page plus the console errors, CSP violations and dialogs it produced."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("pageerror", lambda err: self.problems.append(f"pageerror: {err}"))
        self.page.on("console", self._console)
        self.page.on("dialog", self._dialog)

    def _console(self, message) -> None:
        if message.type == "error" or "Content Security Policy" in message.text:
            self.problems.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser):
    w = Watched(browser)
    yield w
    w.close()


def log_in(w: Watched, base: str, username: str = "alice") -> None:
    w.page.goto(f"{base}/login/")
    w.shot("login")
    w.page.fill("#id_username", username)
    w.page.fill("#id_password", "password")
    w.page.click("button[type=submit]")
    w.page.wait_for_url(f"{base}/")


@pytest.fixture
def anomalous_table(tmp_path, settings) -> Table:
    """A real table with a confirmed never-existed snapshot at v3 (see scenarios), ingested."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    path = tmp_path / "orders"
    scenarios.build_ws_reorder_matching(str(path))
    table = ingest_table(str(path), name="orders")
    return table


def wait_until(page, expression: str, timeout: float = 15.0):
    """Poll a JS expression from Python: Playwright's wait_for_function evaluates strings with
    eval inside the page, which our Content-Security-Policy (rightly) forbids."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(
            f"() => {{ try {{ return {expression}; }} catch (e) {{ return null; }} }}"
        )
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {expression}")
        page.wait_for_timeout(100)


def wait_for_timeline(page, *, rows: bool = True) -> dict:
    key = "bars" if rows else "buckets"
    wait_until(page, f"window.__timeline && window.__timeline.rendered.{key} > 0")
    return page.evaluate("() => window.__timeline.rendered")


def click_commit_bar(page, version: int) -> None:
    """Click the middle of a commit's bar on the canvas (its pixel from the chart's own axes)."""
    x, y = page.evaluate(
        """(version) => {
            const chart = echarts.getInstanceByDom(document.getElementById('timeline'));
            const lane = window.__timeline.laneOf.get(version);
            const row = window.__timeline.data.rows.find(r => r[0] === version);
            const start = row[1] === null ? version : row[1];
            return chart.convertToPixel({gridIndex: 0}, [(start + version) / 2 + 0.25, lane]);
        }""",
        version,
    )
    box = page.locator("#timeline canvas").first.bounding_box()
    page.mouse.click(box["x"] + x, box["y"] + y)


def test_it_walks_from_the_timeline_to_the_witness_and_acknowledges(
    watched, live_server, owner, anomalous_table
):
    w, base, table = watched, live_server.url, anomalous_table
    finding = Finding.objects.get(table=table, kind="never_existed_snapshot")
    assert finding.confirmed

    log_in(w, base)
    link = w.page.locator("#tables").get_by_role("link", name="orders")
    assert link.is_visible()
    w.shot("overview")

    link.click()
    w.page.wait_for_url(f"{base}/tables/{table.id}/")
    rendered = wait_for_timeline(w.page)
    assert rendered["bars"] == 4  # v0..v3
    assert rendered["findings"] >= 1  # the pin on v3
    assert rendered["lanes"] >= 2  # the stale DELETE overlaps the append: a second lane
    legend = w.page.locator("#legend").inner_text()
    assert "Delete" in legend and "Write" in legend  # operations in words
    w.page.click("#writers-panel summary")
    wait_until(w.page, "document.getElementById('writers-panel').dataset.loaded === '1'")
    assert "delta-rs" in w.page.locator("#writers-people #writers tbody").inner_text()
    assert "delta-rs" in w.page.locator("#writers-contention tbody").inner_text()
    w.shot("table")

    w.page.click("#axis-time")
    wait_until(w.page, "window.__timeline.axis === 'time' && window.__timeline.rendered.bars > 0")
    w.shot("table-wallclock")
    w.page.click("#axis-version")
    wait_until(w.page, "window.__timeline.axis === 'version'")
    wait_for_timeline(w.page)

    click_commit_bar(w.page, 3)
    w.page.wait_for_url(f"{base}/tables/{table.id}/commits/3/")
    assert w.page.locator("#predicate-raw").inner_text() == "id >= 4"
    concurrent = w.page.locator("#concurrent").inner_text()
    assert "v2" in concurrent and "ConcurrentAppend" in concurrent and "no conflict" in concurrent
    w.shot("commit")

    w.page.click(f"a[href='/findings/{finding.id}/'] >> text=Never-existed snapshot")
    w.page.wait_for_url(f"{base}/findings/{finding.id}/")
    witness = w.page.locator("#witness-table")
    assert witness.is_visible()
    cells = witness.locator("tbody td").all_inner_texts()
    assert "10" in cells and "11" in cells
    # The dependency cycle, drawn: two commits, an rw and a ww edge.
    wait_until(w.page, "document.querySelector('#cycle-graph').dataset.edges === '2'")
    assert w.page.locator("#cycle-graph canvas").count() >= 1
    assert "G-single" in w.page.locator("#cycle-sentence").inner_text()
    w.shot("finding")

    w.page.click("button:has-text('Acknowledge')")
    w.page.wait_for_selector("text=acknowledged by alice")
    w.shot("finding-acknowledged")
    finding.refresh_from_db()
    assert finding.acknowledged_by_id == owner.id

    w.page.goto(f"{base}/tables/{table.id}/analysis/")
    assert w.page.locator("#conflict-matrix .verdict-can_conflict").count() >= 1
    wait_until(w.page, "window.__heatmap !== undefined || !document.getElementById('heatmap')")
    w.shot("analysis")

    w.page.goto(f"{base}/findings/?status=all")
    assert w.page.locator(".findings-table tbody tr").count() >= 2
    w.shot("findings")

    w.page.set_viewport_size({"width": 390, "height": 844})  # a phone: tables scroll sideways
    w.page.goto(f"{base}/tables/{table.id}/")
    wait_for_timeline(w.page)
    w.shot("table-mobile")
    assert w.page.evaluate("document.documentElement.scrollWidth") <= 400
    assert w.problems == []
    assert w.dialogs == []


def test_it_explains_a_pasted_databricks_exception(watched, live_server, owner, anomalous_table):
    w, base = watched, live_server.url
    log_in(w, base)
    w.page.goto(f"{base}/explain/")
    text = (EXCEPTIONS / "databricks_append_real_commit.txt").read_text()
    w.page.fill("#id_text", text)
    w.page.select_option("#id_table", str(anomalous_table.id))
    w.page.click("#explain-form button[type=submit]")
    w.page.wait_for_selector("#explanation h2")
    result = w.page.locator("#explanation").inner_text()
    assert "ConcurrentAppendException" in result
    assert "fixes that apply" in result.lower()
    w.shot("explain")
    assert w.problems == []


# The colour of the timeline's bucket holding version v.
_BUCKET_COLOUR_AT = """(v) => echarts.getInstanceByDom(document.getElementById('timeline'))
    .getOption().series[0].data.find(b => b.value[0] <= v && v <= b.value[1]).itemStyle.color"""


def test_it_zooms_from_buckets_into_commits_on_a_long_history(
    watched, live_server, owner, tmp_path, settings
):
    """20,000 stored commits: the whole history arrives as buckets, a zoomed window as rows;
    commits stored later appear by themselves while the tab is visible."""
    settings.FRONTEND_REFRESH_SECONDS = 1
    table = Table.objects.create(
        uri=str(tmp_path / "long"),
        name="long",
        status="ok",
        first_available_version=0,
        last_seen_version=19_999,
        latest_version_in_log=19_999,
    )
    ops = ["WRITE", "WRITE", "WRITE", "MERGE", "DELETE", "OPTIMIZE"]
    Commit.objects.bulk_create(
        [
            Commit(
                table=table,
                version=v,
                timestamp=1_700_000_000_000 + v * 1000,
                operation=ops[v % len(ops)],
                read_version=v - 3 if v % 7 == 0 and v >= 3 else v - 1,
                concurrent_count=2 if v % 7 == 0 and v >= 3 else 0,
                blind_append=v % len(ops) < 3,
            )
            for v in range(20_000)
        ],
        batch_size=2000,
    )
    rebuild_rollups(table.id)  # rows written without the ingest bring their rollups along
    Finding.objects.create(
        table=table, kind="missed_conflict", severity="critical", version=11_000,
        related_versions=[], summary="s", key="k", last_seen="2026-01-01T00:00:00Z",
    )  # fmt: skip
    w, base = watched, live_server.url
    log_in(w, base)
    w.page.goto(f"{base}/tables/{table.id}/")
    rendered = wait_for_timeline(w.page)
    assert rendered["bars"] == 200  # the latest 200 commits, not the whole history
    assert rendered["lanes"] >= 2  # every 7th commit read three versions back
    w.shot("long-latest")

    w.page.click("#zoom-all")
    wait_until(w.page, "window.__timeline.rendered.buckets > 0")
    assert w.page.evaluate("window.__timeline.data.mode") == "buckets"
    assert w.page.evaluate("window.__timeline.data.buckets.length") <= 1000
    w.shot("long-buckets")

    w.page.click("#zoom-latest")
    wait_until(w.page, "window.__timeline.rendered.bars > 0")
    assert w.page.evaluate("window.__timeline.data.mode") == "rows"
    assert w.page.evaluate("window.__timeline.data.rows.length") <= 400

    # Live refresh: the view sits at the latest version, so it follows new commits.
    Commit.objects.bulk_create(
        [
            Commit(table=table, version=v, operation="DELETE", read_version=v - 2)
            for v in range(20_000, 20_010)
        ]
    )
    refresh_rollups(table.id, 20_000, 20_009)
    Table.objects.filter(id=table.id).update(last_seen_version=20_009, latest_version_in_log=20_009)
    wait_until(w.page, "window.__timeline.data.to_version === 20009")
    assert w.page.locator("#stat-version").inner_text() == "20,009"
    assert w.page.evaluate("window.__timeline.data.rows.some(r => r[0] === 20009)")

    # Past 400 versions the commits merge: buckets, coloured by their worst finding.
    w.page.fill("#zoom-from", "10000")
    w.page.fill("#zoom-to", "12000")
    w.page.click("#zoom-range button[type=submit]")
    wait_until(w.page, "window.__timeline.data.mode === 'buckets'")
    assert w.page.evaluate("window.__timeline.data.from_version") >= 9000
    assert w.page.evaluate(_BUCKET_COLOUR_AT, 11_000) == "#cf222e"  # its critical finding
    # A range of 300 versions typed in: its commits, one bar each.
    w.page.fill("#zoom-from", "10000")
    w.page.fill("#zoom-to", "10299")
    w.page.click("#zoom-range button[type=submit]")
    wait_until(
        w.page, "window.__timeline.data.mode === 'rows' && window.__timeline.rendered.bars > 0"
    )
    versions = w.page.evaluate("window.__timeline.data.rows.map(r => r[0])")
    assert 10000 in versions and 10299 in versions
    assert w.problems == []
