"""What a file says about one column (partition value or min/max stats), and how a comparison
with a literal can come out over it.

Values are compared as the column's Delta type says; log strings, stats values and literals
are coerced to one comparable Python value, or BAD when they cannot be.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from audit.core.predicates.comparisons import Comparison
from audit.core.predicates.logic import FALSE, TRUE


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known about one column's values in a file.

    low/high: raw bounds (log strings or stats JSON values), None when unknown.
    nulls/values: whether some row may be null / non-null. exact: low == high is every value.
    """

    low: Any
    high: Any
    nulls: bool
    values: bool
    exact: bool


def partition_value_facts(value: Any) -> Facts | None:
    """Facts of a partition value from the log; None (unknown) for values that are not text."""
    if value is None or isinstance(value, str):
        return _partition_facts(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _partition_facts(str(value))
    return None


@functools.lru_cache(maxsize=65536)
def _partition_facts(value: str | None) -> Facts:
    # Delta writes a null partition as null; an empty string means null too.
    if value is None or value == "":
        return Facts(None, None, nulls=True, values=False, exact=True)
    return Facts(value, value, nulls=False, values=True, exact=True)


Lookup = Callable[[str], "Facts | None"]
Evaluator = Callable[[Lookup], int]


def _kind_of_delta_type(type_name: str | None) -> str | None:
    if not isinstance(type_name, str):
        return None
    name = type_name.strip().lower()
    if name in ("byte", "short", "integer", "int", "long", "float", "double", "tinyint"):
        return "number"
    if name in ("smallint", "bigint") or name.startswith("decimal"):
        return "number"
    if name == "date":
        return "date"
    if name.startswith("timestamp"):
        return "timestamp"
    if name == "boolean":
        return "bool"
    if name == "string":
        return "string"
    return "opaque"  # binary, struct, array, map, variant: not compared here


def kind_for(comparison: Comparison, types: dict[str, str]) -> str | None:
    column_kind = _kind_of_delta_type(types.get(comparison.column.name))
    hint = comparison.hint
    if column_kind is None:
        return hint or "string"
    if column_kind == "string" and hint == "number":
        return "number"  # Spark casts the string side to a number
    return None if column_kind == "opaque" else column_kind


BAD = object()


@functools.lru_cache(maxsize=1 << 17, typed=True)
def coerce(kind: str, raw: Any) -> Any:
    """A comparable Python value of `kind` from a log string, stats value or literal."""
    try:
        if kind == "number":
            if isinstance(raw, bool):
                return BAD
            if isinstance(raw, float):
                raw = repr(raw)
            value = Decimal(str(raw).strip())
            return value if value.is_finite() else BAD
        if kind == "string":
            return raw if isinstance(raw, str) else BAD
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            return {"true": True, "false": False}.get(text, BAD)
        if not isinstance(raw, str):
            return BAD
        if kind == "date":
            return _parse_date(raw.strip())
        if kind == "timestamp":
            return dt.datetime.fromisoformat(raw.strip())
    except (InvalidOperation, ValueError, OverflowError):
        return BAD
    return BAD


def _parse_date(text: str) -> Any:
    if len(text) == 10:
        return dt.date.fromisoformat(text)
    moment = dt.datetime.fromisoformat(text)
    # A date compared with a timestamp literal: only midnight is the same instant.
    return moment.date() if moment.time() == dt.time(0) and moment.tzinfo is None else BAD


def bounds(facts: Facts, kind: str) -> tuple[Any, Any]:
    low = coerce(kind, facts.low) if isinstance(facts.low, str | int | float | bool) else None
    high = coerce(kind, facts.high) if isinstance(facts.high, str | int | float | bool) else None
    low = None if low is BAD else low
    high = None if high is BAD else high
    if not facts.exact and high is not None:
        # Stats bounds are rounded: Delta truncates long strings (max is then no upper bound)
        # and writes timestamps in milliseconds.
        if kind == "string" and len(high) >= 32:
            high = None
        elif kind == "timestamp":
            high = high + dt.timedelta(milliseconds=1)
    return low, high


def eq_bits(low: Any, high: Any, value: Any) -> int:
    may_true = (low is None or low <= value) and (high is None or value <= high)
    all_equal = low is not None and high is not None and low == value == high
    return (TRUE if may_true else 0) | (0 if all_equal else FALSE)


def range_bits(op: str, low: Any, high: Any, value: Any) -> int:
    if op == "<":
        return (TRUE if low is None or low < value else 0) | (
            FALSE if high is None or high >= value else 0
        )
    if op == "<=":
        return (TRUE if low is None or low <= value else 0) | (
            FALSE if high is None or high > value else 0
        )
    if op == ">":
        return (TRUE if high is None or high > value else 0) | (
            FALSE if low is None or low <= value else 0
        )
    return (TRUE if high is None or high >= value else 0) | (
        FALSE if low is None or low < value else 0
    )


def like_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    escaped = False
    for ch in pattern:
        if escaped:
            parts.append(re.escape(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    return re.compile("".join(parts), re.DOTALL)


def like_prefix(pattern: str) -> str:
    prefix = []
    for ch in pattern:
        if ch in "%_\\":
            break
        prefix.append(ch)
    return "".join(prefix)
