"""Query-string filters. Every malformed value is a 400 with the parameter named, never a 500.

Integers are bounded to int64 (SQLite and PostgreSQL would overflow), strings refuse NUL
(PostgreSQL cannot store it), booleans accept only true/false/1/0/yes/no (django-filter's own
boolean filter silently ignores anything else, which would turn a typo into "no filter").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import django_filters
from django import forms
from django.db.models import Q
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import extend_schema_field

from audit.core.numbers import INT64_MAX, log_int
from audit.core.vocab import (
    HEALTH_FINDING_PREFIX,
    SEVERITY_ORDER,
    Engine,
    FindingKind,
    Severity,
)
from audit.models import Commit, Finding, Table
from audit.reads import queries

MAX_LIST_ITEMS = 50
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
SEVERITIES = tuple(str(s) for s in SEVERITY_ORDER)
KINDS = tuple(str(k) for k in FindingKind)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# --------------------------------------------------------------------------- form fields


class Int64Field(forms.IntegerField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", -INT64_MAX)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)

    def to_python(self, value):
        # ASCII digits only: Django's own field takes "١٢" (Arabic-Indic) as 12.
        if isinstance(value, str) and value.strip() and log_int(value, signed=True) is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class StrictBooleanField(forms.CharField):
    def to_python(self, value):
        text = super().to_python(value)
        if text in ("", None):
            return None
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise forms.ValidationError(f"expected true or false, got {text[:40]!r}")


class CommaListField(forms.CharField):
    """`a,b,c` -> ["a", "b", "c"]; with `allowed`, every item must be one of them."""

    def __init__(
        self, *args, allowed: Iterable[str] | None = None, allowed_prefix: str = "", **kwargs
    ):
        self.allowed = tuple(allowed) if allowed is not None else None
        # Items starting with it are allowed too (health_<metric> finding kinds).
        self.allowed_prefix = allowed_prefix
        kwargs.setdefault("max_length", 2000)
        super().__init__(*args, **kwargs)

    def clean(self, value):
        text = super().clean(value)
        if not text:
            return None
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise forms.ValidationError("expected a comma-separated list of values")
        if len(items) > MAX_LIST_ITEMS:
            raise forms.ValidationError(f"at most {MAX_LIST_ITEMS} values")
        if self.allowed is not None:
            unknown = [item for item in items if not self._allowed(item)]
            if unknown:
                # The value as a parameter: a '%' in it must not be read as a format.
                raise forms.ValidationError(
                    "unknown value %(value)s; expected one of %(allowed)s",
                    params={"value": repr(unknown[0][:40]), "allowed": ", ".join(self.allowed)},
                )
        return items

    def _allowed(self, item: str) -> bool:
        if item in self.allowed:
            return True
        return bool(self.allowed_prefix) and item.startswith(self.allowed_prefix)


class TextValueField(forms.CharField):
    """A text value of a filter: at most 200 characters (Django's CharField refuses NUL)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 200)
        super().__init__(*args, **kwargs)


class TimeField(forms.CharField):
    """An ISO 8601 date or datetime (naive means UTC), or milliseconds since the epoch -> ms."""

    def clean(self, value):
        text = (super().clean(value) or "").strip()
        if not text:
            return None
        if text.lstrip("-").isdigit() and text.isascii():
            ms = int(text)
            if not -INT64_MAX <= ms <= INT64_MAX:
                raise forms.ValidationError("milliseconds out of range")
            return ms
        try:
            moment = parse_datetime(text)
            if moment is None:
                day = parse_date(text)
                if day is not None:
                    moment = dt.datetime.combine(day, dt.time.min)
        except (ValueError, OverflowError):
            moment = None
        if moment is None:
            raise forms.ValidationError(
                f"expected an ISO 8601 datetime or milliseconds since the epoch, got {text[:40]!r}"
            )
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        try:  # exact integer arithmetic: no float rounding of the milliseconds
            return (moment - EPOCH) // dt.timedelta(milliseconds=1)
        except (OverflowError, ValueError):
            raise forms.ValidationError("datetime out of range") from None


# --------------------------------------------------------------------------- filters

_INT = {"type": "integer", "format": "int64"}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}


def _int_filter(field_name: str, lookup: str, help_text: str) -> django_filters.Filter:
    flt = django_filters.Filter(field_name=field_name, lookup_expr=lookup, label=help_text)
    flt.field_class = Int64Field
    return extend_schema_field(_INT)(flt)


def _bool_filter(method_or_field: str, help_text: str, *, method: bool = False):
    kwargs = {"method": method_or_field} if method else {"field_name": method_or_field}
    flt = django_filters.Filter(label=help_text, **kwargs)
    flt.field_class = StrictBooleanField
    return extend_schema_field(_BOOL)(flt)


def _list_filter(
    field_name: str,
    help_text: str,
    choices=None,
    *,
    method: str | None = None,
    allowed_prefix: str = "",
):
    kwargs = {"method": method} if method else {"field_name": field_name, "lookup_expr": "in"}
    if choices:
        kwargs["allowed"] = choices
    if allowed_prefix:
        kwargs["allowed_prefix"] = allowed_prefix
    flt = django_filters.Filter(label=help_text, **kwargs)
    flt.field_class = CommaListField
    schema = dict(_STR)
    if choices:
        more = f", or {allowed_prefix}<metric>" if allowed_prefix else ""
        schema["description"] = f"{help_text} One or more of: {', '.join(choices)}{more}."
    return extend_schema_field(schema)(flt)


def _text_filter(method: str, help_text: str) -> django_filters.Filter:
    """Free text (at most 200 characters, no NUL) handed to `method`."""
    flt = django_filters.Filter(method=method, label=help_text)
    flt.field_class = TextValueField
    return extend_schema_field(_STR)(flt)


def _time_filter(field_name: str, lookup: str, help_text: str) -> django_filters.Filter:
    flt = django_filters.Filter(field_name=field_name, lookup_expr=lookup, label=help_text)
    flt.field_class = TimeField
    return extend_schema_field(_STR)(flt)


class CommitFilter(django_filters.FilterSet):
    operation = _list_filter("operation", "Operation name(s), exact, comma-separated.")
    min_version = _int_filter("version", "gte", "Versions at or above this one.")
    max_version = _int_filter("version", "lte", "Versions at or below this one.")
    since = _time_filter(
        "timestamp", "gte", "Committed at or after (ISO 8601 or ms since the epoch)."
    )
    until = _time_filter("timestamp", "lte", "Committed at or before (ISO 8601 or ms).")
    has_concurrent = _bool_filter(
        "filter_has_concurrent",
        "Only commits with (true) or without (false) concurrent commits.",
        method=True,
    )
    user = _text_filter("filter_user", "Written by this user name or user id (exact).")
    engine = _list_filter(
        "engine", "Written by these engine(s), comma-separated.", tuple(str(e) for e in Engine)
    )
    job = _text_filter("filter_job", "Written by this job (job id, or job name; exact).")
    user_metadata = _text_filter(
        "filter_user_metadata", "Whose userMetadata contains this text (case-insensitive)."
    )

    class Meta:
        model = Commit
        fields: list[str] = []

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        since, until = self.form.cleaned_data.get("since"), self.form.cleaned_data.get("until")
        if since is None and until is None:
            return queryset
        # The same rows, read in version order from versions the window can hold (see
        # queries.commit_time_bounds); the view's queryset is one table's, by URL.
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

    def filter_has_concurrent(self, queryset, name, value):
        if value is None:
            return queryset
        # concurrent_count > 0 matches the partial index audit_commit_concurrent.
        return (
            queryset.filter(concurrent_count__gt=0)
            if value
            else queryset.filter(concurrent_count=0)
        )


class FindingFilter(django_filters.FilterSet):
    table = _int_filter("table_id", "exact", "Findings of this table id.")
    kind = _list_filter(
        "kind", "Finding kind(s), comma-separated.", KINDS, allowed_prefix=HEALTH_FINDING_PREFIX
    )
    severity = _list_filter("severity", "Exact severity(ies).", SEVERITIES)
    min_severity = django_filters.ChoiceFilter(
        method="filter_min_severity",
        choices=[(s, s) for s in SEVERITIES],
        label="This severity or worse (info < warning < critical).",
    )
    confirmed = _bool_filter("confirmed", "Confirmed on the data files (true) or not.")
    status = django_filters.ChoiceFilter(
        field_name="status", choices=Finding.Status.choices, label="open or resolved."
    )
    acknowledged = _bool_filter(
        "filter_acknowledged", "Acknowledged by someone (true) or not (false).", method=True
    )
    min_version = _int_filter("version", "gte", "Findings at or above this version.")
    max_version = _int_filter("version", "lte", "Findings at or below this version.")

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


class TableFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(
        field_name="status", choices=Table.Status.choices, label="Ingest status."
    )

    class Meta:
        model = Table
        fields: list[str] = []
