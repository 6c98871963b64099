"""Every page as a user would meet it: headless Chromium at 1280 px, as an administrator, a
member and a viewer, over the demo tables (and, marked slow, a 100,000-commit table).

On each page (tests/e2e/pagecheck.py): no horizontal overflow, no component left with the
browser's default style, no console error, and no serious or critical axe-core violation. The
problems of a whole walk are reported together; a screenshot of every page is kept under
tests/artifacts/pages/ (gitignored; CI keeps tests/artifacts/).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from audit import demo
from audit.alerting.models import AlertRule, Channel
from audit.models import DEFAULT_PROJECT, Finding, Table, project_named
from audit.tail import orphan_scans
from frontend.templatetags.frontend_tags import filesize
from tests.e2e.pagecheck import AXE_JS, AXE_VERSION, PageChecker
from tests.e2e.test_browser import (  # noqa: F401  (fixtures)
    Watched,
    browser,
    wait_for_timeline,
    wait_until,
)
from tests.support import scenarios
from tests.support.ingested import ingest_table
from tests.support.paths import ROOT
from tests.support.projects import join

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not AXE_JS.exists(),
        reason=f"axe-core {AXE_VERSION} is absent (scripts/lib.sh ensure_axe: npm install)",
    ),
]

WIDTH = 1280
# A name as long as people give (the form takes 200 characters), in one word: pages wrap it.
LONG_NAME = (
    "warehouse_prod_eu_west_1_customer_events_sessionized_by_device_and_campaign_daily_"
    "rollup_v2_backfilled_from_legacy_clickstream_export_with_late_arriving_corrections"
)
OVERDUE_APPENDS = 24  # commits_since > 2 x the checkpoint interval (10) on events_sequential
PERSONAS = ("admin", "member", "viewer")  # staff; the default project's member and viewer


@dataclass
class Demo:
    tables: dict[str, Table]
    finding: Finding
    channel: Channel
    rule: AlertRule


@pytest.fixture
def demo_site(tmp_path, settings, django_user_model) -> Demo:
    """The demo's tables and the never-existed-snapshot scenario, ingested and scanned for
    orphans; one user per persona; an alert channel and rule in the default project."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_ORPHAN_MIN_AGE_SECONDS = 0
    tables = {}
    paths = demo.create_demo_tables(tmp_path / "demo")
    for i in range(OVERDUE_APPENDS):  # past twice the checkpoint interval: the gauge says so
        row = pa.table(
            {"day": ["2024-01-09"], "id": pa.array([1000 + i], pa.int64()), "amount": [1]}
        )
        write_deltalake(str(tmp_path / "demo" / "events_sequential"), row, mode="append")
    for path in paths:
        tables[path.name] = ingest_table(str(path), name=path.name)
        orphan_scans.scan_table(tables[path.name])
    Table.objects.filter(id=tables["events_sequential"].id).update(name=LONG_NAME)
    scenarios.build_ws_reorder_matching(str(tmp_path / "orders"))
    tables["orders"] = ingest_table(str(tmp_path / "orders"), name="orders")
    finding = Finding.objects.get(table=tables["orders"], kind="never_existed_snapshot")
    django_user_model.objects.create_user("admin", password="password", is_staff=True)
    for role in ("member", "viewer"):
        join(django_user_model.objects.create_user(role, password="password"), role=role)
    project = project_named(DEFAULT_PROJECT)
    channel = Channel.objects.create(
        project=project,
        name="ops-hook",
        kind="webhook",
        config={"url": "https://hooks.example.org/delta", "secret": "s" * 20},
    )
    rule = AlertRule.objects.create(project=project, name="critical anomalies")
    rule.channels.add(channel)
    return Demo(tables, finding, channel, rule)


class Walk:
    """One persona's walk: pages visited, their problems collected."""

    def __init__(self, browser, base: str, persona: str):  # noqa: F811
        self.w = Watched(browser)
        self.w.page.set_viewport_size({"width": WIDTH, "height": 900})
        self.base, self.persona = base, persona
        self.checker = PageChecker(persona)
        self.problems: list[str] = []

    def visit(self, name: str, path: str, *, status: int = 200, ready=None) -> None:
        self.w.problems.clear()
        response = self.w.page.goto(self.base + path)
        got = response.status if response else None
        if got != status:
            self.problems.append(f"{name}: {path} answered {got}, expected {status}")
        if ready:
            ready(self.w.page)
        self.look(name, expected_status=status)

    def look(self, name: str, *, expected_status: int = 200) -> None:
        """Check the page as it is now (after a visit, or a click that changed it)."""
        self.problems += self.checker.check(self.w.page, name)
        page = self.w.page
        if name != "login" and not page.locator("header.topbar nav a[href='/']").count():
            self.problems.append(f"{name}: no navigation")
        if expected_status != 200 and not page.locator("#error-reason").count():
            self.problems.append(f"{name}: the {expected_status} page gives no reason")
        # The document's own error status is logged by the browser as a failed load: expected.
        load = f"status of {expected_status}"
        self.problems += [
            f"{name}: {p}" for p in self.w.problems if expected_status == 200 or load not in p
        ]
        self.w.problems.clear()

    def log_in(self) -> None:
        page = self.w.page
        page.goto(f"{self.base}/login/")
        page.fill("#id_username", self.persona)
        page.fill("#id_password", "password")
        page.click("button[type=submit]")
        page.wait_for_url(f"{self.base}/")


def _table_ready(page) -> None:
    wait_for_timeline(page)
    wait_until(page, "document.querySelectorAll('#health-stats .stat').length > 5")
    wait_until(page, "!document.getElementById('changes-rows').textContent.includes('Loading')")
    wait_until(page, "window.__health && window.__health.drawn")


def _writers_open(page, timeout: float = 15.0) -> None:
    page.click("#writers-panel summary")
    wait_until(
        page, "document.getElementById('writers-panel').dataset.loaded === '1'", timeout=timeout
    )


# The labels ECharts drew on the timeline's version axis.
_AXIS_LABELS = """() => echarts.getInstanceByDom(document.getElementById('timeline')).getModel()
    .getComponent('xAxis', 0).axis.getViewLabels().map(l => l.formattedLabel)"""


# The checkpoint gauge's colour per state: within its interval, past it, past twice it.
GAUGE = {"ok": "#2450d6", "due": "#c77c00", "overdue": "#cf222e"}
_CHECKPOINT_JS = """async (table) => {
    const h = await (await fetch(`/api/tables/${table}/health/`)).json();
    const o = echarts.getInstanceByDom(document.getElementById('health-checkpoint')).getOption();
    const s = o.series[0];
    return {since: h.checkpoint.commits_since, interval: h.checkpoint.interval_effective,
            max: s.max, value: s.data[0].value, color: s.progress.itemStyle.color};
}"""


def _charts_fit(
    walk: Walk, name: str, table: Table, *, partitioned: bool, expect: str | None = None
) -> None:
    """Charts show what applies, inside their boxes: no "v-1" on the axis, the partitions
    panel only on a partitioned table, the checkpoint gauge never pegged past its scale and
    coloured by how overdue the checkpoint is."""
    page = walk.w.page
    labels = page.evaluate(_AXIS_LABELS)
    if any(label.startswith("v-") for label in labels) or not labels:
        walk.problems.append(f"{name}: timeline axis labels {labels}")
    hidden = page.evaluate("window.__health.hidden")
    if partitioned == ("health-partitions" in hidden):
        walk.problems.append(
            f"{name}: partitions panel hidden={hidden} on partitioned={partitioned}"
        )
    g = page.evaluate(_CHECKPOINT_JS, table.id)
    since, interval = g["since"], g["interval"]
    state = "overdue" if since > 2 * interval else "due" if since > interval else "ok"
    if (g["value"], g["color"]) != (since, GAUGE[state]) or g["max"] < since:
        walk.problems.append(f"{name}: checkpoint gauge {g}, expected {state}")
    if expect and state != expect:
        walk.problems.append(f"{name}: checkpoint {since} commits since, expected {expect}")


def _walk_pages(walk: Walk, site: Demo) -> None:
    t = site.tables["orders_partitioned"]
    events = site.tables["events_sequential"]
    orders = site.tables["orders"]
    admin = walk.persona == "admin"
    walk.visit("overview", "/")
    walk.visit("table", f"/tables/{t.id}/", ready=_table_ready)
    _charts_fit(walk, "table", t, partitioned=True)
    _writers_open(walk.w.page)
    walk.look("table-writers-panel")
    walk.visit("table-unpartitioned", f"/tables/{events.id}/", ready=_table_ready)
    _charts_fit(walk, "table-unpartitioned", events, partitioned=False, expect="overdue")
    walk.visit("analysis", f"/tables/{t.id}/analysis/")
    walk.visit("diff", f"/tables/{t.id}/diff/?from=1&to={t.last_seen_version}")
    walk.visit("writers", f"/tables/{t.id}/writers/")
    walk.visit("history", f"/tables/{t.id}/history/")
    walk.visit("history-filtered", f"/tables/{t.id}/history/?operation=WRITE&q=a&page=1")
    walk.visit("history-bad-filter", f"/tables/{t.id}/history/?since=never", status=400)
    walk.visit("schema", f"/tables/{t.id}/schema/?version={t.last_seen_version}&compare=0")
    walk.visit("commit", f"/tables/{orders.id}/commits/3/")
    walk.visit("findings", "/findings/?status=all")
    walk.visit(
        "finding",
        f"/findings/{site.finding.id}/",
        ready=lambda p: wait_until(p, "document.querySelector('#cycle-graph').dataset.edges"),
    )
    walk.visit("explain", "/explain/")
    walk.w.page.fill(
        "#id_text", (ROOT / "tests/data/exceptions/databricks_append_real_commit.txt").read_text()
    )
    walk.w.page.click("#explain-form button[type=submit]")
    walk.w.page.wait_for_selector("#explanation h2")
    walk.look("explain-result")
    walk.visit("alerts", "/alerts/")
    walk.visit("alert-rule-new", "/alerts/rules/new/", status=200 if admin else 403)
    walk.visit(
        "alert-channel-edit", f"/alerts/channels/{site.channel.id}/", status=200 if admin else 403
    )
    walk.visit("alert-rule-edit", f"/alerts/rules/{site.rule.id}/", status=200 if admin else 403)
    walk.visit("api-root", "/api/")
    walk.visit("not-found", "/tables/999999/", status=404)
    icon = walk.w.page.request.get(f"{walk.base}/favicon.ico")
    if not (icon.ok and icon.headers["content-type"].startswith("image/")):
        walk.problems.append(f"favicon.ico: {icon.status} {icon.headers.get('content-type')}")


@pytest.mark.parametrize("persona", PERSONAS)
def test_it_shows_every_page_finished_to_each_persona(
    browser,  # noqa: F811
    live_server,
    demo_site,
    persona,
):
    walk = Walk(browser, live_server.url, persona)
    try:
        if persona == "admin":  # the login page once: it is the same for everyone
            walk.visit("login", "/login/")
        walk.log_in()
        _walk_pages(walk, demo_site)
    finally:
        walk.w.close()
    assert walk.problems == [], "\n".join(walk.problems)


@pytest.fixture
def long_table(tmp_path, settings) -> Table:
    """A 100,000-commit Spark-style log (bench/gen_log.py; only the log, no data files),
    registered and backfilled."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_CHECK_DATA = False
    path = tmp_path / "long"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(path), "--commits", "100000"],
        check=True,
        capture_output=True,
    )
    return ingest_table(str(path), name="long")


def test_it_shows_a_100k_commit_table_finished(
    browser,  # noqa: F811
    live_server,
    long_table,
    django_user_model,
):
    django_user_model.objects.create_user("admin", password="password", is_staff=True)
    t = long_table
    walk = Walk(browser, live_server.url, "admin")
    try:
        walk.checker.prefix = "long"
        walk.log_in()
        walk.visit("overview", "/")
        walk.visit("table", f"/tables/{t.id}/", ready=_table_ready)
        walk.w.page.click("#zoom-all")
        wait_until(walk.w.page, "window.__timeline.rendered.buckets > 0")
        walk.look("table-whole-history")
        _writers_open(walk.w.page, timeout=240)  # the whole history's audit, once per version
        walk.look("table-writers-panel")
        walk.visit("writers", f"/tables/{t.id}/writers/")
        walk.visit("history", f"/tables/{t.id}/history/")
        walk.visit("history-deep", f"/tables/{t.id}/history/?page=1500&operation=MERGE")
        walk.visit("analysis", f"/tables/{t.id}/analysis/")
        walk.visit("commit", f"/tables/{t.id}/commits/{t.last_seen_version}/")
        walk.visit("diff", f"/tables/{t.id}/diff/?from=99000&to={t.last_seen_version}")
        walk.visit("findings", f"/findings/?table={t.id}")
    finally:
        walk.w.close()
    assert walk.problems == [], "\n".join(walk.problems)


SIZES = [0, 1, 512, 1023, 1024, 1280, 35_411, 33_554_432, 1_610_612_736, 5 * 2**40, -2048]


def test_sizes_read_the_same_in_scripts_and_templates(browser, live_server):  # noqa: F811
    """format.js (charts, the health panel) and the `filesize` filter (tables) are the one
    size format: the same IEC text for the same number, rounding included."""
    w = Watched(browser)
    try:
        w.page.goto(f"{live_server.url}/login/")
        shown = w.page.evaluate("(sizes) => sizes.map(deltaAudit.format.bytes)", SIZES)
    finally:
        w.close()
    assert shown == [filesize(v) for v in SIZES]
    assert shown[6] == "34.6 KiB" and shown[5] == "1.3 KiB"
