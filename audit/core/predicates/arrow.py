"""Predicates as pyarrow.compute expressions, to evaluate them on a data file."""

from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates.comparisons import (
    BINARY_OPS,
    ColumnRef,
    Comparison,
    as_comparison,
    column_side,
    conjuncts,
    disjuncts,
    unparen,
)
from audit.core.predicates.parsing import expression_of

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.compute


class _Unsupported(Exception):
    pass


def to_arrow_expression(
    pred: Predicate | None, schema: pyarrow.Schema
) -> pyarrow.compute.Expression | None:
    """The predicate as a pyarrow.compute expression over `schema`; None if unsupported.

    Columns are matched case-insensitively; literals are cast to the field's type. Casts on
    columns are looked through (the literal is cast to the column's type instead).
    """
    import pyarrow as pa

    expression = expression_of(pred)
    if expression is None:
        return None
    fields = {field.name.lower(): field for field in schema}
    try:
        return _arrow(expression, fields)
    except (_Unsupported, pa.ArrowException, TypeError, ValueError, ArithmeticError):
        return None


def _arrow(node: exp.Expression, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    node = unparen(node)
    if isinstance(node, exp.And):
        terms = [_arrow(t, fields) for t in conjuncts(node)]
        return functools.reduce(lambda a, b: a & b, terms)
    if isinstance(node, exp.Or):
        terms = [_arrow(t, fields) for t in disjuncts(node)]
        return functools.reduce(lambda a, b: a | b, terms)
    if isinstance(node, exp.Not):
        return ~_arrow(node.this, fields)
    if isinstance(node, exp.Boolean):
        return pc.scalar(bool(node.this))
    if type(node) in BINARY_OPS and type(node) is not exp.NullSafeEQ:
        left, right = column_side(node.this), column_side(node.expression)
        if left is not None and right is not None:
            return _arrow_compare(
                BINARY_OPS[type(node)],
                _arrow_field(left, fields),
                _arrow_field(right, fields),
            )
    comparison = as_comparison(node)
    if comparison is not None:
        return _arrow_comparison(comparison, fields)
    column = column_side(node)
    if isinstance(node, exp.Column) and column is not None:
        field = fields.get(column.name)
        if field is not None and str(field.type) == "bool":
            return pc.field(field.name)
    raise _Unsupported(type(node).__name__)


def _arrow_field(column: ColumnRef, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    field = fields.get(column.name)
    if field is None:
        raise _Unsupported(f"no column {column.name}")
    return pc.field(field.name)


def _arrow_compare(op: str, left: Any, right: Any) -> Any:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _arrow_comparison(comparison: Comparison, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    field = fields.get(comparison.column.name)
    if field is None:
        raise _Unsupported(f"no column {comparison.column.name}")
    target = pc.field(field.name)
    op = comparison.op
    if op == "is_null":
        return target.is_null()
    if op in ("like", "starts_with"):
        pattern = str(comparison.values[0])
        found = (
            pc.starts_with(target, pattern=pattern)
            if op == "starts_with"
            else pc.match_like(target, pattern=pattern)
        )
        return ~found if comparison.negated else found
    if op == "<=>" or any(v is None for v in comparison.values) and op != "in":
        raise _Unsupported("comparison with NULL")
    values = [_arrow_scalar(v, field.type) for v in comparison.values if v is not None]
    if op == "in":
        import pyarrow as pa

        return target.isin(pa.array([v.as_py() for v in values], type=field.type))
    if op == "between":
        return (target >= pc.scalar(values[0])) & (target <= pc.scalar(values[1]))
    return _arrow_compare(op, target, pc.scalar(values[0]))


def _arrow_scalar(value: Any, arrow_type: Any) -> Any:
    import pyarrow as pa

    if isinstance(value, Decimal):
        if pa.types.is_integer(arrow_type):
            if value != value.to_integral_value():
                raise _Unsupported("fractional literal for an integer column")
            value = int(value)
        elif pa.types.is_floating(arrow_type):
            value = float(value)
    if isinstance(value, str) and pa.types.is_timestamp(arrow_type):
        moment = dt.datetime.fromisoformat(value.strip())
        if (moment.tzinfo is None) != (arrow_type.tz is None):
            raise _Unsupported("timestamp literal and column differ in time zone awareness")
        return pa.scalar(moment, type=arrow_type)
    return pa.scalar(value).cast(arrow_type)
