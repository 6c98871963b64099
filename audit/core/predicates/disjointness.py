"""Whether two predicates provably select disjoint values of a column.

Each predicate's conjuncts on the column become ranges (a finite set, bounds, excluded values,
NULL admitted or not); the pair is disjoint when no value satisfies all ranges at once.
Conjuncts not modelled are ignored, which only widens a range: the answer stays sound.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates.comparisons import (
    Comparison,
    as_comparison,
    conjuncts,
    disjuncts,
    unparen,
)
from audit.core.predicates.normalise import columns_of
from audit.core.predicates.parsing import expression_of


@dataclass(frozen=True, slots=True)
class _Range:
    """The values one predicate admits for one column.

    values: a finite set of non-null values, or None for "not a finite set". low/high: bounds
    (None = unbounded). excluded: values ruled out. null/non_null: whether NULL / some non-null
    value is admitted.
    """

    values: frozenset | None = None
    low: Any = None
    low_inclusive: bool = True
    high: Any = None
    high_inclusive: bool = True
    excluded: frozenset = frozenset()
    null: bool = True
    non_null: bool = True


def disjoint(a: Predicate | None, b: Predicate | None, columns: list[str]) -> bool | None:
    """Do `a` and `b` provably select disjoint values of at least one of `columns`?

    True: on some column the value ranges cannot meet (`date < '2010-01-01'` vs
    `date > '2010-01-01'`). False: on every column they can meet. None: unknown, because a
    predicate is unparsable or restricts a column in a way we do not model (`LIKE`,
    functions) and nothing else proves disjointness.
    """
    first, second = expression_of(a), expression_of(b)
    if first is None or second is None or not columns:
        return None
    verdicts = [_disjoint_on(first, second, column.lower()) for column in columns]
    if True in verdicts:
        return True
    return None if None in verdicts else False


def _disjoint_on(first: exp.Expression, second: exp.Expression, column: str) -> bool | None:
    ranges_a, approximate_a = _ranges(first, column)
    ranges_b, approximate_b = _ranges(second, column)
    try:
        empty = _empty(ranges_a + ranges_b)
    except TypeError:  # values of incomparable kinds
        return None
    if empty:
        return True
    return None if approximate_a or approximate_b else False


def _ranges(expression: exp.Expression, column: str) -> tuple[list[_Range], bool]:
    """Constraints one predicate's conjuncts put on `column`; flag if some were not modelled."""
    ranges: list[_Range] = []
    approximate = False
    for term in conjuncts(expression):
        columns = columns_of(term)
        if column not in columns:
            continue
        found = _range_of(term, column) if columns == {column} else None
        if found is None:
            approximate = True  # ignoring a conjunct only widens the range: still sound
        else:
            ranges.append(found)
    return ranges, approximate


def _range_of(node: exp.Expression, column: str) -> _Range | None:
    node = unparen(node)
    if isinstance(node, exp.Or):
        parts = [_range_of(t, column) for t in disjuncts(node)]
        if any(p is None for p in parts):
            return None
        try:
            return functools.reduce(_union, parts)  # type: ignore[arg-type]
        except TypeError:
            return None
    if isinstance(node, exp.Not):
        inner = as_comparison(node.this)
        if inner is None or inner.column.name != column:
            return None
        if inner.op == "is_null":
            return _Range(null=False)
        if inner.op in ("=", "in") and all(v is not None for v in inner.values):
            return _Range(
                excluded=frozenset(_sortable(v, inner.hint) for v in inner.values), null=False
            )
        return None
    comparison = as_comparison(node)
    if comparison is None or comparison.column.name != column:
        return None
    return _comparison_range(comparison)


def _comparison_range(comparison: Comparison) -> _Range | None:
    op, hint = comparison.op, comparison.hint
    if op == "is_null":
        return _Range(values=frozenset(), non_null=False)
    if op in ("like", "starts_with") or (op != "in" and None in comparison.values):
        return None
    values = [_sortable(v, hint) for v in comparison.values if v is not None]
    if op in ("=", "<=>", "in"):
        return _Range(values=frozenset(values), null=False)
    if op == "!=":
        return _Range(excluded=frozenset(values), null=False)
    if op == "between":
        return _Range(low=values[0], high=values[1], null=False)
    if op in ("<", "<="):
        return _Range(high=values[0], high_inclusive=op == "<=", null=False)
    return _Range(low=values[0], low_inclusive=op == ">=", null=False)


def _sortable(value: Any, hint: str | None) -> Any:
    """Literals made comparable: ISO dates and timestamps as naive datetimes."""
    if (
        isinstance(value, str)
        and hint in ("string", "date", "timestamp")
        and _looks_temporal(value)
    ):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return value
        if moment.tzinfo is not None:
            moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
        return moment
    return value


def _looks_temporal(text: str) -> bool:
    text = text.strip()
    return len(text) >= 10 and text[:4].isdigit() and text[4] == "-" and text[7] == "-"


def _align(x: Any, y: Any) -> tuple[Any, Any]:
    """Bring a string to the other side's kind (`5` vs `'5'`), as SQL's implicit casts do."""
    if type(x) is type(y):
        return x, y
    if isinstance(x, str):
        return _convert_like(x, y), y
    if isinstance(y, str):
        return x, _convert_like(y, x)
    return x, y


def _convert_like(text: str, other: Any) -> Any:
    try:
        if isinstance(other, Decimal):
            return Decimal(text.strip())
        if isinstance(other, dt.datetime):
            return dt.datetime.fromisoformat(text.strip())
    except (InvalidOperation, ValueError):
        pass
    raise TypeError("incomparable literals")


def _compare(x: Any, y: Any) -> int:
    x, y = _align(x, y)
    return (x > y) - (x < y)


def _same(x: Any, y: Any) -> bool:
    try:
        return _compare(x, y) == 0
    except TypeError:
        if isinstance(x, str) != isinstance(y, str):
            raise
        return False


def _admits(constraint: _Range, value: Any) -> bool:
    if constraint.values is not None and not any(_same(value, v) for v in constraint.values):
        return False
    if constraint.low is not None:
        order = _compare(value, constraint.low)
        if order < 0 or (order == 0 and not constraint.low_inclusive):
            return False
    if constraint.high is not None:
        order = _compare(value, constraint.high)
        if order > 0 or (order == 0 and not constraint.high_inclusive):
            return False
    return not any(_same(value, v) for v in constraint.excluded)


def _empty(constraints: list[_Range]) -> bool:
    """Whether no value (NULL included) satisfies all constraints at once."""
    if all(c.null for c in constraints):
        return False
    if not all(c.non_null for c in constraints):
        return True
    finite = [c.values for c in constraints if c.values is not None]
    if finite:
        smallest = min(finite, key=len)
        return not any(all(_admits(c, v) for c in constraints) for v in smallest)
    low, low_inclusive, high, high_inclusive = None, True, None, True
    for c in constraints:
        if c.low is not None and (low is None or _compare(c.low, low) >= 0):
            same = low is not None and _compare(c.low, low) == 0
            low_inclusive = (low_inclusive and c.low_inclusive) if same else c.low_inclusive
            low = c.low
        if c.high is not None and (high is None or _compare(c.high, high) <= 0):
            same = high is not None and _compare(c.high, high) == 0
            high_inclusive = (high_inclusive and c.high_inclusive) if same else c.high_inclusive
            high = c.high
    if low is None or high is None:
        return False
    order = _compare(low, high)
    if order > 0:
        return True
    if order == 0:
        point_excluded = any(_same(low, v) for c in constraints for v in c.excluded)
        return not (low_inclusive and high_inclusive) or point_excluded
    return False


def _union(a: _Range, b: _Range) -> _Range:
    """A range holding both (the hull when they are not both finite sets)."""
    null = a.null or b.null
    if not a.non_null:
        return replace(b, null=null)
    if not b.non_null:
        return replace(a, null=null)
    if a.values is not None and b.values is not None and _plain(a) and _plain(b):
        return _Range(values=a.values | b.values, null=null)
    low_a, high_a = _hull(a)
    low_b, high_b = _hull(b)
    low = None if low_a is None or low_b is None else min(low_a, low_b, key=_Key)
    high = None if high_a is None or high_b is None else max(high_a, high_b, key=_Key)
    return _Range(low=low, high=high, null=null)


def _plain(r: _Range) -> bool:
    return r.low is None and r.high is None and not r.excluded


def _hull(r: _Range) -> tuple[Any, Any]:
    if r.values is not None and r.values:
        ordered = sorted(r.values, key=_Key)
        return ordered[0], ordered[-1]
    return r.low, r.high


@functools.total_ordering
class _Key:
    """Sort key using _compare (raises TypeError on incomparable values)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and _compare(self.value, other.value) == 0

    def __lt__(self, other: _Key) -> bool:
        return _compare(self.value, other.value) < 0

    __hash__ = None  # type: ignore[assignment]
