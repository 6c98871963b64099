"""The findings page's <select> widgets, remembered per process (frontend/templatetags/
findings_rows.py `select_html`), are the HTML Django renders for the same form: for each table
choice, severity, invalid value and after a table is renamed or added."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from audit.models import Table
from frontend.forms import FindingFilterForm
from frontend.templatetags.findings_rows import select_html

pytestmark = pytest.mark.django_db


def _both(query: str) -> list[tuple[str, str]]:
    tables = list(Table.objects.order_by("id").values_list("id", "name", "uri"))
    form = FindingFilterForm(QueryDict(query) or None, tables=tables)
    return [(str(select_html(form[name])), str(form[name])) for name in ("table", "severity")]


def test_it_renders_what_django_renders(tmp_path):
    first = Table.objects.create(uri=str(tmp_path / "a"), name="a <b> & c")
    queries = ["", f"table={first.id}", "severity=critical", "severity=nope", "table=999999"]
    for query in [*queries, *queries]:  # the second pass is served from memory
        for remembered, rendered in _both(query):
            assert remembered == rendered
    assert "a &lt;b&gt; &amp; c" in _both("")[0][0]
    Table.objects.filter(pk=first.pk).update(name="renamed")
    second = Table.objects.create(uri=str(tmp_path / "b"), name="second")
    for query in ["", f"table={second.id}", f"table={first.id}"]:
        for remembered, rendered in _both(query):
            assert remembered == rendered
    assert (
        "renamed" in _both("")[0][0]
        and f'value="{second.id}" selected' in _both(f"table={second.id}")[0][0]
    )
    assert 'aria-invalid="true"' in _both("severity=nope")[1][0]
