"""A predicate compiled into an evaluator: given what a file says about each column, which
outcomes (TRUE, FALSE, NULL) some row of the file could produce.

Leaves are comparisons of one column with literals (`facts.py` does the value work);
AND/OR/NOT combine masks (`logic.py`). Anything not understood evaluates to ANY.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates.comparisons import (
    Comparison,
    as_comparison,
    column_side,
    conjuncts,
    disjuncts,
    unparen,
)
from audit.core.predicates.dialects import PARSE_CACHE_SIZE
from audit.core.predicates.facts import (
    BAD,
    Evaluator,
    Facts,
    Lookup,
    bounds,
    coerce,
    eq_bits,
    kind_for,
    like_prefix,
    like_regex,
    range_bits,
)
from audit.core.predicates.logic import AND, ANY, FALSE, NOT, NULL, OR, TRUE
from audit.core.predicates.parsing import expression_of
from audit.core.predicates.sql_templates import (
    SENTINEL,
    Literals,
    literal_template,
    substitute,
    template_expression,
)


def _compile_leaf(comparison: Comparison, types: dict[str, str]) -> Evaluator:
    kind = kind_for(comparison, types)
    if kind is None:
        return _constant(ANY)
    leaf = _compile_leaf_as(comparison, kind)
    if comparison.column.name in types or comparison.hint != "string" or comparison.op == "like":
        return leaf
    # Column type unknown and a string literal that also reads as a number or a timestamp
    # (`n > '10'`, `ts = '2024-01-01T10:00:00'`): the column may be either, so the file may
    # match if it matches under either reading.
    literals = [v for v in comparison.values if v is not None]
    readings = [leaf] + [
        _compile_leaf_as(comparison, other)
        for other in ("number", "timestamp")
        if literals and all(coerce(other, v) is not BAD for v in literals)
    ]
    if len(readings) == 1:
        return leaf
    return lambda lookup: functools.reduce(operator.or_, (r(lookup) for r in readings))


def _compile_leaf_as(comparison: Comparison, kind: str) -> Evaluator:
    name, op = comparison.column.name, comparison.op
    if op == "is_null":
        return lambda lookup: _null_test_bits(lookup(name))
    if op in ("like", "starts_with"):
        return _compile_like(comparison, kind)
    non_null = [v for v in comparison.values if v is not None]
    if op != "in" and len(non_null) < len(comparison.values):
        # Comparing with NULL gives NULL; `<=>` NULL is IS NULL.
        if op == "<=>":
            return lambda lookup: _null_test_bits(lookup(name))
        return _constant(NULL)
    literals = [coerce(kind, v) for v in non_null]
    if any(v is BAD for v in literals):
        return _constant(ANY)
    test = _value_test(op, literals)

    def leaf(lookup: Lookup) -> int:
        facts = lookup(name)
        if facts is None:
            return ANY
        mask = NULL if facts.nulls else 0
        if op == "<=>":
            mask = FALSE if facts.nulls else 0  # NULL <=> x is FALSE, never NULL
        if not facts.values:
            return mask
        low, high = bounds(facts, kind)
        try:
            return mask | test(low, high)
        except TypeError:  # e.g. naive vs aware timestamps
            return mask | TRUE | FALSE

    return leaf


def _value_test(op: str, literals: list[Any]) -> Callable[[Any, Any], int]:
    if op in ("=", "<=>"):
        return lambda low, high: eq_bits(low, high, literals[0])
    if op == "!=":
        return lambda low, high: NOT[eq_bits(low, high, literals[0])]
    if op == "in":

        def in_bits(low: Any, high: Any) -> int:
            bits = 0
            for value in literals:
                bits |= eq_bits(low, high, value) & TRUE
            exact_member = low is not None and low == high and low in literals
            return bits | (0 if exact_member else FALSE)

        return in_bits
    if op == "between":
        low_literal, high_literal = literals

        def between_bits(low: Any, high: Any) -> int:
            return AND[range_bits(">=", low, high, low_literal)][
                range_bits("<=", low, high, high_literal)
            ]

        return between_bits
    return lambda low, high: range_bits(op, low, high, literals[0])


def _null_test_bits(facts: Facts | None) -> int:
    if facts is None:
        return TRUE | FALSE
    return (TRUE if facts.nulls else 0) | (FALSE if facts.values else 0)


def _compile_like(comparison: Comparison, kind: str) -> Evaluator:
    if kind != "string":
        return _constant(ANY)
    pattern = str(comparison.values[0])
    if comparison.op == "starts_with":
        prefix, regex = pattern, re.compile(re.escape(pattern) + ".*", re.DOTALL)
    else:
        prefix, regex = like_prefix(pattern), like_regex(pattern)
    name, negated = comparison.column.name, comparison.negated

    def leaf(lookup: Lookup) -> int:
        facts = lookup(name)
        if facts is None:
            return ANY
        mask = NULL if facts.nulls else 0
        if not facts.values:
            return mask
        low, high = bounds(facts, "string")
        if facts.exact and isinstance(low, str):
            bits = TRUE if regex.fullmatch(low) else FALSE
        else:
            below = high is not None and high < prefix
            above = low is not None and low > prefix and not low.startswith(prefix)
            bits = FALSE if (prefix and (below or above)) else TRUE | FALSE
        return mask | (NOT[bits] if negated else bits)

    return leaf


def _constant(mask: int) -> Evaluator:
    return lambda lookup: mask


def _compile(node: exp.Expression, types: dict[str, str]) -> Evaluator:
    node = unparen(node)
    if isinstance(node, exp.And):
        return _compile_connective([_compile(t, types) for t in conjuncts(node)], AND, FALSE)
    if isinstance(node, exp.Or):
        return _compile_connective([_compile(t, types) for t in disjuncts(node)], OR, TRUE)
    if isinstance(node, exp.Not):
        inner = _compile(node.this, types)
        return lambda lookup: NOT[inner(lookup)]
    if isinstance(node, exp.Boolean):
        return _constant(TRUE if node.this else FALSE)
    if isinstance(node, exp.Null):
        return _constant(NULL)
    comparison = as_comparison(node)
    if comparison is not None:
        return _compile_leaf(comparison, types)
    column = column_side(node)
    if column is not None and isinstance(node, exp.Column):  # a boolean column on its own
        return _compile_leaf(Comparison(column, "=", (True,), "bool"), types)
    return _constant(ANY)


def _compile_connective(
    children: list[Evaluator], table: list[list[int]], decisive: int
) -> Evaluator:
    def evaluate(lookup: Lookup) -> int:
        mask = TRUE if decisive == FALSE else FALSE  # the identity of AND / OR
        for child in children:
            mask = table[mask][child(lookup)]
            if mask == decisive:
                break
        return mask

    return evaluate


def types_key(types: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Column types as a hashable cache key (names lower-cased, as the AST has them)."""
    return tuple(sorted((str(k).lower(), str(v)) for k, v in (types or {}).items()))


@functools.lru_cache(maxsize=8192)
def compiled_evaluator(sql: str, types_key: tuple[tuple[str, str], ...]) -> Evaluator:
    """The evaluator of a predicate's SQL under column types (see types_key), compiled once."""
    # Predicates that differ only in their literals share the plan of their template: each
    # then costs its leaves, not a tree of its own (sql_templates.py).
    templated = literal_template(sql)
    if templated is not None:
        plan = _template_plan(templated[0], types_key)
        evaluator = plan(templated[1]) if plan is not None else None
        if evaluator is not None:
            return evaluator
    expression = expression_of(Predicate(raw=sql, sql=sql, columns=frozenset()))
    if expression is None:
        return _constant(ANY)
    return _compile(expression, dict(types_key))


# --------------------------------------------------------------------------- template plans

# A template's evaluator, waiting for its literals (sentinel -> text); None: compile in full.
Plan = Callable[[Literals], Evaluator | None]


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _template_plan(template: str, types_key: tuple[tuple[str, str], ...]) -> Plan | None:
    expression = template_expression(template)
    return None if expression is None else _plan(expression, dict(types_key))


def _plan(node: exp.Expression, types: dict[str, str]) -> Plan | None:
    """`_compile`'s shape for a template; only its comparisons' leaves wait for the literals."""
    node = unparen(node)
    if isinstance(node, exp.And | exp.Or):
        is_and = isinstance(node, exp.And)
        plans = [_plan(t, types) for t in (conjuncts(node) if is_and else disjuncts(node))]
        if any(p is None for p in plans):
            return None
        table, decisive = (AND, FALSE) if is_and else (OR, TRUE)

        def connective(literals: Literals) -> Evaluator | None:
            children = [p(literals) for p in plans]  # type: ignore[misc]
            if any(c is None for c in children):
                return None
            return _compile_connective(children, table, decisive)  # type: ignore[arg-type]

        return connective
    if isinstance(node, exp.Not):
        inner = _plan(node.this, types)
        if inner is None:
            return None

        def negation(literals: Literals) -> Evaluator | None:
            evaluate = inner(literals)
            return None if evaluate is None else (lambda lookup: NOT[evaluate(lookup)])

        return negation
    comparison = as_comparison(node)
    if comparison is None:
        fixed = _compile(node, types)  # constants, a boolean column, ANY: no literal of theirs
        return lambda _literals: fixed
    if SENTINEL.search(f"{comparison.column.name} {comparison.column.qualifier or ''}"):
        return None  # a literal inside a column's name: the template cannot stand for it
    return lambda literals: _bound_leaf(comparison, literals, types)


def _bound_leaf(
    comparison: Comparison, literals: Literals, types: dict[str, str]
) -> Evaluator | None:
    """The leaf of `comparison` with the literals put back, as `literal_of` reads them."""
    values: list[Any] = []
    for value in comparison.values:
        if isinstance(value, Decimal):
            text = str(value)
            if SENTINEL.fullmatch(text):
                value = Decimal(literals[text])
            elif SENTINEL.search(text):
                return None
        elif isinstance(value, str) and SENTINEL.search(value):
            value = substitute(value, literals)
        values.append(value)
    return _compile_leaf(replace(comparison, values=tuple(values)), types)
