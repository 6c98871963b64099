"""The fast path of parsing: predicates that differ only in their literals share one parse.

Real logs hold thousands of predicates that differ only in their literals (a date, an id
range). Parsing costs ~0.5 ms each, so such predicates are parsed once as a template: every
numeric or ISO-date literal is swapped for a unique sentinel of the same kind, the template is
parsed by sqlglot like any predicate, and the literals are put back into its normalised SQL.
Whenever putting them back is not provably safe, None sends the text to the full parse.
"""

from __future__ import annotations

import functools
import re

from audit.core.model import Predicate
from audit.core.predicates.dialects import PARSE_CACHE_SIZE, parse_conjunction
from audit.core.predicates.normalise import columns_of
from audit.core.predicates.spark import SPARK_ATTRIBUTE

_TEMPLATE_LITERAL = re.compile(r"(?<![\w#.:-])(\d{4}-\d{2}-\d{2}|\d+(?:\.\d+)?)(?![\w#.:-])")
_EXPRESSION_ID = re.compile(r"#\d+")  # compiled once: this runs on every Spark attribute
_MAX_TEMPLATE_LITERALS = 27  # date sentinels are 1000-01-01 .. 1000-01-27


def build_from_template(raw: str, texts: list[str]) -> Predicate | None:
    """The predicate parsed through its literal-free template; None to parse it in full."""
    literals: list[tuple[str, str]] = []  # (sentinel, original literal)

    def swap(match: re.Match[str]) -> str:
        literal = match.group(1)
        index = len(literals)
        sentinel = f"1000-01-{index + 1:02d}" if "-" in literal else f"98765{index:05d}"
        literals.append((sentinel, literal))
        return sentinel

    # Spark expression ids (`date#1273`) differ in every commit and are normalised away: give
    # them all the same id in the template.
    template = tuple(
        _TEMPLATE_LITERAL.sub(swap, SPARK_ATTRIBUTE.sub(_canonical_attribute, text))
        for text in texts
    )
    if not literals or len(literals) > _MAX_TEMPLATE_LITERALS:
        return None
    if any(sentinel in text for text in texts for sentinel, _ in literals):
        return None  # a sentinel occurs in the text itself: it could not be put back safely
    parsed = _parse_template(template)
    if parsed is None:
        return None
    sql, columns = parsed
    if "#" in sql:
        return None  # an expression id survived (inside a string?): parse this one in full
    for sentinel, literal in literals:
        if sql.count(sentinel) != 1:
            return None  # the parser moved or duplicated a literal: parse this one in full
        sql = sql.replace(sentinel, literal)
    return Predicate(raw=raw, sql=sql, columns=columns)


def _canonical_attribute(match: re.Match[str]) -> str:
    return _EXPRESSION_ID.sub("#0", match.group(0))


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_template(template: tuple[str, ...]) -> tuple[str, frozenset[str]] | None:
    try:
        expression = parse_conjunction(list(template))
        return expression.sql(), columns_of(expression)
    except Exception:  # let the full parse produce the error message
        return None
