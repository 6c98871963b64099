"""ORM queries compiled once per process and run again with other values.

Building and compiling even a one-row ORM query (`Table.objects.get(pk=...)`, the user a
session names) costs ~0.2-0.4 ms of Python per request, far more than the database's answer.
A `Prepared` query is a queryset built once with placeholder arguments: its SQL, the position
of each placeholder among its parameters and its columns' converters are kept, and each call
substitutes the real values, runs the SQL and builds the model instances the way the ORM's
`ModelIterable` does (same `from_db`, same converters, annotations set as attributes). So the
rows are those the queryset would give, for querysets of one model without `select_related`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet

# Argument k is built into the queryset as PLACEHOLDERS[k] and found again by value among the
# compiled parameters: values no query here uses as a constant, inside a 32-bit integer's range
# (Django compiles an out-of-range lookup on PostgreSQL to "matches nothing", not SQL).
PLACEHOLDERS = tuple(-2_100_000_000 - k for k in range(8))


class Prepared:
    """`build(*placeholders)` -> a queryset of one model, compiled on first use (per process
    and per database alias); `Prepared(...)(*values)` -> its instances for those values.

    Arguments must reach the SQL unchanged (integers, strings, or values already in the form
    the database stores, e.g. `field.get_db_prep_value(...)`): a placeholder the compiler
    transformed is refused when the query is compiled."""

    def __init__(self, build: Callable[..., QuerySet], arity: int = 1):
        self._build = build
        self._arity = arity
        self._compiled: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def __call__(self, *values: Any) -> list[Model]:
        assert len(values) == self._arity
        queryset = None
        compiled = self._compiled.get(self._alias())
        if compiled is None:
            queryset = self._build(*PLACEHOLDERS[: self._arity])
            compiled = self._compile(queryset)
        sql, params, positions, converters, model, init_list, annotations = compiled
        params = _substitute(params, positions, values)
        connection = connections[self._alias()]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [_instance(row, converters, connection, model, init_list, annotations)
                for row in rows]  # fmt: skip

    def _alias(self) -> str:
        return "default"

    def _compile(self, queryset: QuerySet) -> tuple:
        compiler = queryset.query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        positions = _positions(params, self._arity)
        select, klass_info = compiler.select, compiler.klass_info
        assert klass_info and not klass_info.get("related_klass_infos"), "one model only"
        start, end = min(klass_info["select_fields"]), max(klass_info["select_fields"]) + 1
        init_list = [column[0].target.attname for column in select[start:end]]
        # The backend's converters are bound to the compiling thread's connection; they only
        # read its settings (time zone), the same for every thread of the process.
        converters = compiler.get_converters([column[0] for column in select])
        compiled = (
            sql, tuple(params), positions, converters, klass_info["model"],
            (start, end, init_list), dict(compiler.annotation_col_map or {}),
        )  # fmt: skip
        with self._lock:
            self._compiled[queryset.db] = compiled
        return compiled


_SQL: dict[Any, str] = {}


def fetch_sql(name: Any, build: Callable[[], str], params: list) -> list[tuple]:
    """Rows of the SQL `build()` returns, built once per process under `name` (plain SQL for
    what the ORM cannot say cheaply; `Prepared` for what it can)."""
    sql = _SQL.get(name)
    if sql is None:
        sql = _SQL[name] = build()
    with connections["default"].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class PreparedRows:
    """The raw rows (as the driver returns them: no converters) of a `values_list` queryset
    `build(*placeholders)`, compiled on first use; `PreparedRows(...)(*values)`."""

    def __init__(self, build: Callable[..., QuerySet], arity: int):
        self._build = build
        self._arity = arity
        self._compiled: tuple[str, tuple, list[int]] | None = None

    def __call__(self, *values: Any) -> list[tuple]:
        assert len(values) == self._arity
        if self._compiled is None:
            sql, params = self._build(*PLACEHOLDERS[: self._arity]).query.sql_with_params()
            self._compiled = (sql, tuple(params), _positions(params, self._arity))
        sql, template, positions = self._compiled
        params = _substitute(template, positions, values)
        with connections["default"].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()


def _substitute(template: tuple, positions: list[int], values: tuple) -> list:
    params = list(template)
    for position, value in zip(positions, values, strict=True):
        # The compiled parameter's type (int, or psycopg's Int4 / Int8 for the column's type).
        params[position] = type(template[position])(value) if value is not None else None
    return params


def _positions(params: tuple | list, arity: int) -> list[int]:
    """Where each placeholder argument sits among a compiled query's parameters."""
    positions = []
    for placeholder in PLACEHOLDERS[:arity]:
        # psycopg's backend wraps integers (Int4, Int8: int subclasses); kept when substituting.
        found = [i for i, p in enumerate(params) if isinstance(p, int) and p == placeholder]
        assert len(found) == 1, f"argument {placeholder} not in the SQL once: {params}"
        positions.append(found[0])
    return positions


def _instance(row, converters, connection, model, init_list, annotations) -> Model:
    if converters:
        row = list(row)
        for position, (functions, expression) in converters.items():
            value = row[position]
            for function in functions:
                value = function(value, expression, connection)
            row[position] = value
    start, end, names = init_list
    obj = model.from_db(connection.alias, names, row[start:end])
    for name, position in annotations.items():
        setattr(obj, name, row[position])
    return obj


class PreparedIn:
    """`build(*ids)` -> a `values_list` queryset filtering a column `IN` the ids (a reader's
    projects), compiled once per number of ids (up to len(PLACEHOLDERS)); more ids than that
    run the ORM's query. The cold overview and findings pages of a member of a few projects
    compiled these per request, which cost more than the database's answer."""

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        self._by_arity: dict[int, PreparedRows] = {}

    def __call__(self, ids: list[int]) -> list[tuple]:
        ids = sorted(set(ids))
        if not ids or len(ids) > len(PLACEHOLDERS):
            return list(self._build(*ids))
        prepared = self._by_arity.get(len(ids))
        if prepared is None:
            # Bound to this arity: `build` receives exactly len(ids) placeholders.
            prepared = self._by_arity[len(ids)] = PreparedRows(self._build, len(ids))
        return prepared(*ids)


class PreparedModels:
    """`build(key, *placeholders)` -> a queryset of model instances (select_related and
    annotations allowed, its slice part of the queryset), compiled once per `key` (hashable)
    and number of values; `PreparedModels(...)(key, *values)` -> the instances the queryset would
    give for those values, built as the ORM's `ModelIterable` builds them (same `from_db`,
    converters, related populators, annotations). For a page whose query shape has a few
    variants (a sort, a number of projects, a page slice): compiling it was most of the
    query's cost on a cold page."""

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        self._compiled: dict[tuple, tuple] = {}
        self._lock = threading.Lock()

    def __call__(self, key: tuple, *values: Any) -> list[Model]:
        full_key = (len(values), key)
        compiled = self._compiled.get(full_key)
        if compiled is None:
            queryset = self._build(key, *PLACEHOLDERS[: len(values)])
            compiled = self._compile(queryset, len(values))
            with self._lock:
                if len(self._compiled) >= 256:
                    self._compiled.clear()  # a bound against odd page numbers, not a policy
                self._compiled[full_key] = compiled
        sql, params, positions, compiler, model, init_list, populators, annotations = compiled
        connection = connections["default"]
        with connection.cursor() as cursor:
            cursor.execute(sql, _substitute(params, positions, values))
            rows = cursor.fetchall()
        start, end = init_list[0], init_list[1]
        out = []
        for row in _converted(rows, compiler):
            obj = model.from_db(connection.alias, init_list[2], row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, position in annotations:
                setattr(obj, name, row[position])
            out.append(obj)
        return out

    def _compile(self, queryset: QuerySet, arity: int) -> tuple:
        from django.db.models.query import get_related_populators

        assert not queryset._known_related_objects, "not a related manager's queryset"
        compiler = queryset.query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        select, klass_info = compiler.select, compiler.klass_info
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = (start, end, [column[0].target.attname for column in select[start:end]])
        return (
            sql, tuple(params), _positions(params, arity), compiler, klass_info["model"],
            init_list, get_related_populators(klass_info, select, queryset.db),
            tuple((compiler.annotation_col_map or {}).items()),
        )  # fmt: skip


class PreparedValues:
    """`build(key, *placeholders)` -> a `.values(*names)` queryset (its slice part of it),
    compiled once per `key` and number of values; `(key, *values)` -> its dicts (converters
    applied, as the ORM's `ValuesIterable`); `.count(key, *values)` -> the count the
    queryset without its slice gives, by the COUNT query the ORM ran for it once (captured)."""

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        self._rows: dict[tuple, tuple] = {}
        self._counts: dict[tuple, tuple] = {}

    def __call__(self, key: tuple, *values: Any) -> list[dict]:
        full_key = (len(values), key)
        compiled = self._rows.get(full_key)
        if compiled is None:
            queryset = self._build(key, *PLACEHOLDERS[: len(values)])
            compiler = queryset.query.get_compiler(queryset.db)
            sql, params = compiler.as_sql()
            query = queryset.query
            names = [*query.extra_select, *query.values_select, *query.annotation_select]
            compiled = (sql, tuple(params), _positions(params, len(values)), compiler, names)
            self._rows[_bounded(self._rows, full_key)] = compiled
        sql, params, positions, compiler, names = compiled
        with connections["default"].cursor() as cursor:
            cursor.execute(sql, _substitute(params, positions, values))
            rows = cursor.fetchall()
        return [dict(zip(names, row, strict=True)) for row in _converted(rows, compiler)]

    def count(self, key: tuple, *values: Any) -> int:
        full_key = (len(values), key)
        compiled = self._counts.get(full_key)
        if compiled is None:
            queryset = self._build(key, *PLACEHOLDERS[: len(values)])
            captured: list[tuple] = []

            def capture(execute, sql, params, many, context):
                captured.append((sql, tuple(params or ())))
                return execute(sql, params, many, context)

            with connections["default"].execute_wrapper(capture):
                queryset.count()
            assert len(captured) == 1, captured
            sql, params = captured[0]
            compiled = (sql, params, _positions(params, len(values)))
            self._counts[_bounded(self._counts, full_key)] = compiled
        sql, params, positions = compiled
        with connections["default"].cursor() as cursor:
            cursor.execute(sql, _substitute(params, positions, values))
            return cursor.fetchone()[0]


# Each compiled query's converters, by compiler (`_converted`).
_CONVERTERS: dict[int, tuple[Any, list]] = {}


def _converted(rows: list[tuple], compiler: Any) -> Any:
    """`compiler.results_iter([rows])`, the converters looked up once per compiled query: the
    ORM asks every column's field and the backend for them on each call (~0.15 ms for the
    overview's ~40 columns of Table, ~7% of the cold page)."""
    found = _CONVERTERS.get(id(compiler))
    if found is None or found[0] is not compiler:
        fields = [s[0] for s in compiler.select[0 : compiler.col_count]]
        if compiler.has_composite_fields(fields):  # none here; the ORM's own path if ever
            return compiler.results_iter([rows])
        found = (compiler, list(compiler.get_converters(fields).items()))
        if len(_CONVERTERS) >= 1024:
            _CONVERTERS.clear()  # a bound, not a policy
        _CONVERTERS[id(compiler)] = found  # the compiler held too: its id is not reused
    converters = found[1]
    if not converters:
        return rows
    return _apply(rows, converters, compiler.connection)


def _apply(rows: list[tuple], converters: list, connection: Any) -> list[list]:
    """The ORM's `apply_converters` (rows as lists, each converter given the compiling
    connection, as the compiler does)."""
    out = []
    for row in map(list, rows):
        for position, (functions, expression) in converters:
            value = row[position]
            for function in functions:
                value = function(value, expression, connection)
            row[position] = value
        out.append(row)
    return out


def _bounded(compiled: dict, key: tuple) -> tuple:
    if len(compiled) >= 512:
        compiled.clear()  # a bound against odd pages and kinds, not a policy
    return key
