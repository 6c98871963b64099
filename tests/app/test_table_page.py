"""The table page's open findings read by SQL compiled once (audit/reads/queries.py,
`table_open_findings`) as `.values()` rows (FindingRow, no model instances) render byte for
byte as the ORM's queryset of Finding instances does: hostile summaries and kinds, resolved and
acknowledged findings, more than a page of them (every page, worst first then newest, none
left out), none, another table's."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from audit.core.vocab import SEVERITY_RANK
from audit.models import Finding, Table
from audit.reads import queries
from audit.reads.pages import ROW_FIELDS, ROW_VALUES, OpenFindings
from frontend.templatetags.findings_rows import FindingRow
from tests.app.test_findings_rows import HOSTILE, findings_of

pytestmark = pytest.mark.django_db


def reference(table: Table, start: int = 0, stop: int = 50) -> list[Finding]:
    """A page of the table page's open findings through the ORM: worst first, then newest."""
    return list(
        queries.findings_by_status(Finding.objects.filter(table=table), "open")
        .order_by(queries.SEVERITY_FIRST, "-version", "-id")[start:stop]
        .only(*ROW_FIELDS)
    )


def fields(finding: Finding) -> dict:
    return {k: v for k, v in finding.__dict__.items() if k != "_state"}


@pytest.mark.parametrize("n", [0, 3, 10, 70])
def test_open_findings_are_the_querysets(n):
    table = Table.objects.create(uri="/data/a", name=HOSTILE, status="ok", last_seen_version=99)
    other = Table.objects.create(uri="/data/b", name="b", status="ok", last_seen_version=99)
    findings_of(table, n)
    findings_of(other, 5)
    Finding.objects.filter(table=table, version__in=(2, 3)).update(status="resolved")
    Finding.objects.filter(table=table, version=1).update(acknowledged_at="2026-01-01T00:00Z")
    Finding.objects.filter(table=table, version=4).update(kind=HOSTILE[:60])
    Finding.objects.filter(table=table, version=5).update(version=6)  # two at v6: by id
    listed = []
    for start in (0, 50):
        expected = reference(table, start, start + 50)
        shown = [FindingRow(row) for row in OpenFindings(table.pk, ROW_VALUES)[start : start + 50]]
        assert [f.id for f in shown] == [f.id for f in expected]
        assert [vars(f) for f in shown] == [fields(f) for f in expected]
        html = render_to_string("frontend/_findings_rows.html", {"findings": shown})
        assert html == render_to_string("frontend/_findings_rows.html", {"findings": expected})
        listed += shown
    assert len(listed) == max(0, n - 3)  # not resolved, not acknowledged: every one listed
    ranks = [(-SEVERITY_RANK[f.severity], -f.version) for f in listed]
    assert ranks == sorted(ranks)
