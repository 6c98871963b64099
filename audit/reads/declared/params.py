"""The query-string parameters of the declared reads: their form fields and one validation.

Every malformed value is a 400 with the parameter named, never a 500. Integers are bounded to
int64 (SQLite and PostgreSQL would overflow), strings refuse NUL (PostgreSQL cannot store it),
booleans accept only true/false/1/0/yes/no (django-filter's own boolean filter silently ignores
anything else, which would turn a typo into "no filter").

A `Param` declares one filter (name, kind, help text, the condition it adds); `ListParams`
validates a query string against a read's params once per request with fields built once per
process (django-filter's per-request FilterSet deep-copied every filter and built a form class:
half a cold list's CPU), and raises what `DjangoFilterBackend` raised (the same 400 body).
The fields are django-filter's own (`Filter(...).field`), so the messages are its messages.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import django_filters
from django import forms
from django.forms.utils import ErrorDict, ErrorList
from django.utils.dateparse import parse_date, parse_datetime
from django_filters.constants import EMPTY_VALUES
from django_filters.utils import translate_validation

from audit.core.numbers import INT64_MAX, log_int

MAX_LIST_ITEMS = 50
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
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


# --------------------------------------------------------------------------- declarations

# A condition as `audit.reads.declared.list_sql.sql_condition` takes it: (field or fields, operator,
# value); a Param's `where` makes its conditions of the cleaned value.
Condition = tuple[Any, ...]
_FIELDS = {
    "int": Int64Field,
    "bool": StrictBooleanField,
    "list": CommaListField,
    "text": TextValueField,
    "time": TimeField,
}
_SCHEMA = {
    "int": {"type": "integer", "format": "int64"},
    "bool": {"type": "boolean"},
    "time": {"type": "string"},
}


@dataclass(frozen=True)
class Param:
    """One filter of a declared read: `kind` is int, bool, list, text, time or choice;
    `where(value)` -> the SQL conditions of its cleaned value (None: the read adds them
    itself, e.g. a time window read through other columns)."""

    name: str
    kind: str
    help: str
    where: Callable[[Any], list[Condition]] | None = None
    choices: tuple[str, ...] = ()
    allowed_prefix: str = ""
    labels: tuple[tuple[str, str], ...] = field(default=())  # a choice's (value, label)

    def field(self) -> forms.Field:
        """The form field django-filter built for this filter (its validation, its messages)."""
        if self.kind == "choice":
            options = self.labels or tuple((c, c) for c in self.choices)
            return django_filters.ChoiceFilter(choices=list(options), label=self.help).field
        flt = django_filters.Filter(label=self.help, **self._field_kwargs())
        flt.field_class = _FIELDS[self.kind]
        return flt.field

    def _field_kwargs(self) -> dict[str, Any]:
        if self.kind != "list":
            return {}
        kwargs: dict[str, Any] = {"allowed": self.choices} if self.choices else {}
        if self.allowed_prefix:
            kwargs["allowed_prefix"] = self.allowed_prefix
        return kwargs

    def schema(self) -> tuple[dict[str, Any], str]:
        """(OpenAPI schema, description) of the parameter."""
        if self.kind == "choice":
            return {"type": "string", "enum": list(self.choices)}, self.help
        described = self.help
        if self.kind == "list" and self.choices:
            more = f", or {self.allowed_prefix}<metric>" if self.allowed_prefix else ""
            described = f"{self.help} One or more of: {', '.join(self.choices)}{more}."
        return dict(_SCHEMA.get(self.kind, {"type": "string"})), described


def equal(*fields: str) -> Callable[[Any], list[Condition]]:
    """The value equals `fields[0]` (or any of the fields)."""
    target = fields[0] if len(fields) == 1 else fields
    return lambda value: [(target, "=", value)]


def compare(field_name: str, op: str) -> Callable[[Any], list[Condition]]:
    return lambda value: [(field_name, op, value)]


class ListParams:
    """The validation of `params`, once: `clean(query_params)` -> {name: value} of the
    filters given (empty values dropped, as django-filter skips them), or the backend's 400."""

    def __init__(self, params: Iterable[Param]):
        # The form django-filter built per request had these fields, in this order.
        self.fields = {param.name: param.field() for param in params}

    def clean(self, data) -> dict[str, Any]:
        cleaned, errors = {}, ErrorDict()
        for name, form_field in self.fields.items():
            raw = form_field.widget.value_from_datadict(data, {}, name)
            try:
                value = form_field.clean(raw)
            except forms.ValidationError as err:
                errors[name] = ErrorList(err.error_list)
                continue
            if value not in EMPTY_VALUES:
                cleaned[name] = value
        if errors:
            raise translate_validation(errors)
        return cleaned
