"""The tables list's rows rendered as TableSerializer renders them, from `.values()` rows
(`audit.reads.declared.lists.TABLE_ROW_VALUES`), without model instances: a cold tables list spent a
third of its CPU building a model instance and a health instance per table
(tests/app/test_table_rows_equal_drf.py holds it against the serializer)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, tzinfo
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from audit.api.serializers import TableSerializer, planned_row
from audit.models import Table
from audit.reads.declared.lists import HEALTH_NAMES

_HEALTH_NAMES = HEALTH_NAMES


class TableRow:
    """A `.values(*TABLE_ROW_VALUES)` row with the attributes TableSerializer reads of a
    Table: a cold tables list spent a third of its CPU building a model instance and a health
    instance per table (and converting columns no field shows)."""

    # The model's own properties: they read only attributes a row has.
    backfill_fraction = Table.backfill_fraction
    backfill_remaining = Table.backfill_remaining
    backfill_eta_seconds = Table.backfill_eta_seconds

    def __init__(self, values: dict[str, Any]):
        self.__dict__ = values

    @property
    def health(self) -> SimpleNamespace:
        from audit.health.models import TableHealth  # the serializer's missing-health signal

        values = self.__dict__
        if values["health__id"] is None:
            raise TableHealth.DoesNotExist
        return SimpleNamespace(**{name: values[f"health__{name}"] for name in _HEALTH_NAMES})


_TABLE_PLAN: list[tuple[str, Any, Any]] = []


def _table_plan() -> list[tuple[str, Any, Any]]:
    """TableSerializer's fields once per process: (name, source attributes, to_representation)
    for a column, (name, None, method name) for a method field (bound per request: they read
    the serializer's context). The same loop as TableSerializer.to_representation."""
    if not _TABLE_PLAN:
        prototype = TableSerializer()
        _TABLE_PLAN[:] = [
            (name, None, field.method_name)
            if field.source == "*"
            else (name, field.source_attrs, field.to_representation)
            for name, field in prototype.fields.items()
            if not field.write_only
        ]
    return _TABLE_PLAN


def _iso_datetime(zone: tzinfo, field: serializers.DateTimeField) -> Callable[[Any], Any]:
    """`field.to_representation` with the reader's time zone looked up once per request, not
    once per value (a sixth of a cold tables list: Django's current time zone is an asgiref
    Local). The same text: DRF's enforce_timezone and ISO-8601 with "Z"; anything else (a
    naive or out-of-range value) goes to the field itself."""
    if getattr(field, "format", api_settings.DATETIME_FORMAT).lower() != ISO_8601:
        return field.to_representation
    if hasattr(field, "timezone"):
        return field.to_representation

    def represent(value: Any) -> Any:
        if type(value) is not datetime or value.tzinfo is None:
            return field.to_representation(value)
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return field.to_representation(value)
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return represent


# Rendered rows, remembered per process under everything they are made of (below): on a live
# lake every stored commit makes the tables list cold, but moves one table's row; rendering
# every row again was most of a cold list's CPU (~0.2 ms a table). Bounded, oldest out first.
_SHOWN: dict[tuple, dict[str, Any]] = {}
_SHOWN_MAX = 4096


def table_rows(rows: list[dict[str, Any]], context: dict[str, Any]) -> list[dict[str, Any]]:
    """TableSerializer(many=True, context=context).data of these tables' `.values()` rows.

    A row's fields read only its values, the reader's time zone and the context's
    `seconds_since` (the list's marks), so a row rendered before under the same ones is the
    same dict (shared: the renderer only reads it). Rows with an unhashable value are
    rendered every time."""
    if not rows:
        return []
    zone = timezone.get_current_timezone() if settings.USE_TZ else None
    shape = (zone, context.get("seconds_since"), tuple(rows[0]))
    plan: list | None = None
    out = []
    for values in rows:
        try:
            key = (shape, *values.values())
            shown = _SHOWN.get(key)
        except TypeError:  # a list or dict value
            key, shown = None, None
        if shown is None:
            plan = plan or _request_plan(context, zone)
            shown = planned_row(plan, TableRow(values))
            if key is not None:
                _remember(key, shown)
        out.append(shown)
    return out


def _remember(key: tuple, shown: dict[str, Any]) -> None:
    if len(_SHOWN) >= _SHOWN_MAX:
        with suppress(KeyError, StopIteration, RuntimeError):  # another thread was first
            del _SHOWN[next(iter(_SHOWN))]
    _SHOWN[key] = shown


def _request_plan(context: dict[str, Any], zone: tzinfo | None) -> list:
    """The serializer's plan with this request's method fields and time zone."""
    serializer = TableSerializer(context=context)
    plan = []
    for name, attrs, represent in _table_plan():
        if attrs is None:
            represent = getattr(serializer, represent)
        elif zone is not None and isinstance(represent.__self__, serializers.DateTimeField):
            represent = _iso_datetime(zone, represent.__self__)
        plan.append((name, attrs, represent))
    return plan
