"""Lists by SQL compiled once per process (the cold path: the first request after a table
changed), built from the declared reads (audit/reads/declared/lists.py).

- `RowQuery` is the part of a queryset that DRF's `CursorPagination` uses (`order_by`, a
  `filter` on the cursor column, a slice): the pagination, its cursors and links stay DRF's.
  Its SQL is the ORM's `.values(...)` query compiled once per process, with the filters'
  conditions added as plain SQL, and the ORM's converters applied to the rows (a JSON column is
  decoded by orjson, falling back to Django's own decoder for anything orjson refuses).
- `DefaultTablesPage`: the tables list of a common shape, compiled once per shape.

The old path (FilterSet + ORM) is kept in the tests (tests/app/api/list_reference.py); the
differential test (tests/app/api/test_lists_equal_their_orm_reference.py) compares the two byte
for byte.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
from django.db import connections
from django.db.models import JSONField, Model

from audit.reads import queries
from audit.reads.prepared import PLACEHOLDERS, _positions, _substitute

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
        self.vendor = connection.vendor

    def column(self, field: str) -> str:
        return f"{self.table}.{self.quote(self.model._meta.get_field(field).column)}"

    def text(self, field: str) -> str:
        """The column as text, as the ORM's text lookups read it (a JSON column is cast on
        PostgreSQL: `jsonb::text`; SQLite stores it as text)."""
        column = self.column(field)
        if self.vendor == "postgresql" and isinstance(self.model._meta.get_field(field), JSONField):
            return f"{column}::text"
        return column

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
        column = compiled.text(field)
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


def values_source(model: type[Model], names: tuple[str, ...]) -> RowSource:
    """`model.objects.values(*names)` as a RowSource (conditions are added per request)."""
    return RowSource(lambda: model.objects.order_by().values(*names), names)


class DefaultTablesPage:
    """The tables list without query parameters (name, id order; first page): its
    `.values(*names)` query (`audit.reads.declared.lists.TABLE_ROW_VALUES`) with the six correlated counts, compiled once per number
    of the reader's projects and run with their ids; the rows the ORM's queryset gives (same
    SQL, same converters). Building and compiling that queryset was about half of a cold
    tables list's CPU; it is cold on a live lake (every stored commit moves its generation).
    `page(project_ids, size)` -> the rows, or None when the page is not the whole list (more
    than `size` tables, or more projects than placeholders): the caller paginates as before."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
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
            entry = self._compile(self.names, ids, size, narrow)
            with self._lock:
                self._compiled[key] = entry
        compiled, positions = entry
        params = _substitute(compiled.params, positions, tuple(ids or ()))
        rows = compiled.rows(compiled.sql, params)
        return rows if len(rows) <= size else None

    @staticmethod
    def _compile(
        names: tuple[str, ...],
        ids: list[int] | None,
        size: int,
        narrow: Callable[[Any], Any] | None,
    ) -> tuple[_Compiled, list[int]]:
        listed = queries.tables_with_counts().order_by("name", "id")
        if narrow is not None:
            listed = narrow(listed)
        arity = 0
        if ids is not None:
            arity = len(ids)
            listed = listed.filter(project_id__in=PLACEHOLDERS[:arity])
        # One row past the page: a list that fits is counted by this read (FleetPaginator).
        listed = listed.values(*names)[: size + 1]
        compiled = _Compiled(listed, names, whole=True)
        return compiled, _positions(compiled.params, arity)
