"""The commits and findings lists without django-filter's and the ORM's per-request cost
(the cold path: the first request after a table changed).

A cold list request spent about half its CPU in django-filter (a deep copy of every filter and
of a new form class per request) and the ORM (building, compiling and converting the page's
query). Here:

- `ListParams` validates the query string with the FilterSet's own form fields, built once, in
  the form's order, and raises the same `ValidationError` as `DjangoFilterBackend` (same 400
  body); the fields' `clean` is stateless, so one instance serves every thread.
- `RowQuery` is the part of a queryset that DRF's `CursorPagination` uses (`order_by`, a
  `filter` on the cursor column, a slice): the pagination, its cursors and links stay DRF's.
  Its SQL is the ORM's `.values(...)` query compiled once per process, with the filters'
  conditions added as plain SQL, and the ORM's converters applied to the rows (a JSON column is
  decoded by orjson, falling back to Django's own decoder for anything orjson refuses).

The old path (FilterSet + ORM) is kept in the tests (tests/app/api/list_reference.py); the
differential test (tests/app/api/test_lists_equal_their_orm_reference.py) compares the two byte for byte.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, tzinfo
from types import SimpleNamespace
from typing import Any

import orjson
from django.conf import settings
from django.db import connections
from django.db.models import JSONField, Model
from django.forms import ValidationError
from django.forms.utils import ErrorDict, ErrorList
from django.utils import timezone
from django_filters.constants import EMPTY_VALUES
from django_filters.filterset import FilterSet
from django_filters.utils import translate_validation
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from audit.api.filters import CommitFilter, FindingFilter
from audit.api.serializers import (
    COMMIT_LIST_FIELDS,
    FINDING_LIST_FIELDS,
    TABLE_LIST_COLUMNS,
    TableSerializer,
    planned_row,
)
from audit.core.vocab import SEVERITY_ORDER, Severity
from audit.models import Commit, Finding, Table
from audit.reads import queries
from audit.reads.prepared import PLACEHOLDERS, _positions, _substitute

# --------------------------------------------------------------------------- parameters


class ListParams:
    """A FilterSet's validation, once: `clean(query_params)` -> {name: value} of the filters
    given (empty values dropped, as django-filter skips them), or the backend's 400."""

    def __init__(self, filterset: type[FilterSet]):
        # The form django-filter builds per request has these fields, in this order.
        self.fields = {name: flt.field for name, flt in filterset.base_filters.items()}

    def clean(self, data) -> dict[str, Any]:
        cleaned, errors = {}, ErrorDict()
        for name, field in self.fields.items():
            raw = field.widget.value_from_datadict(data, {}, name)
            try:
                value = field.clean(raw)
            except ValidationError as err:
                errors[name] = ErrorList(err.error_list)
                continue
            if value not in EMPTY_VALUES:
                cleaned[name] = value
        if errors:
            raise translate_validation(errors)
        return cleaned


# --------------------------------------------------------------------------- rows


class _Compiled:
    """A `.values(*names)` query's SELECT ... FROM ... [WHERE], its converters and columns."""

    def __init__(self, queryset, names: tuple[str, ...], *, whole: bool = False):
        compiler = queryset.query.get_compiler(queryset.db)
        self.sql, params = compiler.as_sql()
        self.params = tuple(params)
        self.has_where = " WHERE " in self.sql
        # `whole`: the queryset's own order and slice are kept (DefaultTablesPage).
        assert whole or (" ORDER BY " not in self.sql and " LIMIT " not in self.sql), self.sql
        self.names = names
        self.alias = queryset.db
        connection = connections[queryset.db]
        # The backend's converters are bound to the compiling thread's connection; they only
        # read its settings (time zone), the same for every thread (as in audit/reads/prepared.py).
        converters = compiler.get_converters([column[0] for column in compiler.select])
        self.converters = [
            (position, [_fast(function) for function in functions], expression)
            for position, (functions, expression) in converters.items()
        ]
        model = queryset.model
        quote = connection.ops.quote_name
        self.table = quote(model._meta.db_table)
        self.quote = quote
        self.model = model

    def column(self, field: str) -> str:
        return f"{self.table}.{self.quote(self.model._meta.get_field(field).column)}"

    def rows(self, sql: str, params: list) -> list[dict]:
        connection = connections[self.alias]  # this thread's connection (gthread workers)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            fetched = cursor.fetchall()
        names, converters = self.names, self.converters
        if not converters:
            return [dict(zip(names, row, strict=True)) for row in fetched]
        out = []
        for row in fetched:
            row = list(row)
            for position, functions, expression in converters:
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
            out.append(dict(zip(names, row, strict=True)))
        return out


def _fast(converter: Callable) -> Callable:
    """JSONField.from_db_value with orjson (~5x faster), the same values; anything orjson
    refuses (NaN, integers over 64 bits, bad surrogates...) goes to Django's decoder. SQLite's
    datetime converter as `_fast_datetime`."""
    function = getattr(converter, "__func__", None)
    if _names(function) == _SQLITE_DATETIME:
        return _fast_datetime(converter)
    if function is not JSONField.from_db_value:
        return converter
    if converter.__self__.decoder is not None:
        return converter

    def from_db_value(value, expression, connection):
        if type(value) is str:
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        return converter(value, expression, connection)

    return from_db_value


# SQLite's DateTimeField converter, named rather than imported: importing the SQLite backend's
# operations module before its base (a PostgreSQL deployment never imports either) is circular.
_SQLITE_DATETIME = (
    "django.db.backends.sqlite3.operations",
    "DatabaseOperations.convert_datetimefield_value",
)


def _names(function: Any) -> tuple[str, str] | None:
    if function is None:
        return None
    return getattr(function, "__module__", ""), getattr(function, "__qualname__", "")


def _fast_datetime(converter: Callable) -> Callable:
    """SQLite's DateTimeField converter for the values its driver already parsed (naive
    datetimes): made aware in the connection's time zone as `timezone.make_aware` does, without
    reading `settings.USE_TZ` per value (the lazy settings object cost ~1.5 us a read, four
    columns a finding row). `connection.timezone` is None exactly when USE_TZ is off (Django
    resets it when the setting changes). Anything else goes to Django's converter."""
    owner = converter.__self__.connection

    def from_db_value(value, expression, connection):
        if type(value) is datetime and value.tzinfo is None:
            zone = owner.timezone
            return value if zone is None else value.replace(tzinfo=zone)
        return converter(value, expression, connection)

    return from_db_value


class RowSource:
    """`build()` -> a `.values(*names)` queryset, compiled on first use per database alias."""

    def __init__(self, build: Callable[[], Any], names: tuple[str, ...]):
        self._build = build
        self._names = names
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def compiled(self) -> _Compiled:
        found = self._compiled.get("default")
        if found is None:
            with self._lock:
                found = self._compiled.get("default") or _Compiled(self._build(), self._names)
                self._compiled["default"] = found
        return found

    def query(self, conditions: list[tuple[str, list]]) -> RowQuery:
        """`conditions`: (field, operator, values) as `sql_condition` takes them."""
        compiled = self.compiled()
        where = [sql_condition(compiled, *condition) for condition in conditions]
        return RowQuery(compiled, where)


def sql_condition(
    compiled: _Compiled, field: str | tuple[str, ...], op: str, value: Any = None
) -> tuple[str, list]:
    if isinstance(field, tuple):  # any of the fields: (a = %s OR b = %s)
        parts = [sql_condition(compiled, one, op, value) for one in field]
        return "(" + " OR ".join(text for text, _ in parts) + ")", [
            p for _, ps in parts for p in ps
        ]
    column = compiled.column(field)
    if op == "icontains":  # as the ORM's icontains: UPPER on both sides, LIKE escaped
        escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"UPPER({column}) LIKE UPPER(%s) ESCAPE '\\'", [f"%{escaped}%"]
    if op == "in":
        values = list(dict.fromkeys(value))  # the ORM's In lookup drops repeats too
        return f"{column} IN ({', '.join(['%s'] * len(values))})", values
    if op == "isnull":
        return f"{column} IS {'' if value else 'NOT '}NULL", []
    return f"{column} {op} %s", [value]


class RowQuery:
    """What DRF's CursorPagination asks of a queryset, over the compiled SQL."""

    def __init__(self, compiled: _Compiled, where: list[tuple[str, list]], ordering=()):
        self._compiled = compiled
        self._where = where
        self._ordering = ordering

    def order_by(self, *fields: str) -> RowQuery:
        return RowQuery(self._compiled, self._where, fields)

    def filter(self, **kwargs: Any) -> RowQuery:
        ((lookup, value),) = kwargs.items()  # the cursor: <column>__lt or <column>__gt
        field, op = lookup.rsplit("__", 1)
        condition = sql_condition(self._compiled, field, {"lt": "<", "gt": ">"}[op], value)
        return RowQuery(self._compiled, [*self._where, condition], self._ordering)

    def __getitem__(self, window: slice) -> list[dict]:
        assert isinstance(window, slice) and window.step is None
        compiled = self._compiled
        sql, params = compiled.sql, list(compiled.params)
        if self._where:
            sql += " AND " if compiled.has_where else " WHERE "
            sql += " AND ".join(f"({text})" for text, _ in self._where)
            for _, values in self._where:
                params += values
        if self._ordering:
            order = [
                compiled.column(f.lstrip("-")) + (" DESC" if f.startswith("-") else " ASC")
                for f in self._ordering
            ]
            sql += " ORDER BY " + ", ".join(order)
        low, high = window.start or 0, window.stop
        if high is not None:
            sql += f" LIMIT {int(high) - int(low)}"
        if low:
            sql += f" OFFSET {int(low)}"
        return compiled.rows(sql, params)


# --------------------------------------------------------------------------- the two lists

# name -> (field, operator) for filters that are one comparison of their cleaned value.
COMMIT_CONDITIONS = {
    "operation": ("operation", "in"),
    "min_version": ("version", ">="),
    "max_version": ("version", "<="),
    "since": ("timestamp", ">="),
    "until": ("timestamp", "<="),
    "user": (("user_name", "user_id"), "="),
    "engine": ("engine", "in"),
    "job": ("job_id", "="),
    "user_metadata": ("user_metadata", "icontains"),
}
FINDING_CONDITIONS = {
    "table": ("table_id", "="),
    "kind": ("kind", "in"),
    "severity": ("severity", "in"),
    "confirmed": ("confirmed", "="),
    "status": ("status", "="),
    "min_version": ("version", ">="),
    "max_version": ("version", "<="),
}


def commit_conditions(table_id: int, params: dict[str, Any], bounds) -> list[tuple]:
    """CommitFilter's conditions (`bounds`: queries.commit_time_bounds, for since/until)."""
    conditions: list[tuple] = [("table", "=", table_id)]
    for name, value in params.items():
        if name == "has_concurrent":
            # concurrent_count > 0 matches the partial index audit_commit_concurrent.
            conditions.append(("concurrent_count", ">" if value else "=", 0))
        else:
            conditions.append((*COMMIT_CONDITIONS[name], value))
    if bounds is not None:
        conditions += [("version", ">=", bounds[0]), ("version", "<=", bounds[1])]
    return conditions


def finding_conditions(params: dict[str, Any]) -> list[tuple]:
    """FindingFilter's conditions."""
    conditions: list[tuple] = []
    for name, value in params.items():
        if name == "min_severity":
            rank = Severity(value).rank
            conditions.append(
                ("severity", "in", [str(s) for s in SEVERITY_ORDER if s.rank >= rank])
            )
        elif name == "acknowledged":
            conditions.append(("acknowledged_at", "isnull", not value))
        else:
            conditions.append((*FINDING_CONDITIONS[name], value))
    return conditions


def values_source(model: type[Model], names: tuple[str, ...]) -> RowSource:
    """`model.objects.values(*names)` as a RowSource (conditions are added per request)."""
    return RowSource(lambda: model.objects.order_by().values(*names), names)


# The filters' validation and the rows' SQL, built once per process.
_COMMIT_PARAMS = ListParams(CommitFilter)
_COMMIT_ROWS = values_source(Commit, COMMIT_LIST_FIELDS)
_FINDING_PARAMS = ListParams(FindingFilter)
_FINDING_ROWS = values_source(Finding, FINDING_LIST_FIELDS)


def commits(query_params, table_id: int) -> RowQuery:
    """The rows CommitFilter selects of a table's commits (a 400 for a bad filter)."""
    params = _COMMIT_PARAMS.clean(query_params)
    bounds = None
    if "since" in params or "until" in params:
        bounds = queries.commit_time_bounds(table_id, params.get("since"), params.get("until"))
    return _COMMIT_ROWS.query(commit_conditions(table_id, params, bounds))


def finding_params(query_params) -> dict[str, Any]:
    """FindingFilter's cleaned values of the filters given (a 400 for a bad filter)."""
    return _FINDING_PARAMS.clean(query_params)


def findings(query_params, visible: list[int] | None = None) -> RowQuery:
    """The rows FindingFilter selects (a 400 for a bad filter) of the tables `visible` (ids;
    None: every table). The view answers 404 first for a `table` filter outside them."""
    conditions = finding_conditions(_FINDING_PARAMS.clean(query_params))
    if visible is not None:
        conditions.append(("table_id", "in", visible or [-1]))  # "IN ()" is not SQL
    return _FINDING_ROWS.query(conditions)


# --------------------------------------------------------------------------- the tables list

_HEALTH_NAMES = (
    "version", "num_files", "small_files", "small_file_ratio", "vacuumable_bytes",
    "checkpoint_lag",
)  # fmt: skip
# What TableSerializer reads of a table, as `.values()` names: its columns and annotations.
TABLE_ROW_VALUES = (
    *(f for f in TABLE_LIST_COLUMNS if not f.startswith("health__")),
    *(f"{prefix}_{severity}" for prefix in ("open", "attention") for severity in SEVERITY_ORDER),
    "health__id",
    *(f"health__{name}" for name in _HEALTH_NAMES),
)


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


class DefaultTablesPage:
    """The tables list without query parameters (name, id order; first page): its
    `.values(*TABLE_ROW_VALUES)` query with the six correlated counts, compiled once per number
    of the reader's projects and run with their ids; the rows the ORM's queryset gives (same
    SQL, same converters). Building and compiling that queryset was about half of a cold
    tables list's CPU; it is cold on a live lake (every stored commit moves its generation).
    `page(project_ids, size)` -> the rows, or None when the page is not the whole list (more
    than `size` tables, or more projects than placeholders): the caller paginates as before."""

    def __init__(self) -> None:
        self._compiled: dict[tuple[int | None, int, tuple], tuple[_Compiled, list[int]]] = {}
        self._lock = threading.Lock()

    def page(
        self,
        project_ids: frozenset[int] | None,
        size: int,
        shape: tuple = (),
        narrow: Callable[[Any], Any] | None = None,
    ) -> list[dict] | None:
        """`shape` names what `narrow(queryset)` does to the list (an ordering, a status
        filter: constants of the SQL, compiled once per shape); `narrow` is called only to
        compile it."""
        ids = None if project_ids is None else sorted(project_ids)
        if ids is not None and not ids:
            return []  # no project: the ORM's `__in=[]` matches nothing
        if ids is not None and len(ids) > len(PLACEHOLDERS):
            return None
        key = (None if ids is None else len(ids), size, shape)
        entry = self._compiled.get(key)
        if entry is None:
            entry = self._compile(ids, size, narrow)
            with self._lock:
                self._compiled[key] = entry
        compiled, positions = entry
        params = _substitute(compiled.params, positions, tuple(ids or ()))
        rows = compiled.rows(compiled.sql, params)
        return rows if len(rows) <= size else None

    @staticmethod
    def _compile(
        ids: list[int] | None, size: int, narrow: Callable[[Any], Any] | None
    ) -> tuple[_Compiled, list[int]]:
        listed = queries.tables_with_counts().order_by("name", "id")
        if narrow is not None:
            listed = narrow(listed)
        arity = 0
        if ids is not None:
            arity = len(ids)
            listed = listed.filter(project_id__in=PLACEHOLDERS[:arity])
        # One row past the page: a list that fits is counted by this read (FleetPaginator).
        listed = listed.values(*TABLE_ROW_VALUES)[: size + 1]
        compiled = _Compiled(listed, TABLE_ROW_VALUES, whole=True)
        return compiled, _positions(compiled.params, arity)


default_tables_page = DefaultTablesPage()
