"""Normalised predicate SQL that differs only in its literals: parsed once, as a template.

`templates.py` does this for the raw log text; this module does it for `Predicate.sql`, the
normalised text the matchers parse again (`expression_of`) and cut into partition parts. A
contended log holds tens of thousands of predicates like `date = '2024-01-01' AND id > 75691`
that differ only in their literals: each was parsed (~0.3 ms) and printed again per use.
Here every integer or ISO-date literal is swapped for a sentinel, the template is parsed
once, and a copy of its tree gets the literals back. A template is used only when every
sentinel lands, exactly once, in the text of a literal or identifier node (where putting the
literal back gives the tree the text itself parses to); otherwise the caller parses in full.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp

from audit.core.predicates.dialects import PARSE_CACHE_SIZE

# Integers without a leading zero and ISO dates, not glued to a name, a number or a time: the
# literals whose text the parser keeps as it is (a decimal like `1.50` is left in the template).
_LITERAL = re.compile(r"(?<![\w#.:-])(\d{4}-\d{2}-\d{2}|[1-9]\d{0,17}|0)(?![\w#.:-])")
SENTINEL = re.compile(r"98765\d{5}|1000-01-\d{2}")
_MAX_LITERALS = 27  # date sentinels are 1000-01-01 .. 1000-01-27

Literals = dict[str, str]  # sentinel -> the literal's text


def literal_template(sql: str) -> tuple[str, Literals] | None:
    """`sql` with its literals swapped for sentinels, and the literals; None when it has
    none, too many, or text that could be mistaken for a sentinel."""
    if SENTINEL.search(sql):
        return None
    literals: Literals = {}

    def swap(match: re.Match[str]) -> str:
        literal = match.group(1)
        index = len(literals)
        sentinel = f"1000-01-{index + 1:02d}" if "-" in literal else f"98765{index:05d}"
        literals[sentinel] = literal
        return sentinel

    template = _LITERAL.sub(swap, sql)
    if not literals or len(literals) > _MAX_LITERALS:
        return None
    return template, literals


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def template_expression(template: str) -> exp.Expression | None:
    """The template's parsed tree (shared: never handed out), or None when it cannot be used."""
    try:
        expression = sqlglot.parse_one(template, into=exp.Condition)
    except Exception:
        return None
    seen: list[str] = []
    for node in expression.walk():
        if node.comments:
            return None  # comments are text a sentinel could hide in
        for key, value in node.args.items():
            if not isinstance(value, str):
                continue
            found = SENTINEL.findall(value)
            if found and not (key == "this" and isinstance(node, exp.Literal | exp.Identifier)):
                return None  # a literal became something else's text: parse in full
            seen += found
    if sorted(seen) != sorted(SENTINEL.findall(template)) or len(set(seen)) != len(seen):
        return None
    return expression


def substitute(text: str, literals: Literals) -> str:
    return SENTINEL.sub(lambda m: literals[m.group(0)], text)


def expression_from_template(sql: str) -> exp.Expression | None:
    """The tree `sql` parses to, made from its template's tree; None to parse it in full."""
    templated = literal_template(sql)
    if templated is None:
        return None
    template, literals = templated
    base = template_expression(template)
    if base is None:
        return None
    copy = base.copy()
    for node in copy.walk():
        node._hash = None  # the copy keeps the template's cached hashes: stale once changed
        if isinstance(node, exp.Literal | exp.Identifier):
            text = node.args.get("this")
            if isinstance(text, str) and SENTINEL.search(text):
                node.args["this"] = substitute(text, literals)
    return copy
