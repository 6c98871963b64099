"""The incident pages as a user meets them (docs/incidents.md, "Pages"): headless Chromium at
1280 px, as a member and as a viewer, over tables real deltalake writers made and the tail
ingested: the overview's "why" column, the table page's incidents and its open findings
saying "N of M" on a table with more than 50 of them, the incident page, and its copy buttons
(clicked: the clipboard holds the statement and the aria-live message says "Copied").

Each page passes tests/e2e/pagecheck.py (no overflow, no default-styled component, no console
error, axe clean); screenshots under tests/artifacts/pages/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.models import Finding, Incident, Table
from audit.tail import orphan_scans
from tests.e2e.pagecheck import AXE_JS, AXE_VERSION
from tests.e2e.test_browser import browser, wait_until  # noqa: F401  (fixtures)
from tests.e2e.test_pages import Walk, _table_ready
from tests.support import scenarios
from tests.support.ingested import ingest_table
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

STALE_ROUNDS = 30  # each a stale DELETE under WriteSerializable: two findings, one incident


def build_repeated_stale_deletes(path: str, rounds: int = STALE_ROUNDS) -> None:
    """The same job's DELETE from a stale snapshot, `rounds` times, each racing a blind
    append it should have deleted: one cause, more than 50 open findings."""
    scenarios._create(path, configuration=scenarios.WRITE_SERIALIZABLE)
    for n in range(rounds):
        stale = DeltaTable(path)
        ids = [100 + 2 * n, 101 + 2 * n]
        write_deltalake(
            path,
            scenarios.rows(scenarios.DAY1, ids),
            mode="append",
            commit_properties=scenarios.BLIND,
        )
        stale.delete("id >= 4")


@dataclass
class Site:
    repeated: Table
    reorder: Table


@pytest.fixture
def incident_site(tmp_path, settings, django_user_model) -> Site:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_ORPHAN_MIN_AGE_SECONDS = 0
    build_repeated_stale_deletes(str(tmp_path / "repeated"))
    scenarios.build_ws_reorder_matching(str(tmp_path / "reorder"))
    tables = {}
    for name in ("repeated", "reorder"):
        tables[name] = ingest_table(str(tmp_path / name), name=name)
        orphan_scans.scan_table(tables[name])
    for role in ("member", "viewer"):
        join(django_user_model.objects.create_user(role, password="password"), role=role)
    return Site(tables["repeated"], tables["reorder"])


def _count_text(page, selector: str) -> tuple[int, int, int]:
    text = page.locator(selector).inner_text()
    found = re.search(r"(\d+)–(\d+) of (\d+)", text)
    assert found, text
    return tuple(int(n) for n in found.groups())


def _walk(walk: Walk, site: Site) -> None:
    page = walk.w.page
    incident = Incident.objects.filter(table=site.repeated).order_by("-severity_rank").first()
    url = f"/tables/{site.repeated.id}/incidents/{incident.pk}/"
    walk.visit("incident-overview", "/")
    why = page.locator(f"#tables a.why-link[href='{url}']")
    if why.count() != 1 or why.inner_text().strip() == "":
        walk.problems.append(f"overview: no why link to {url}")

    walk.visit("incident-table", f"/tables/{site.repeated.id}/", ready=_table_ready)
    total = Finding.objects.filter(table=site.repeated, status="open").count()
    assert total > 50, total
    assert _count_text(page, "#findings-count") == (1, 50, total)
    page.click("#incidents details.incident-folded summary")  # unfold the first incident
    wait_until(page, "document.querySelector('#incidents details').open")
    walk.look("incident-table-unfolded")
    page.click("#findings-next")
    page.wait_for_url(re.compile(r"\?page=2"))
    assert _count_text(page, "#findings-count") == (51, total, total)
    walk.look("incident-table-page-2")

    walk.visit("incident", url)
    assert page.locator("#incident-headline").inner_text().strip()
    marks = page.locator("svg.occurrence-strip rect title").count()
    assert marks == STALE_ROUNDS, marks
    acknowledge = page.locator("#incident-acknowledge").count()
    assert acknowledge == (1 if walk.persona == "member" else 0), walk.persona
    _copy(walk)


def _copy(walk: Walk) -> None:
    """Click the first statement's copy button: the clipboard holds its code and the page
    says "Copied" where a screen reader hears it (aria-live)."""
    page = walk.w.page
    button = page.locator("button.copy-btn").first
    target = button.get_attribute("data-copy")
    code = page.locator(f"#{target}").text_content()
    button.click()
    status = f"#{target}-status"
    wait_until(page, f"document.querySelector('{status}').textContent === 'Copied'")
    assert page.locator(status).get_attribute("aria-live") == "polite"
    assert page.evaluate("navigator.clipboard.readText()") == code
    walk.look("incident-copied")


@pytest.mark.parametrize("persona", ("member", "viewer"))
def test_it_shows_the_incident_pages_finished(
    browser,  # noqa: F811
    live_server,
    incident_site,
    persona,
):
    walk = Walk(browser, live_server.url, persona)
    walk.checker.prefix = f"incidents-{persona}"
    walk.w.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    try:
        walk.log_in()
        _walk(walk, incident_site)
    finally:
        walk.w.close()
    assert walk.problems == [], "\n".join(walk.problems)
