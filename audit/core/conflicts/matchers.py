"""Which partitions a predicate can select: a fast path for plain `p = 'x' AND ...` text, and
predicates.py for anything else. Untrusted predicate text never raises here."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from audit.core.model import Predicate
from audit.core.numbers import log_int

PartitionMatcher = Callable[[dict[str, Any]], bool]

# A conjunction of `column <op> literal` terms, as sqlglot prints normalised predicates.
_TERM = re.compile(
    r"""(\w+|"[^"]+"|`[^`]+`) (=|<>|!=|<|<=|>|>=) ('(?:[^']|'')*'|-?\d+(?:\.\d+)?)"""
)
_CANONICAL_TEXT_TYPES = frozenset({"string", "date"})
_INTEGER_TYPES = frozenset({"long", "integer", "short", "byte"})


def simple_partition_pins(
    sql: str | None, partition_columns: tuple[str, ...], types: dict[str, str]
) -> tuple[tuple[str, str], ...] | None:
    """Partition equalities of a plain `a = 'x' AND b > 3` predicate, without parsing SQL.

    Returns the (column, canonical value) pins, () when no term is on a partition column, or
    None when the text is not of this simple shape (the caller then uses predicates.py).
    """
    if not sql or "(" in sql or " OR " in sql.upper() or len(sql) > 2000:
        return None
    names = {c.lower(): c for c in partition_columns}
    pins = []
    for term in sql.split(" AND "):
        match = _TERM.fullmatch(term.strip())
        if match is None:
            return None
        column, op, literal = match.groups()
        column = names.get(column.strip('"`').lower())
        if column is None:
            continue
        value = _pinned_value(op, literal, types.get(column, "string"))
        if value is None:
            return None
        pins.append((column, value))
    return tuple(sorted(pins))


def _pinned_value(op: str, literal: str, kind: str) -> str | None:
    """The canonical text of `column = literal` on a partition column of `kind`; None when the
    term is not an equality the fast path can decide."""
    if op != "=" or (kind not in _CANONICAL_TEXT_TYPES and kind not in _INTEGER_TYPES):
        return None
    value = literal[1:-1].replace("''", "'") if literal.startswith("'") else literal
    if kind in _INTEGER_TYPES:
        number = log_int(value, signed=True)
        return str(number) if number is not None else None
    if kind == "date" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return None
    return value


def pins_matcher(pins: tuple[tuple[str, str], ...]) -> PartitionMatcher:
    def may_match(values: dict[str, Any]) -> bool:
        for column, wanted in pins:
            value = values.get(column)
            if value is None:
                return False  # NULL = x is not true
            if value != wanted and _int_text(value) != wanted:
                return False
        return True

    return may_match


def partition_matcher(
    predicate: Predicate, partition_columns: list[str], partition_types: dict[str, str]
) -> PartitionMatcher | None:
    """A callable on partition values; None when the predicate does not narrow the partitions."""
    from audit.core import predicates  # noqa: PLC0415  (sqlglot only when a predicate needs it)

    try:
        if predicates.partition_part(predicate, partition_columns) is None:
            return None
        return predicates.partition_matcher(predicate, partition_columns, partition_types)
    except Exception:  # untrusted predicate text: no matcher means "the whole table"
        return None


def _int_text(value: str) -> str | None:
    """A partition value of an integer column in canonical text ("007" -> "7"), else None."""
    number = log_int(value, signed=True)
    return str(number) if number is not None else None
