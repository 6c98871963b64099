"""Predicate text -> one sqlglot condition, whichever dialect wrote it.

Spark `simpleString` (expression ids, bare literals) is first rewritten as Spark SQL
(`spark.py`); DataFusion's `::` casts and "double-quoted" names read as Postgres; anything else
is tried as Spark SQL, then Postgres. Text too long, too deep or with control characters is
refused before sqlglot sees it, as log text is untrusted.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from audit.core.predicates.normalise import normalise
from audit.core.predicates.spark import SPARK_ATTRIBUTE, spark_to_sql

# Longer texts are refused rather than parsed: a commit's predicate is a few KB at most
# (long IN lists), and sqlglot's cost grows with length.
MAX_PREDICATE_CHARS = 200_000
# Deeper nesting would only exhaust the parser's recursion; no real predicate gets close.
MAX_NESTING = 200
# Parsed texts and templates kept per process (parsing.py, templates.py).
PARSE_CACHE_SIZE = 1 << 15


class Unparsable(Exception):
    """Internal: the text is not a predicate. The message becomes Predicate.error."""


def parse_conjunction(texts: list[str]) -> exp.Expression:
    """The texts parsed, ANDed and normalised; raises Unparsable (or sqlglot's own errors)."""
    parts = [parse_sql(text) for text in texts]
    expression = parts[0] if len(parts) == 1 else exp.and_(*parts, copy=False)
    return normalise(expression)


def parse_sql(text: str) -> exp.Expression:
    _check_shape(text)
    if SPARK_ATTRIBUTE.search(text):
        # Spark simpleString: quote its bare literals, then the backtick dialect.
        # If that fails (a `#` inside a quoted string, say), the text may be plain SQL after all.
        attempts = [("spark", spark_to_sql(text)), ("spark", text), ("postgres", text)]
    elif "`" in text:
        attempts = [("spark", text), ("postgres", text)]
    elif "::" in text or '"' in text:
        # DataFusion: `::` casts and "double-quoted" identifiers, as in Postgres.
        attempts = [("postgres", text), ("spark", text)]
    else:
        attempts = [("spark", text), ("postgres", text)]
    first_error: str | None = None
    for dialect, sql in attempts:
        try:
            parsed = sqlglot.parse_one(sql, read=dialect, into=exp.Condition)
        except sqlglot.errors.SqlglotError as err:
            first_error = first_error or _parser_message(err)
            continue
        if not isinstance(parsed, exp.Condition) or isinstance(parsed, exp.Tuple):
            first_error = first_error or f"not a predicate: {type(parsed).__name__}"
            continue
        return parsed
    raise Unparsable(f"cannot parse predicate: {first_error or 'not a SQL condition'}")


def _parser_message(err: Exception) -> str:
    message = (str(err).splitlines() or [""])[0]
    if not message or message.startswith("Failed to parse"):
        return "not a SQL condition"  # sqlglot's text repeats the input and names its classes
    return message


def _check_shape(text: str) -> None:
    if len(text) > MAX_PREDICATE_CHARS:
        raise Unparsable(f"predicate is too long ({len(text)} characters)")
    if any(ord(ch) < 32 and ch not in "\t\r\n" for ch in text):
        raise Unparsable("predicate contains control characters")
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise Unparsable(f"predicate nests deeper than {MAX_NESTING} parentheses")
        elif ch == ")":
            depth -= 1
