"""The shapes the audit reasons about, read off the AST: conjuncts, disjuncts, and comparisons
of one column (under casts) with literals.

Everything else is "not understood" (None), which every caller treats as "may match".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp


def unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def conjuncts(expression: exp.Expression) -> list[exp.Expression]:
    """Top-level AND terms, parentheses looked through."""
    return _terms(expression, exp.And)


def disjuncts(expression: exp.Expression) -> list[exp.Expression]:
    """Top-level OR terms, parentheses looked through."""
    return _terms(expression, exp.Or)


def _terms(expression: exp.Expression, connective: type[exp.Connector]) -> list[exp.Expression]:
    # A stack, not recursion: a generated predicate may chain thousands of ANDs.
    out: list[exp.Expression] = []
    stack = [expression]
    while stack:
        node = unparen(stack.pop())
        if isinstance(node, connective):
            stack.extend((node.expression, node.this))
        else:
            out.append(node)
    return out


@dataclass(frozen=True, slots=True)
class ColumnRef:
    name: str  # lower-cased
    qualifier: str | None  # table alias as written, if any


def column_side(node: exp.Expression) -> ColumnRef | None:
    """The column under casts (`CAST(c AS T)`, `arrow_cast(c, 'T')`), if the node is one."""
    node = unparen(node)
    while True:
        if isinstance(node, exp.Cast):
            node = unparen(node.this)
        elif (
            isinstance(node, exp.Anonymous)
            and str(node.this).lower() == "arrow_cast"
            and node.expressions
        ):
            node = unparen(node.expressions[0])
        else:
            break
    if isinstance(node, exp.Column) and node.name:
        return ColumnRef(node.name.lower(), node.table or None)
    return None


_NOT_LITERAL = object()

_DATE_TYPES = {exp.DataType.Type.DATE, exp.DataType.Type.DATE32}
_STRING_TYPES = {
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.TEXT,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.NCHAR,
}


def literal_of(node: exp.Expression) -> tuple[Any, str] | object:
    """(value, hint) for a literal, hint in number/string/date/timestamp/bool/null.

    Numbers become Decimal, everything else keeps its text; casts of literals keep the
    literal and turn the cast type into the hint. Returns _NOT_LITERAL otherwise.
    """
    node = unparen(node)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this, "string"
        return _number(node.this)
    if isinstance(node, exp.Neg):
        inner = literal_of(node.this)
        if inner is not _NOT_LITERAL and inner[1] == "number":  # type: ignore[index]
            return -inner[0], "number"  # type: ignore[index]
        return _NOT_LITERAL
    if isinstance(node, exp.Null):
        return None, "null"
    if isinstance(node, exp.Boolean):
        return bool(node.this), "bool"
    if isinstance(node, exp.Cast):
        inner = literal_of(node.this)
        if inner is _NOT_LITERAL:
            return _NOT_LITERAL
        return inner[0], _hint_of_type(node.args.get("to"), inner[1])  # type: ignore[index]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "arrow_cast":
        return literal_of(node.expressions[0]) if node.expressions else _NOT_LITERAL
    return _NOT_LITERAL


def _number(text: str) -> tuple[Decimal, str] | object:
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return _NOT_LITERAL
    return (value, "number") if value.is_finite() else _NOT_LITERAL


def _hint_of_type(data_type: exp.DataType | None, fallback: str) -> str:
    if not isinstance(data_type, exp.DataType):
        return fallback
    kind = data_type.this
    if kind in _DATE_TYPES:
        return "date"
    if kind in exp.DataType.TEMPORAL_TYPES:
        return "timestamp"
    if kind in exp.DataType.NUMERIC_TYPES:
        return "number"
    if kind == exp.DataType.Type.BOOLEAN:
        return "bool"
    if kind in _STRING_TYPES:
        return "string"
    return fallback


_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
BINARY_OPS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}


@dataclass(frozen=True, slots=True)
class Comparison:
    """`column op literal(s)`: op in = != < <= > >= <=> in is_null between like starts_with."""

    column: ColumnRef
    op: str
    values: tuple[Any, ...]
    hint: str | None  # kind of the (first non-null) literal
    negated: bool = False  # NOT LIKE


def as_comparison(node: exp.Expression) -> Comparison | None:
    node = unparen(node)
    op = BINARY_OPS.get(type(node))
    if op is not None:
        column, other = column_side(node.this), node.expression
        if column is None:
            column, other, op = column_side(node.expression), node.this, _FLIPPED[op]
        return _comparison(column, op, [other])
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            return None
        return _comparison(column_side(node.this), "in", node.expressions)
    if isinstance(node, exp.Is) and isinstance(unparen(node.expression), exp.Null):
        return _comparison(column_side(node.this), "is_null", [])
    if isinstance(node, exp.Between):
        return _comparison(
            column_side(node.this), "between", [node.args.get("low"), node.args.get("high")]
        )
    if isinstance(node, exp.Like):
        found = _comparison(column_side(node.this), "like", [node.expression])
        if found and node.args.get("negate"):
            found = replace(found, negated=True)
        return found if found and isinstance(found.values[0], str) else None
    if isinstance(node, exp.StartsWith):
        found = _comparison(column_side(node.this), "starts_with", [node.expression])
        return found if found and isinstance(found.values[0], str) else None
    return None


def _comparison(
    column: ColumnRef | None, op: str, operands: Iterable[exp.Expression | None]
) -> Comparison | None:
    if column is None:
        return None
    values: list[Any] = []
    hint: str | None = None
    for operand in operands:
        found = literal_of(operand) if operand is not None else _NOT_LITERAL
        if found is _NOT_LITERAL:
            return None
        value, kind = found  # type: ignore[misc]
        values.append(value)
        if hint is None and kind != "null":
            hint = kind
    return Comparison(column, op, tuple(values), hint)
