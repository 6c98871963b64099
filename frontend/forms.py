"""Forms of the dashboard: registering a table, filtering findings, explaining an exception."""

from __future__ import annotations

from django import forms

from audit.models import Finding, Table
from audit.reads import queries
from audit.trust.limits import MAX_EXCEPTION_CHARS


class RegisterTableForm(forms.Form):
    uri = forms.CharField(
        label="Table URI",
        max_length=1900,
        widget=forms.TextInput(
            attrs={"placeholder": "/data/lake/events or s3://bucket/path", "autocomplete": "off"}
        ),
    )
    name = forms.CharField(label="Name", max_length=200, required=False)


class FindingFilterForm(forms.Form):
    STATUS_CHOICES = [
        ("open", "Open"),
        ("acknowledged", "Acknowledged"),
        ("resolved", "Resolved"),
        ("all", "All"),
    ]
    # The reader's tables (audit/trust/access.py), as (id, name, uri) rows read once
    # (queries.table_choices); the cleaned value is the chosen one as a Table of those columns.
    # aria-label: the filter bar shows no <label>, a screen reader still names each control.
    table = forms.ChoiceField(
        choices=[("", "All tables")],
        required=False,
        widget=forms.Select(attrs={"aria-label": "Table"}),
    )
    kind = forms.CharField(required=False, max_length=64)
    severity = forms.ChoiceField(
        choices=[("", "Any severity"), *Finding.Severity.choices],
        required=False,
        widget=forms.Select(attrs={"aria-label": "Severity"}),
    )
    status = forms.ChoiceField(choices=STATUS_CHOICES, required=False)

    def __init__(self, *args, tables: list[tuple[int, str, str]] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self._tables = {str(row[0]): row for row in tables}
        # The labels a model choice field gives: str(table), its name or else its URI.
        labels = [(key, name or uri) for key, (_, name, uri) in self._tables.items()]
        self.fields["table"].choices = [("", "All tables"), *labels]

    def clean_table(self) -> Table | None:
        row = self._tables.get(self.cleaned_data.get("table") or "")
        if row is None:
            return None
        return Table.of_columns(id=row[0], name=row[1], uri=row[2])


class ExplainForm(forms.Form):
    text = forms.CharField(
        label="Exception text",
        max_length=MAX_EXCEPTION_CHARS,
        widget=forms.Textarea(
            attrs={
                "rows": 12,
                "spellcheck": "false",
                "placeholder": "Paste a ConcurrentAppendException, DELTA_CONCURRENT_… or a "
                "delta-rs CommitFailedError here",
            }
        ),
    )
    table = forms.ModelChoiceField(
        queries.all_tables(), required=False, empty_label="No table (explain the text only)"
    )

    def __init__(self, *args, tables=None, **kwargs):
        super().__init__(*args, **kwargs)
        if tables is not None:  # the reader's tables only (audit/trust/access.py)
            self.fields["table"].queryset = tables
