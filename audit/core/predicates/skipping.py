"""Which files may hold rows a predicate matches: by partition values, and by file statistics.

Only the partition part of a predicate decides on partition values. The predicate is compiled
once per SQL and column types (`evaluator.py`) and fed the facts a file gives; the answer is
sound (never prunes a file that could match) and exact when every value is known (partition
values).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates.comparisons import conjuncts
from audit.core.predicates.dialects import PARSE_CACHE_SIZE
from audit.core.predicates.evaluator import compiled_evaluator, types_key
from audit.core.predicates.facts import Facts, partition_value_facts
from audit.core.predicates.logic import TRUE
from audit.core.predicates.normalise import columns_of
from audit.core.predicates.parsing import expression_of, predicate_from
from audit.core.predicates.sql_templates import (
    SENTINEL,
    literal_template,
    substitute,
    template_expression,
)


def partition_part(pred: Predicate | None, partition_columns: list[str]) -> Predicate | None:
    """The top-level conjuncts that reference only partition columns, ANDed; None if none.

    A disjunct mixing partition and other columns (`p = 1 OR x = 2`) does not narrow the
    partitions read, so it is left out. The whole predicate is returned when all of it is
    the partition part (keeping its raw text).
    """
    if pred is None or pred.sql is None or not partition_columns:
        return None
    wanted = frozenset(c.lower() for c in partition_columns)
    templated = literal_template(pred.sql)
    if templated is not None:
        part = _template_part(templated[0], wanted)
        if part is not _PARSE:
            return _with_literals(pred, part, templated[1])
    expression = expression_of(pred)
    if expression is None:
        return None
    terms = conjuncts(expression)
    kept = [t for t in terms if (cols := columns_of(t)) and cols <= wanted]
    if not kept:
        return None
    if len(kept) == len(terms):
        return pred
    return predicate_from(exp.and_(*(t.copy() for t in kept), copy=False))


# What `_template_part` says: parse this predicate in full after all.
_PARSE = object()
_WHOLE = object()


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _template_part(template: str, wanted: frozenset[str]) -> Any:
    """partition_part of a literal template: None, _WHOLE, (part template SQL, columns), or
    _PARSE when the template cannot stand for its predicates (a literal in a column name)."""
    expression = template_expression(template)
    if expression is None:
        return _PARSE
    terms = conjuncts(expression)
    if any(SENTINEL.search(name) for t in terms for name in columns_of(t)):
        return _PARSE
    kept = [t for t in terms if (cols := columns_of(t)) and cols <= wanted]
    if not kept:
        return None
    if len(kept) == len(terms):
        return _WHOLE
    part = exp.and_(*(t.copy() for t in kept), copy=False)
    sql = part.sql()
    if len(SENTINEL.findall(sql)) != len(set(SENTINEL.findall(sql))):
        return _PARSE  # a literal printed twice: its text would not be the parse's
    return sql, columns_of(part)


def _with_literals(pred: Predicate, part: Any, literals: dict[str, str]) -> Predicate | None:
    if part is None or part is _WHOLE:
        return pred if part is _WHOLE else None
    sql = substitute(part[0], literals)
    return Predicate(raw=sql, sql=sql, columns=part[1])


def names_partition_column(pred: Predicate | None, partition_columns: list[str]) -> bool:
    if pred is None:
        return False
    return bool(pred.columns & {c.lower() for c in partition_columns})


def _always(_values: Any) -> bool:
    return True


def partition_matcher(
    pred: Predicate | None,
    partition_columns: list[str],
    partition_types: dict[str, str] | None = None,
) -> Callable[[dict[str, str | None]], bool]:
    """A function: may a file with these partitionValues hold rows matching `pred`?

    Only the partition part of `pred` is used; without one every file may match. Values are
    compared as the partition type says (numbers numerically, dates/timestamps as such);
    anything not understood may match. Compiled once per (predicate, columns, types).
    """
    part = partition_part(pred, partition_columns)
    if part is None or part.sql is None:
        return _always
    evaluate = compiled_evaluator(part.sql, types_key(partition_types))
    names = {c.lower(): c for c in partition_columns}

    def may_match(values: dict[str, str | None]) -> bool:
        def lookup(name: str) -> Facts | None:
            key = names.get(name, name)
            if key in values:
                return partition_value_facts(values[key])
            for other, value in values.items():  # tolerate a differently-cased key
                if str(other).lower() == name:
                    return partition_value_facts(value)
            return None

        return bool(evaluate(lookup) & TRUE)

    return may_match


def stats_may_match(
    pred: Predicate | None,
    stats: dict[str, Any] | None,
    partition_values: dict[str, str | None] | None,
    column_types: dict[str, str] | None,
) -> bool:
    """Data skipping: may a file with these stats and partition values hold a matching row?

    `stats` is the parsed stats JSON (numRecords, minValues, maxValues, nullCount). Columns
    without stats, nested columns and unknown expressions may match.
    """
    if pred is None or pred.sql is None:
        return True
    stats = stats if isinstance(stats, dict) else {}
    if stats.get("numRecords") == 0:
        return False
    partitions = {str(k).lower(): v for k, v in (partition_values or {}).items()}
    minimums = _lowered(stats.get("minValues"))
    maximums = _lowered(stats.get("maxValues"))
    null_counts = _lowered(stats.get("nullCount"))
    records = stats.get("numRecords")

    def lookup(name: str) -> Facts | None:
        if name in partitions:
            return partition_value_facts(partitions[name])
        if name not in minimums and name not in maximums and name not in null_counts:
            return None
        nulls = null_counts.get(name)
        known_nulls = isinstance(nulls, int) and not isinstance(nulls, bool)
        known_records = isinstance(records, int) and not isinstance(records, bool)
        return Facts(
            minimums.get(name),
            maximums.get(name),
            nulls=not known_nulls or nulls > 0,
            values=not (known_nulls and known_records) or nulls < records,
            exact=False,
        )

    evaluate = compiled_evaluator(pred.sql, types_key(column_types))
    return bool(evaluate(lookup) & TRUE)


def _lowered(mapping: Any) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        return {}
    return {str(k).lower(): v for k, v in mapping.items()}
