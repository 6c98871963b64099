"""One spelling for one meaning: the AST normalised whichever dialect the text came in.

Spark's `isnull(x)` becomes `x IS NULL`, non-ANSI casts are casts, table names in front of a
column are dropped, quotes are kept only where a name needs them and redundant parentheses go.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp


def normalise(expression: exp.Expression) -> exp.Expression:
    """One spelling for one meaning, whichever dialect the text came in."""
    # Wrapped so that the root itself can be replaced like any other node; one walk, as
    # sqlglot's walks are the cost of long predicates.
    holder = exp.Paren(this=expression)
    nodes = list(holder.walk())
    for node in nodes:
        if isinstance(node, exp.Anonymous):
            name, args = str(node.this).lower(), node.expressions
            if name in ("isnull", "isnotnull") and len(args) == 1:
                is_null = exp.Is(this=args[0], expression=exp.Null())
                node.replace(is_null if name == "isnull" else exp.Not(this=is_null))
        elif isinstance(node, exp.TryCast):
            # Spark's (non-ANSI) CAST parses as TRY_CAST; for our purposes both are a cast.
            node.replace(exp.Cast(this=node.this, to=node.args.get("to")))
        elif isinstance(node, exp.Column):
            if node.args.get("catalog") or _names_a_path(node.args.get("table")):
                # `spark_catalog.delta.`/path`.id`: a full table name, noise for the audit.
                # (`s.inner.leaf` is a struct field path and is kept for the witness.)
                for part in ("table", "db", "catalog"):
                    node.set(part, None)
        elif isinstance(node, exp.Identifier) and node.quoted and _bare_identifier_ok(node.name):
            node.set("quoted", False)
    for node in nodes:
        if isinstance(node, exp.Paren) and node is not holder and _redundant_paren(node):
            node.replace(node.this)
    expression = holder.this
    expression.parent = None
    while isinstance(expression, exp.Paren):
        expression = expression.this
        expression.parent = None
    return expression


def _names_a_path(table: exp.Expression | None) -> bool:
    name = table.name if isinstance(table, exp.Identifier) else ""
    return "/" in name or ":" in name


def _redundant_paren(paren: exp.Paren) -> bool:
    parent, child = paren.parent, paren.this
    if parent is not None and not isinstance(parent, exp.And | exp.Or | exp.Not | exp.Paren):
        return False
    if not isinstance(child, exp.Connector):
        return True
    return type(child) is type(parent) and isinstance(child, exp.And | exp.Or)


_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=4096)
def _bare_identifier_ok(name: str) -> bool:
    """Whether `name` reads back as the same column unquoted (not a keyword like SELECT).

    Names with capitals stay quoted: DataFusion (like Postgres) folds unquoted names to lower case.
    """
    if not _SIMPLE_NAME.fullmatch(name) or name != name.lower():
        return False
    try:
        parsed = sqlglot.parse_one(f"{name} = 1", into=exp.Condition)
    except sqlglot.errors.SqlglotError:
        return False
    return (
        isinstance(parsed, exp.EQ)
        and isinstance(parsed.this, exp.Column)
        and parsed.this.name == name
        and not parsed.this.table
    )


def identifier(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=not _bare_identifier_ok(name))


def columns_of(expression: exp.Expression) -> frozenset[str]:
    return frozenset(c.name.lower() for c in expression.find_all(exp.Column) if c.name)
