"""The dashboard leads with incidents (docs/incidents.md, "Pages"): the overview's "why"
column, the table page's incidents with their findings folded and its open findings paginated
("N of M", worst first), the incident page (status and why, occurrences, damage, statements
with copy buttons, witness, findings) with its acknowledgement, and the finding page's link to
its incident. Against a table the tail ingested (a stale DELETE under WriteSerializable), as
a viewer, a member and an owner of its project and as an outsider."""

from __future__ import annotations

import re
import shutil
from html import escape
from pathlib import Path

import pytest
from django.core.cache import cache

from audit.core import model
from audit.core.vocab import FindingKind, Severity
from audit.ingest.findings import upsert_findings
from audit.models import Finding, Incident, Table
from tests.support import scenarios
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.projects import into, join

pytestmark = pytest.mark.django_db

HOSTILE = '<script>window.__xss=1</script>"><img src=x onerror=alert(1)>'


@pytest.fixture(autouse=True)
def fresh(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="session")
def built_reorder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("incident-pages")
    scenarios.build_ws_reorder_matching(str(root / "reorder"))
    return root / "reorder"


@pytest.fixture
def reorder(built_reorder, tmp_path) -> Table:
    """A stale DELETE under WriteSerializable after a blind append: one critical incident."""
    path = shutil.copytree(built_reorder, tmp_path / "reorder")
    return into(ingest_table(str(path), name="reorder"), "team")


@pytest.fixture
def team(reorder, django_user_model) -> dict:
    def user(name: str, role: str | None):
        made = django_user_model.objects.create_user(name, password="password")
        return join(made, "team", role) if role else join(made)

    return {r: user(f"p-{r}", r) for r in ("viewer", "member", "owner")} | {
        "outsider": user("p-outsider", None)
    }


def page(user, url: str, status: int = 200) -> str:
    answer = session_client(user).get(url)
    assert answer.status_code == status, (url, answer.status_code)
    return answer.content.decode()


def no_token(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def incident_url(incident: Incident) -> str:
    return f"/tables/{incident.table_id}/incidents/{incident.pk}/"


def test_it_says_why_on_the_overview_with_the_worst_open_incident(reorder, team):
    incident = Incident.objects.get(table=reorder)
    html = page(team["viewer"], "/")
    assert ">Why</th>" in html
    assert f'href="{incident_url(incident)}"' in html
    assert escape(incident.headline)[:60] in html
    Incident.objects.filter(pk=incident.pk).update(status="resolved")
    Table.bump_findings(reorder.pk)
    assert incident_url(incident) not in page(team["viewer"], "/")  # resolved: no longer why


def test_it_lists_incidents_first_on_the_table_page_with_their_findings_folded(reorder, team):
    incident = Incident.objects.get(table=reorder)
    html = page(team["viewer"], f"/tables/{reorder.id}/")
    assert html.index('id="incidents"') < html.index("timeline-card") < html.index("open-findings")
    section = html[html.index('id="incidents"') : html.index("timeline-card")]
    assert (
        '<details class="incident-folded">' in section
        and f'href="{incident_url(incident)}"' in section
    )
    for finding in Finding.objects.filter(incident=incident):
        assert f'href="/findings/{finding.id}/"' in section
    assert "1–1 of 1" in section


def _many_findings(table: Table, n: int) -> None:
    severities = [Severity.INFO, Severity.WARNING, Severity.CRITICAL]
    upsert_findings(
        table,
        [
            model.Finding(
                FindingKind.RETRY_STORM, severities[v % 3], 100 + v, [], False, f"s{v}", "why"
            )
            for v in range(n)
        ],
        scope=(100, 100 + n),
    )


def test_it_pages_the_open_findings_saying_n_of_m_worst_first(reorder, team):
    open_before = Finding.objects.filter(table=reorder, status="open").count()
    _many_findings(reorder, 55)
    total = open_before + 55
    first = page(team["viewer"], f"/tables/{reorder.id}/")
    assert f"1–50 of {total}, worst first" in first
    second = page(team["viewer"], f"/tables/{reorder.id}/?page=2")
    assert f"51–{total} of {total}" in second
    listed = first[first.index('id="open-findings"') :]
    severities = re.findall(r'<td><span class="badge sev-(\w+)">', listed)
    assert severities[0] == "critical" and severities[-1] in ("warning", "info")
    order = {"critical": 0, "warning": 1, "info": 2}
    assert [order[s] for s in severities] == sorted(order[s] for s in severities)
    listing = page(team["viewer"], f"/findings/?table={reorder.id}")
    assert f'id="findings-n-of-m">1–50 of {total} findings · page 1 of 2<' in listing
    # The lowest-ranked finding of all is on the second page: nothing silently cut at 50.
    assert f'href="/tables/{reorder.id}/commits/100/"' in second


def test_it_shows_the_incident_page_with_statements_to_copy(reorder, team):
    incident = Incident.objects.get(table=reorder)
    html = page(team["viewer"], incident_url(incident))
    assert escape(incident.headline) in html
    assert 'id="status-reason">Open: last occurred at v' in html
    assert "<title>v3</title>" in html  # the occurrence strip marks v3
    assert 'id="rows-wrong"' in html and 'id="damage-exact"' in html
    assert incident.repair or incident.prevent
    for name in ("repair", "inspect", "prevent"):
        for n, statement in enumerate(getattr(incident, name)):
            sid = f"stmt-{name}-{n}"
            assert f'<code id="{sid}">{escape(statement["code"])}</code></pre>' in html
            assert f'data-copy="{sid}"' in html and f'id="{sid}-status" aria-live="polite"' in html
            assert escape(statement["does"]) in html and escape(statement["does_not"]) in html
    assert 'src="/static/frontend/copy.js"' in html
    assert 'id="witness"' in html and 'id="incident-findings"' in html
    assert "incident-acknowledge" not in html  # a viewer may not acknowledge


def test_it_offers_the_acknowledgement_to_members_and_owners_only(reorder, team):
    incident = Incident.objects.get(table=reorder)
    for role in ("member", "owner"):
        assert 'id="incident-acknowledge"' in page(team[role], incident_url(incident))
    answer = session_client(team["viewer"]).post(incident_url(incident) + "acknowledge/")
    assert answer.status_code == 403
    assert not Incident.objects.get(pk=incident.pk).acknowledged_at
    client = session_client(team["member"])
    assert client.get(incident_url(incident) + "acknowledge/").status_code == 405
    answer = client.post(incident_url(incident) + "acknowledge/")
    assert answer.status_code == 302 and answer["Location"] == incident_url(incident)
    stored = Incident.objects.get(pk=incident.pk)
    assert stored.acknowledged_by == team["member"]
    assert stored.acknowledged_version == stored.last_version
    assert not Finding.objects.filter(incident=incident, acknowledged_at__isnull=True).exists()
    html = page(team["member"], incident_url(incident))
    assert "acknowledged by p-member" in html


def test_it_answers_an_outsider_as_for_no_incident(reorder, team, django_user_model):
    incident = Incident.objects.get(table=reorder)
    outsider = team["outsider"]
    missing = page(outsider, f"/tables/{reorder.id}/incidents/999999/", 404)
    theirs = page(outsider, incident_url(incident), 404)
    theirs = theirs.replace(f"incidents/{incident.pk}/", "incidents/999999/")
    assert no_token(theirs) == no_token(missing)  # the page echoes the path, nothing else
    answer = session_client(outsider).post(incident_url(incident) + "acknowledge/")
    assert answer.status_code == 404
    assert not Incident.objects.get(pk=incident.pk).acknowledged_at
    # Another table's incident under a table the reader sees: 404 too.
    other = Table.objects.create(uri="/data/other", name="other", status="ok")
    into(other, "team")
    page(team["viewer"], f"/tables/{other.id}/incidents/{incident.pk}/", 404)


def test_it_escapes_hostile_strings_in_headline_and_statements(reorder, team):
    incident = Incident.objects.get(table=reorder)
    statement = {"engine": "spark-sql", "code": HOSTILE, "does": HOSTILE, "does_not": HOSTILE}
    Incident.objects.filter(pk=incident.pk).update(
        headline=HOSTILE, repair=[statement], scope=HOSTILE, operation=HOSTILE
    )
    Table.bump_findings(reorder.pk)
    for url in ("/", f"/tables/{reorder.id}/", incident_url(incident)):
        html = page(team["viewer"], url)
        assert HOSTILE not in html and "<script>window.__xss" not in html, url
        assert escape(HOSTILE)[:40] in html, url
    finding = Finding.objects.filter(incident=incident).first()
    html = page(team["viewer"], f"/findings/{finding.id}/")
    assert HOSTILE not in html and escape(HOSTILE)[:40] in html


def test_it_links_a_finding_to_its_incident(reorder, team):
    incident = Incident.objects.get(table=reorder)
    finding = Finding.objects.filter(incident=incident).first()
    html = page(team["viewer"], f"/findings/{finding.id}/")
    cell = html[html.index('id="finding-incident"') :][:800]
    assert f'href="{incident_url(incident)}"' in cell and escape(incident.headline) in cell


def test_it_lists_incidents_read_only_in_the_django_admin(reorder, django_user_model):
    """Staff see the tail's incidents in the admin (escaped, like every admin list) and can
    neither add nor edit one: the next refresh would overwrite it."""
    staff = django_user_model.objects.create_superuser("p-staff", password="password")
    incident = Incident.objects.get(table=reorder)
    Incident.objects.filter(pk=incident.pk).update(headline=HOSTILE)
    client = session_client(staff)
    listing = client.get("/admin/audit/incident/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert incident.incident_id in html and escape(HOSTILE) in html and HOSTILE not in html
    assert client.get("/admin/audit/incident/add/").status_code == 403
    change = client.post(f"/admin/audit/incident/{incident.pk}/change/", {"headline": "edited"})
    assert change.status_code == 403
    assert Incident.objects.get(pk=incident.pk).headline == HOSTILE
    assert client.get(f"/admin/audit/incident/{incident.pk}/change/").status_code == 200  # a view
