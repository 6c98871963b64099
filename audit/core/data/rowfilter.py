"""Evaluate a commit's predicate on the rows of data files with a real engine (DataFusion).

The witness check (witness.py) needs "which rows of this file does `predicate` match", with SQL
semantics (NULL is not a match) and on whatever types the writers produced: deltalake's
DELETE/UPDATE/MERGE outputs hold `string_view`, Spark writes INT96 timestamps, dictionary
decimals, maps and structs. A hand-written evaluator covered a subset and failed on the rest,
so the predicate is rendered as DataFusion SQL and run over the file's columns instead.

Rendering resolves every column against the file: table qualifiers (`t.id` in a MERGE) are
dropped, `s.a` on a struct column becomes a field access, Spark's 0-based `arr[0]` becomes
DataFusion's 1-based index, column-mapping logical names become the physical names in the file,
and columns the file does not have read as NULL (added later by schema evolution).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from audit.core.errors import DeltaAuditError, one_line
from audit.core.model import Predicate

ROW_ID = "__delta_audit_row__"
_TABLE = "rows"


class Unevaluable(DeltaAuditError):
    """The predicate cannot be evaluated on this file's rows (message says why)."""


@dataclass(slots=True)
class NameTree:
    """Logical column names (lower-cased) -> physical name in the files, per struct level."""

    physical: dict[str, str] = field(default_factory=dict)
    children: dict[str, NameTree] = field(default_factory=dict)

    def physical_name(self, logical: str) -> str:
        return self.physical.get(logical.lower(), logical)


def name_tree(schema_string: str | None) -> NameTree:
    """The column-mapping names of a Delta schema (identity where there is no mapping)."""
    try:
        schema = orjson.loads(schema_string) if schema_string else {}
    except orjson.JSONDecodeError:
        return NameTree()
    return _tree_of(schema if isinstance(schema, dict) else {})


def _tree_of(struct: dict[str, Any]) -> NameTree:
    tree = NameTree()
    for f in struct.get("fields", []) or []:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        meta = f.get("metadata") if isinstance(f.get("metadata"), dict) else {}
        physical = meta.get("delta.columnMapping.physicalName")
        name = f["name"].lower()
        tree.physical[name] = physical if isinstance(physical, str) and physical else f["name"]
        kind = f.get("type")
        if isinstance(kind, dict) and kind.get("type") == "struct":
            tree.children[name] = _tree_of(kind)
    return tree


def normalise(table: pa.Table) -> pa.Table:
    """Plain types for the engine and for JSON samples: views, large and dictionary types."""
    columns = []
    for column in table.columns:
        target = _plain_type(column.type)
        if target != column.type:
            with contextlib.suppress(pa.ArrowException, ValueError, NotImplementedError):
                column = column.cast(target)
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(_plain_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(_plain_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_plain_field(t.key_field), _plain_field(t.item_field))
    if pa.types.is_struct(t):
        return pa.struct([_plain_field(t.field(i)) for i in range(t.num_fields)])
    return t


def _plain_field(f: pa.Field) -> pa.Field:
    return f.with_type(_plain_type(f.type))


# --------------------------------------------------------------------------- rendering


def columns_needed(
    expression: exp.Expression, names: NameTree, file_columns: list[str]
) -> list[str]:
    """The top-level file columns the expression reads (qualifiers and struct paths resolved)."""
    by_lower = {c.lower(): c for c in file_columns}
    needed = set()
    for column in expression.find_all(exp.Column):
        parts = _parts(column)
        top = _top_level(parts, names, by_lower)
        if top is not None:
            needed.add(by_lower[top[0].lower()])
    return sorted(needed)


def _parts(column: exp.Column) -> list[str]:
    return [p.name for p in column.parts if p.name]


def _top_level(
    parts: list[str], names: NameTree, by_lower: dict[str, str]
) -> tuple[str, list[str]] | None:
    """(physical top-level column, remaining logical path), dropping leading table qualifiers."""
    for start in range(len(parts)):
        physical = names.physical_name(parts[start])
        if physical.lower() in by_lower:
            return physical, parts[start + 1 :]
    return None


def render(expression: exp.Expression, names: NameTree, schema: pa.Schema) -> str:
    """DataFusion SQL for `expression` over a table with `schema` (physical column names)."""
    by_lower = {n.lower(): n for n in schema.names}
    tree = expression.copy()

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Bracket):
            return _rewrite_bracket(node, names, schema, by_lower)
        if isinstance(node, exp.Column) and not isinstance(node.parent, exp.Bracket | exp.Dot):
            return _resolve(_parts(node), names, schema, by_lower)
        return node

    tree = tree.transform(rewrite)
    try:
        return tree.sql(dialect="postgres")
    except Exception as err:  # sqlglot raising on an odd tree: untrusted text
        raise Unevaluable(f"the predicate cannot be rendered as SQL: {err}") from None


def _resolve(
    parts: list[str], names: NameTree, schema: pa.Schema, by_lower: dict[str, str]
) -> exp.Expression:
    top = _top_level(parts, names, by_lower)
    if top is None:
        return exp.Null()  # not in this file: a column added later reads as NULL
    physical, path = top
    name = by_lower[physical.lower()]
    node: exp.Expression = exp.column(name, quoted=True)
    arrow_type = schema.field(name).type
    subtree = names.children.get(parts[len(parts) - len(path) - 1].lower(), NameTree())
    for step in path:
        if not pa.types.is_struct(arrow_type):
            raise Unevaluable(f"cannot read field {step!r} of a non-struct column")
        wanted = subtree.physical_name(step).lower()
        fields = {
            arrow_type.field(i).name.lower(): arrow_type.field(i)
            for i in range(arrow_type.num_fields)
        }
        child = fields.get(wanted)
        if child is None:
            return exp.Null()
        node = _bracket(node, [exp.Literal.string(child.name)])
        arrow_type = child.type
        subtree = subtree.children.get(step.lower(), NameTree())
    return node


def _rewrite_bracket(
    node: exp.Bracket, names: NameTree, schema: pa.Schema, by_lower: dict[str, str]
) -> exp.Expression:
    inner = node.this
    if isinstance(inner, exp.Column):
        inner = _resolve(_parts(inner), names, schema, by_lower)
    target = _type_of(inner, schema)
    keys = list(node.expressions)
    offset = int(node.args.get("offset") or 0)
    if target is not None and pa.types.is_list(target) and len(keys) == 1:
        # Spark indexes arrays from 0 (`arr[0]`; element_at from 1), DataFusion from 1.
        keys = [exp.Add(this=keys[0].copy(), expression=exp.Literal.number(1 - offset))]
    if target is not None and pa.types.is_map(target) and len(keys) == 1:
        key_type = _SQL_INTEGER_TYPES.get(target.key_type)
        if key_type is not None:  # DataFusion compares map keys only with their own type
            keys = [exp.cast(keys[0].copy(), key_type)]
    return _bracket(inner, keys)


_SQL_INTEGER_TYPES = {
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
}


def _bracket(this: exp.Expression, keys: list[exp.Expression]) -> exp.Bracket:
    # offset=1 tells sqlglot the keys are already in the target's 1-based form (it would
    # otherwise shift integer keys again, map keys included).
    return exp.Bracket(this=this, expressions=keys, offset=1)


def _type_of(node: exp.Expression, schema: pa.Schema) -> pa.DataType | None:
    if isinstance(node, exp.Column) and node.name in schema.names:
        return schema.field(node.name).type
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        parent = _type_of(node.this, schema)
        key = node.expressions[0]
        if parent is not None and pa.types.is_struct(parent) and key.is_string:
            index = parent.get_field_index(key.name)
            return parent.field(index).type if index >= 0 else None
    return None


# --------------------------------------------------------------------------- evaluation


def matching_rows(table: pa.Table, sql: str) -> pa.Array:
    """Indices (int64) of the rows of `table` where `sql` is TRUE, in row order."""
    if table.num_rows == 0:
        return pa.array([], pa.int64())
    indexed = table.append_column(ROW_ID, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    ctx = _context()
    try:
        ctx.register_record_batches(_TABLE, [indexed.to_batches()])
        try:
            result = ctx.sql(
                f'SELECT "{ROW_ID}" FROM {_TABLE} WHERE ({sql}) ORDER BY "{ROW_ID}"'
            ).to_arrow_table()
        finally:
            ctx.deregister_table(_TABLE)
    except Exception as err:  # DataFusion raises plain Exception subclasses for plan errors
        raise Unevaluable(
            f"the predicate cannot be evaluated on the data: {one_line(err, limit=300)}"
        ) from None
    column = result.column(ROW_ID)
    return column.combine_chunks() if column.num_chunks else pa.array([], pa.int64())


_LOCAL = threading.local()


def _context() -> Any:
    """One DataFusion session per thread, reused: creating one costs more than a small file."""
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        import datafusion

        # Decimal literals stay exact (`price = 12.30` on a decimal(10,2) column), as in Spark.
        # One file's columns are small: a single partition avoids repartitioning the rows.
        config = (
            datafusion.SessionConfig()
            .set("datafusion.sql_parser.parse_float_as_decimal", "true")
            .with_target_partitions(1)
        )
        ctx = _LOCAL.ctx = datafusion.SessionContext(config)
    return ctx


def expression_for(predicate: Predicate) -> exp.Expression:
    """The parsed predicate; the raw text when our parser gave up (DataFusion may still read it)."""
    from audit.core import predicates

    expression = predicates.expression_of(predicate)
    if expression is not None:
        return expression
    import sqlglot

    try:
        parsed = sqlglot.parse_one(predicate.raw, read="postgres", into=exp.Condition)
    except Exception:
        raise Unevaluable(
            f"the predicate cannot be evaluated on the data: {predicate.error or 'unparsable'}"
        ) from None
    return parsed


def typed_partition_column(value: str | None, arrow_type: pa.DataType, rows: int) -> pa.Array:
    """A partition value (Delta's text form) as a column of its type; text if it does not cast."""
    column = pa.array([value] * rows, pa.string())
    for attempt in _casts(arrow_type):
        try:
            return attempt(column)
        except (pa.ArrowException, ValueError):
            continue
    return column


def _casts(arrow_type: pa.DataType) -> list[Any]:
    casts = [lambda c: c.cast(arrow_type)]
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        # Delta writes `2021-01-01 00:00:00` (UTC, no zone) as well as ISO-8601 with `Z`.
        naive = pa.timestamp(arrow_type.unit)
        casts.append(lambda c: c.cast(naive).cast(arrow_type))
        casts.append(lambda c: pc.strptime(c, "%Y-%m-%d", arrow_type.unit).cast(arrow_type))
    return casts
