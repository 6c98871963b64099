"""The commits and findings lists as django-filter and the ORM answered them before their SQL
was derived from their declarations (audit/reads/declared/lists.py): the reference the production path
must equal byte for byte (tests/app/api/test_lists_equal_their_orm_reference.py). `use(monkeypatch)`
makes the views build their rows this way; everything else (permissions, pagination, caching,
rendering) stays theirs. The FilterSets live here, as the oracle: the form fields are the
production ones (audit/reads/declared/params.py), the filtering is the ORM's."""

from __future__ import annotations

import django_filters
import pytest
from django.db.models import Q

from audit.api import serializers as s
from audit.api.views import FindingViewSet, TableViewSet
from audit.core.vocab import HEALTH_FINDING_PREFIX, SEVERITY_ORDER, Engine, Severity
from audit.models import Commit, Finding
from audit.reads import queries
from audit.reads.declared.lists import KINDS, SEVERITIES
from audit.reads.declared.params import (
    CommaListField,
    Int64Field,
    StrictBooleanField,
    TextValueField,
    TimeField,
)
from audit.trust import access


def _filter(field_class, **kwargs) -> django_filters.Filter:
    flt = django_filters.Filter(**kwargs)
    flt.field_class = field_class
    return flt


def _list(field_name: str, choices=None, *, allowed_prefix: str = "", method=None):
    kwargs = {"method": method} if method else {"field_name": field_name, "lookup_expr": "in"}
    if choices:
        kwargs["allowed"] = choices
    if allowed_prefix:
        kwargs["allowed_prefix"] = allowed_prefix
    return _filter(CommaListField, label="x", **kwargs)


class CommitFilter(django_filters.FilterSet):
    operation = _list("operation")
    min_version = _filter(Int64Field, field_name="version", lookup_expr="gte", label="x")
    max_version = _filter(Int64Field, field_name="version", lookup_expr="lte", label="x")
    since = _filter(TimeField, field_name="timestamp", lookup_expr="gte", label="x")
    until = _filter(TimeField, field_name="timestamp", lookup_expr="lte", label="x")
    has_concurrent = _filter(StrictBooleanField, method="filter_has_concurrent", label="x")
    user = _filter(TextValueField, method="filter_user", label="x")
    engine = _list("engine", tuple(str(e) for e in Engine))
    job = _filter(TextValueField, method="filter_job", label="x")
    user_metadata = _filter(TextValueField, method="filter_user_metadata", label="x")
    q = _filter(TextValueField, method="filter_q", label="x")

    class Meta:
        model = Commit
        fields: list[str] = []

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        since, until = self.form.cleaned_data.get("since"), self.form.cleaned_data.get("until")
        if since is None and until is None:
            return queryset
        table_id = int(self.request.parser_context["kwargs"]["pk"])
        bounds = queries.commit_time_bounds(table_id, since, until)
        if bounds is None:
            return queryset
        return queryset.filter(version__gte=bounds[0], version__lte=bounds[1])

    def filter_user(self, queryset, name, value):
        return queryset.filter(Q(user_name=value) | Q(user_id=value)) if value else queryset

    def filter_job(self, queryset, name, value):
        return queryset.filter(job_id=value) if value else queryset

    def filter_user_metadata(self, queryset, name, value):
        return queryset.filter(user_metadata__icontains=value) if value else queryset

    def filter_q(self, queryset, name, value):
        if not value:
            return queryset
        either = Q(user_metadata__icontains=value) | Q(operation_parameters__icontains=value)
        return queryset.filter(either)

    def filter_has_concurrent(self, queryset, name, value):
        if value is None:
            return queryset
        return (
            queryset.filter(concurrent_count__gt=0)
            if value
            else queryset.filter(concurrent_count=0)
        )


class FindingFilter(django_filters.FilterSet):
    table = _filter(Int64Field, field_name="table_id", lookup_expr="exact", label="x")
    kind = _list("kind", KINDS, allowed_prefix=HEALTH_FINDING_PREFIX)
    severity = _list("severity", SEVERITIES)
    min_severity = django_filters.ChoiceFilter(
        method="filter_min_severity", choices=[(s, s) for s in SEVERITIES], label="x"
    )
    confirmed = _filter(StrictBooleanField, field_name="confirmed", label="x")
    status = django_filters.ChoiceFilter(
        field_name="status", choices=Finding.Status.choices, label="x"
    )
    acknowledged = _filter(StrictBooleanField, method="filter_acknowledged", label="x")
    min_version = _filter(Int64Field, field_name="version", lookup_expr="gte", label="x")
    max_version = _filter(Int64Field, field_name="version", lookup_expr="lte", label="x")

    class Meta:
        model = Finding
        fields: list[str] = []

    def filter_min_severity(self, queryset, name, value):
        if not value:
            return queryset
        rank = Severity(value).rank
        return queryset.filter(severity__in=[s for s in SEVERITY_ORDER if s.rank >= rank])

    def filter_acknowledged(self, queryset, name, value):
        if value is None:
            return queryset
        return queryset.filter(acknowledged_at__isnull=not value)


def _filtered(filterset: type[django_filters.FilterSet], view, queryset):
    """What DjangoFilterBackend did: the FilterSet's rows, or its 400."""
    found = filterset(view.request.query_params, queryset=queryset, request=view.request)
    if not found.is_valid():
        raise django_filters.utils.translate_validation(found.errors)
    return found.qs


def commit_rows(view: TableViewSet, table_id: int):
    """The FilterSet's rows of the table's commits (its 400 for a bad filter)."""
    queryset = _filtered(CommitFilter, view, Commit.objects.filter(table_id=table_id))
    return queryset.values(*s.COMMIT_LIST_FIELDS)


def finding_rows(view: FindingViewSet, visible: list[int] | None):
    """The FilterSet's rows of the findings of the reader's projects' tables."""
    rows = access.restrict(Finding.objects.all(), view.request.user, "table__project_id")
    return _filtered(FindingFilter, view, rows).values(*s.FINDING_LIST_FIELDS)


def use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views answer by the reference until `monkeypatch` is undone."""
    monkeypatch.setattr(TableViewSet, "commit_rows", commit_rows)
    monkeypatch.setattr(FindingViewSet, "finding_rows", finding_rows)
