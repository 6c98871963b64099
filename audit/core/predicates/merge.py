"""MERGE conditions: the target's alias, whether partitions are pinned, and the rewrite that
pins them (the reference page's advice for MERGEs that conflict with every write).
"""

from __future__ import annotations

from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates.comparisons import conjuncts
from audit.core.predicates.normalise import identifier
from audit.core.predicates.parsing import expression_of, parse_predicate

_TARGET_ALIASES = frozenset(
    {"t", "target", "tgt", "trg", "dest", "destination", "existing", "old", "sink", "main", "base"}
)
_SOURCE_ALIASES = frozenset(
    {
        "s",
        "source",
        "src",
        "u",
        "updates",
        "update",
        "new",
        "incoming",
        "staged",
        "staging",
        "changes",
        "batch",
        "input",
        "n",
    }
)


def detect_target_alias(condition: str | Predicate | None) -> str | None:
    """The alias of the MERGE target in a condition (`t`, `target`, ...), None if unclear."""
    pred = condition if isinstance(condition, Predicate) else parse_predicate(condition)
    expression = expression_of(pred)
    if expression is None:
        return None
    qualifiers: list[str] = []
    for column in expression.find_all(exp.Column):
        if column.table and column.table not in qualifiers:
            qualifiers.append(column.table)
    for qualifier in qualifiers:
        if qualifier.lower() in _TARGET_ALIASES:
            return qualifier
    if len(qualifiers) == 2:
        for i, qualifier in enumerate(qualifiers):
            if qualifier.lower() in _SOURCE_ALIASES:
                return qualifiers[1 - i]
    return None


def _pins_target_columns(
    term: exp.Expression, partition_columns: set[str], alias: str | None
) -> set[str]:
    """Target partition columns a conjunct pins to literals (empty if it pins none).

    A conjunct pins when it compares only target partition columns with literals:
    `t.date = '2024-01-01'`, `t.date IN (...)`, `t.date >= ...`; `t.date = s.date` does not.
    Unqualified columns count as the target's (Spark prints MERGE conditions without aliases).
    """
    columns = list(term.find_all(exp.Column))
    if not columns or not any(True for _ in term.find_all(exp.Literal)):
        return set()
    names = set()
    for column in columns:
        name = column.name.lower()
        on_target = not column.table or alias is None or column.table.lower() == alias.lower()
        if name not in partition_columns or not on_target:
            return set()
        names.add(name)
    return names


def merge_condition_lacks_partition_literal(
    condition: str, partition_columns: list[str], target_alias: str | None = None
) -> bool:
    """True when no conjunct of the MERGE condition pins a target partition column to a literal.

    Such a MERGE reads every partition of the target, so it conflicts with any concurrent
    write; the reference page's advice is to add `t.date = '...'`-style predicates.
    """
    pred = parse_predicate(condition)
    expression = expression_of(pred)
    wanted = {c.lower() for c in partition_columns}
    if expression is None or not wanted:
        return bool(wanted)
    alias = target_alias or detect_target_alias(pred)
    return not any(_pins_target_columns(t, wanted, alias) for t in conjuncts(expression))


def rewrite_merge_condition(
    condition: str, partition_values: dict[str, str | None], target_alias: str | None
) -> str:
    """The MERGE condition with `target.col = 'value'` ANDed on for each partition value.

    Columns the condition already pins to a literal are not repeated. Values are written as
    string literals (Spark and DataFusion cast them to the column type); None is IS NULL.
    """
    pred = parse_predicate(condition)
    expression = expression_of(pred)
    alias = target_alias or (detect_target_alias(pred) if expression is not None else None)
    pinned: set[str] = set()
    if expression is not None:
        lowered = {c.lower() for c in partition_values}
        for term in conjuncts(expression):
            pinned |= _pins_target_columns(term, lowered, alias)
    additions = [
        _pin(column, value, alias)
        for column, value in partition_values.items()
        if column.lower() not in pinned
    ]
    if expression is None:
        base = f"({condition.strip()})" if condition and condition.strip() else ""
        return " AND ".join([base] * bool(base) + [a.sql() for a in additions])
    if not additions:
        return expression.sql()
    terms = [term.copy() for term in conjuncts(expression)]
    return exp.and_(*terms, *additions, copy=False).sql()


def _pin(column: str, value: str | None, alias: str | None) -> exp.Expression:
    ref = exp.Column(this=identifier(column), table=identifier(alias) if alias else None)
    if value is None:
        return exp.Is(this=ref, expression=exp.Null())
    return exp.EQ(this=ref, expression=exp.Literal.string(str(value)))
