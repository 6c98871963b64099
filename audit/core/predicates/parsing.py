"""Parsing predicates as commits record them, and the cache of their parsed expressions.

`parse_predicate` is the one entry point from log values (text, a JSON list of texts, a
decoded list) to `Predicate`; it never raises. `Predicate.sql` is the AST printed in sqlglot's
default dialect, and `expression_of` hands back that AST from a shared cache (copy before
mutating) so that the matchers below need not parse again.
"""

from __future__ import annotations

import functools

import orjson
import sqlglot
from sqlglot import exp

from audit.core.errors import one_line
from audit.core.jsonsafe import json_text
from audit.core.model import Predicate
from audit.core.predicates.dialects import PARSE_CACHE_SIZE, Unparsable, parse_conjunction
from audit.core.predicates.normalise import columns_of
from audit.core.predicates.sql_templates import expression_from_template
from audit.core.predicates.templates import build_from_template

_EXPRESSION_CACHE_SIZE = 1 << 16
# Reasons are short; a longer one is an echo of hostile text.
_REASON_LIMIT = 200


def parse_predicate(raw: str | list | tuple | None) -> Predicate | None:
    """Parse a predicate as found in operationParameters; None when there is none.

    `raw` may be SQL text, a JSON-encoded list of SQL texts (Spark), or an already decoded
    list; list items are ANDed. `"true"` is a predicate (everything), `""`/`"[]"` are none.
    Never raises: unparsable input gives a Predicate with `sql=None` and `error` set.
    """
    if raw is None:
        return None
    if isinstance(raw, str):
        return _parse_text_cached(raw)
    if isinstance(raw, list | tuple):
        if all(isinstance(item, str) for item in raw):
            return _parse_items_cached(tuple(raw))
        return _failed(json_text(raw), "predicate list holds items that are not text")
    return _failed(json_text(raw), f"unsupported predicate value of type {type(raw).__name__}")


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_text_cached(raw: str) -> Predicate | None:
    text = raw.strip()
    if text.startswith("["):
        try:
            decoded = orjson.loads(text)
        except orjson.JSONDecodeError:
            decoded = None  # not JSON: let the SQL parser judge it
        if isinstance(decoded, list):
            if not all(isinstance(item, str) for item in decoded):
                return _failed(raw, "predicate list holds items that are not text")
            return _build(raw, decoded)
    return _build(raw, [raw])


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_items_cached(items: tuple[str, ...]) -> Predicate | None:
    return _build(json_text(list(items)), list(items))


def _failed(raw: str, reason: str) -> Predicate:
    return Predicate(
        raw=raw, sql=None, columns=frozenset(), error=one_line(reason, limit=_REASON_LIMIT)
    )


def _build(raw: str, items: list[str]) -> Predicate | None:
    texts = [item.strip() for item in items if item and item.strip()]
    if not texts:
        return None
    templated = build_from_template(raw, texts)
    if templated is not None:
        return templated
    return _parse_full(raw, texts)


def _parse_full(raw: str, texts: list[str]) -> Predicate | None:
    try:
        expression = parse_conjunction(texts)
        sql = expression.sql()
    except Unparsable as err:
        return _failed(raw, str(err))
    except Exception as err:  # sqlglot on hostile text: RecursionError, TokenError, ...
        return _failed(raw, f"cannot parse predicate: {type(err).__name__}")
    remember(sql, expression)
    return Predicate(raw=raw, sql=sql, columns=columns_of(expression))


# --------------------------------------------------------------------------- expression cache

_EXPRESSIONS: dict[str, exp.Expression] = {}


def remember(sql: str, expression: exp.Expression) -> None:
    """Keep the parsed expression of `sql` for expression_of."""
    if len(_EXPRESSIONS) >= _EXPRESSION_CACHE_SIZE:
        _EXPRESSIONS.clear()  # crude but bounded; entries are rebuilt from `sql` on demand
    _EXPRESSIONS[sql] = expression


def expression_of(pred: Predicate | None) -> exp.Expression | None:
    """The parsed sqlglot expression of a predicate (shared: copy before mutating)."""
    if pred is None or pred.sql is None:
        return None
    expression = _EXPRESSIONS.get(pred.sql)
    if expression is None:
        # Most predicates of a log differ from one another only in their literals: a copy of
        # their template's tree costs a fraction of a parse.
        expression = expression_from_template(pred.sql)
        if expression is None:
            try:
                expression = sqlglot.parse_one(pred.sql, into=exp.Condition)
            except Exception:  # a Predicate built by hand with bad sql
                return None
        remember(pred.sql, expression)
    return expression


def predicate_from(expression: exp.Expression) -> Predicate:
    """A Predicate for an expression built here (its raw text is its SQL)."""
    sql = expression.sql()
    remember(sql, expression)
    return Predicate(raw=sql, sql=sql, columns=columns_of(expression))
