"""The dashboard's findings rows are rendered by a template tag (frontend/templatetags/
findings_rows.py) instead of a template loop: the same HTML, every text escaped, and a
constant number of queries per page however many rows it shows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.template import engines
from django.test.utils import CaptureQueriesContext
from django.urls import set_script_prefix

from audit.core import model
from audit.core.vocab import FindingKind, Severity
from audit.ingest.findings import upsert_findings
from audit.models import Finding, Table

pytestmark = pytest.mark.django_db

HOSTILE = '<script>window.__xss=1</script>"><img src=x onerror=alert(1)>&amp;'

# The loop the tag replaced, verbatim: the reference the tag's HTML is compared with.
LOOP = """{% load frontend_tags %}{% for f in findings %}
  <tr>
    <td><span class="badge sev-{{ f.severity }}">{{ f.severity }}</span></td>
    <td class="nowrap"><a href="{% url 'frontend:finding' f.id %}">{{ f.kind|kind_name }}</a> <code class="ident">{{ f.kind }}</code>{% if f.confirmed %} <span class="tag tag-bad" title="rows found in the data files">confirmed</span>{% endif %}</td>
    {% if show_table %}<td><a href="{% url 'frontend:table' f.table_id %}">{{ f.table.name|default:f.table.uri }}</a></td>{% endif %}
    <td class="num mono"><a href="{% url 'frontend:commit' f.table_id f.version %}">{{ f.version }}</a></td>
    <td class="summary">{{ f.summary|truncatechars:220 }}</td>
    <td class="nowrap">{% if f.acknowledged_at %}<span class="tag">acknowledged</span>{% elif f.status == "resolved" %}<span class="tag tag-ok">resolved</span>{% else %}<span class="tag tag-accent">open</span>{% endif %}</td>
  </tr>
  {% endfor %}"""  # noqa: E501


def findings_of(table: Table, n: int) -> None:
    kinds = list(FindingKind)
    upsert_findings(
        table,
        [
            model.Finding(
                kinds[v % len(kinds)], list(Severity)[v % 3], v, [v - 1], v % 4 == 0,
                (HOSTILE * (v % 3 + 1)) + "x" * (v * 7), "why",
            )
            for v in range(1, n + 1)
        ],
        scope=(0, n),
    )  # fmt: skip


@pytest.fixture
def tables() -> list[Table]:
    named = Table.objects.create(uri="/data/a", name=HOSTILE, status="ok", last_seen_version=99)
    unnamed = Table.objects.create(uri=f"/data/{HOSTILE}", status="ok", last_seen_version=99)
    findings_of(named, 40)
    findings_of(unnamed, 30)
    Finding.objects.filter(table=named, version__in=(2, 3)).update(status="resolved")
    Finding.objects.filter(table=unnamed, version=5).update(acknowledged_at="2026-01-01T00:00Z")
    return [named, unnamed]


@pytest.mark.parametrize("prefix", ["/", "/audit/"])
@pytest.mark.parametrize("show_table", [True, False])
def test_the_tag_renders_what_the_template_loop_rendered(tables, show_table, prefix):
    """Also behind a script prefix (a reverse proxy's SCRIPT_NAME): the tag reverses each
    link once per prefix, and a page under one prefix never gets another's links."""
    set_script_prefix(prefix)
    try:
        rendered = _rendered_and_checked(show_table)
    finally:
        set_script_prefix("/")
    assert ('href="/audit/' in rendered) == (prefix == "/audit/")


def _rendered_and_checked(show_table: bool) -> str:
    findings = list(Finding.objects.select_related("table").order_by("id"))
    engine = engines["django"]
    context = {"findings": findings, "show_table": show_table}
    reference = engine.from_string(LOOP).render(context)
    rendered = engine.from_string(
        "{% load findings_rows %}{% findings_rows findings show_table %}"
    ).render(context)
    assert rendered == reference
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered
    assert "<img" not in rendered and "&amp;amp;" in rendered
    assert f'findings/{findings[0].id}/"' in rendered
    return rendered


def page_queries(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_a_findings_page_costs_the_same_queries_for_1_or_50_rows(client, member):
    client.force_login(member)
    table = Table.objects.create(uri="/data/q", name="q", status="ok", last_seen_version=99)
    findings_of(table, 1)
    few, html = page_queries(client, "/findings/")
    assert html.count('<td class="summary">') == 1
    findings_of(table, 60)
    many, html = page_queries(client, "/findings/")
    assert html.count('<td class="summary">') == 50  # paginated
    assert many == few
    few_t, _ = page_queries(client, f"/tables/{table.id}/")
    findings_of(table, 90)
    # The table page reads its open findings as one slice per severity the page overlaps
    # (pages.py: walking each severity's version index, no sort): what moves the count is
    # how a page falls across the severities, never the number of rows.
    assert abs(page_queries(client, f"/tables/{table.id}/")[0] - few_t) < len(Severity)


def test_it_renders_a_remembered_row_again_when_anything_it_shows_changes(tables):
    """Rows are remembered per process under what they show: after each change (acknowledged,
    resolved, confirmed, a new summary, a renamed table) the tag still renders what the loop
    renders, and a row shown before the change shows the same as before it."""
    _rendered_and_checked(True)  # remembered
    finding = Finding.objects.filter(table=tables[0], status="open").order_by("id").first()
    changes = [
        {"acknowledged_at": "2026-02-01T00:00Z"}, {"acknowledged_at": None},
        {"status": "resolved"}, {"confirmed": not finding.confirmed},
        {"summary": "a new summary <b>"}, {"severity": "info"},
    ]  # fmt: skip
    for change in changes:
        Finding.objects.filter(pk=finding.pk).update(**change)
        for show_table in (True, False):
            _rendered_and_checked(show_table)
    Table.objects.filter(pk=tables[0].pk).update(name="renamed & <i>")
    assert "renamed &amp; &lt;i&gt;" in _rendered_and_checked(True)


def test_it_keeps_at_most_its_bound_of_rows(tables, monkeypatch):
    from frontend.templatetags import findings_rows

    monkeypatch.setattr(findings_rows, "ROW_HTML", 5)
    monkeypatch.setattr(findings_rows, "_ROWS", {})
    _rendered_and_checked(True)
    assert 0 < len(findings_rows._ROWS) <= 5
