"""The findings page's content from `.values()` rows (FindingRow, no Finding or Table
instances) and a dropdown of the tables' names and URIs only is byte for byte what the page
gave with model instances (the reference below, the view's code before): every status tab,
table, kind and severity filter, pages, bad values, hostile names; as staff and as a member."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from django import forms
from django.conf import settings
from django.core.paginator import Paginator
from django.template import engines
from django.test import RequestFactory

from audit.models import Finding, Membership, Project, Table
from audit.reads import queries
from audit.reads import visible as seen
from audit.reads.pages import ROW_FIELDS, TABLE_ROW_FIELDS
from frontend.views.findings import _findings_content, kind_choices
from tests.app.test_findings_rows import HOSTILE, findings_of

pytestmark = pytest.mark.django_db

STAFF = SimpleNamespace(is_authenticated=True, is_staff=True, is_superuser=False, pk=0)


class ReferenceFilterForm(forms.Form):
    """The findings filter as it was: the tables as a model choice field's queryset."""

    table = forms.ModelChoiceField(
        Table.objects.all(),
        required=False,
        empty_label="All tables",
        widget=forms.Select(attrs={"aria-label": "Table"}),
    )
    kind = forms.CharField(required=False, max_length=64)
    severity = forms.ChoiceField(
        choices=[("", "Any severity"), *Finding.Severity.choices],
        required=False,
        widget=forms.Select(attrs={"aria-label": "Severity"}),
    )
    status = forms.ChoiceField(
        choices=[("open", "Open"), ("acknowledged", "Acknowledged"), ("resolved", "Resolved"),
                 ("all", "All")],
        required=False,
    )  # fmt: skip

    def __init__(self, *args, tables, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["table"].queryset = tables


def reference(request) -> str:
    form = ReferenceFilterForm(request.GET or None, tables=seen.visible_tables(request.user))
    status, filters = "open", {}
    if form.is_valid():
        data = form.cleaned_data
        status = data.get("status") or "open"
        filters = {field: data[field] for field in ("table", "kind", "severity") if data.get(field)}
    fields = ROW_FIELDS if "table" in filters else TABLE_ROW_FIELDS
    visible = seen.visible_findings(request.user)
    rows = queries.filtered_findings(visible, filters, status, fields)
    table = form.cleaned_data.get("table") if form.is_valid() else None
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    for finding in page.object_list if table else ():
        finding.table = table
    query = request.GET.copy()
    query.pop("page", None)
    filters = query.copy()
    filters.pop("status", None)
    ctx = {
        "form": form, "page": page, "kinds": kind_choices(), "status": status,
        "querystring": query.urlencode(), "filter_qs": filters.urlencode(),
    }  # fmt: skip
    return _REFERENCE.render(ctx)


# The page's template as it was: the kind dropdown written by the template's own loop
# (findings_rows.kind_options writes it now).
_KIND_LOOP = (
    '{% for k in kinds %}<option value="{{ k }}" {% if form.kind.value == k %}selected'
    "{% endif %}>{{ k|kind_name }} ({{ k }})</option>{% endfor %}"
)
_REFERENCE = engines["django"].from_string(
    (Path(settings.BASE_DIR) / "frontend/templates/frontend/_findings_content.html")
    .read_text()
    .replace("{% kind_options kinds form.kind.value %}", _KIND_LOOP)
)


@pytest.fixture
def tables() -> list[Table]:
    named = Table.objects.create(uri="/data/a", name=HOSTILE, status="ok", last_seen_version=99)
    unnamed = Table.objects.create(uri=f"/data/{HOSTILE}", status="ok", last_seen_version=99)
    other = Project.objects.create(name="other", slug="other")
    hidden = Table.objects.create(uri="/data/hidden", name="hidden", project=other)
    findings_of(named, 80)
    findings_of(unnamed, 30)
    findings_of(hidden, 5)
    Finding.objects.filter(table=named, version__in=(2, 3)).update(status="resolved")
    Finding.objects.filter(table=unnamed, version=5).update(acknowledged_at="2026-01-01T00:00Z")
    return [named, unnamed, hidden]


def queries_for(tables: list[Table]) -> list[str]:
    named, unnamed, hidden = (t.id for t in tables)
    return [
        "", "status=all", "status=resolved", "status=acknowledged", "status=bogus", "page=2",
        "page=last", "page=x", f"table={named}", f"table={named}&page=2&status=all",
        f"table={unnamed}&status=acknowledged", f"table={hidden}", "table=999999", "table=x",
        "severity=critical", "severity=nope", "kind=write_skew", f"kind=x&table={named}",
        f"status=all&severity=warning&table={unnamed}&page=1",
        # The open tab's count by table and severity only comes from FindingCounts.
        "severity=info&page=last", f"severity=critical&table={named}&page=last",
        f"table={unnamed}&page=last", "status=open&page=last",
    ]  # fmt: skip


@pytest.mark.parametrize("who", ["staff", "member"])
def test_it_renders_the_page_the_model_instances_rendered(tables, who, member):
    user = STAFF if who == "staff" else member
    if who == "member":
        Membership.objects.filter(user=member).exclude(project=tables[0].project).delete()
    shown = 0
    for query in queries_for(tables):
        request = RequestFactory().get(f"/findings/?{query}")
        request.user = user
        html = _findings_content(request)
        assert html == reference(request), query
        shown += html.count('<td class="summary">')
    assert shown > 300 and "<script>" not in html


@pytest.mark.parametrize("value", [None, "", "write_skew", HOSTILE, "absent"])
def test_it_writes_the_kind_options_the_template_loop_wrote(value):
    kinds = ["lost_update", HOSTILE, "write_skew", "a&b\"c'd"]
    form = SimpleNamespace(kind=SimpleNamespace(value=value))
    ctx = {"kinds": kinds, "form": form}
    fast = engines["django"].from_string(
        "{% load findings_rows %}{% kind_options kinds form.kind.value %}"
    )
    html = fast.render(ctx)
    assert html == engines["django"].from_string("{% load frontend_tags %}" + _KIND_LOOP).render(
        ctx
    )
    assert html.count(" selected>") == (value in kinds) and "<script>" not in html
