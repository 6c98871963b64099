"""Values from a log, made safe to paste into a statement someone will run.

Paths, partition values, column names and predicates come from a log anyone who can write the
table wrote. Nothing read from it may end a literal or an identifier early, or put code of its
own into a statement: in Spark SQL a text is a plain '...' literal only when it holds no quote,
backslash or control character, else the UTF-8 bytes of it as a hexadecimal literal cast back
to text; an identifier is backquoted with its backquotes doubled; a predicate is re-printed
from its parsed form and only when every node of it is a column, a literal or an operator
(no function, no subquery). In Python every text is `repr`'s literal.
"""

from __future__ import annotations

from sqlglot import exp

from audit.core.model import Predicate

MAX_PREDICATE_NODES = 2_000

# The nodes a predicate may be made of to be pasted into a statement: columns, literals,
# comparisons, boolean logic, arithmetic, IN lists, BETWEEN, IS NULL, LIKE, casts to a type.
_SAFE_NODES = (
    exp.Column,
    exp.Identifier,
    exp.Dot,
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.And,
    exp.Or,
    exp.Not,
    exp.EQ,
    exp.NEQ,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.Neg,
    exp.Cast,
    exp.TryCast,
    exp.DataType,
    exp.DataTypeParam,
    exp.Tuple,
)


class Unsafe(ValueError):
    """A value that cannot be written into a statement safely (a statement is left out)."""


def has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 or ch in "\u2028\u2029" for ch in text)


def spark_table(uri: str) -> str:
    """`delta.`<uri>``: the table by its location, the location backquoted."""
    if not uri or has_control(uri):
        raise Unsafe("the table's location holds control characters")
    return "delta.`" + uri.replace("`", "``") + "`"


def spark_string(text: str) -> str:
    """A Spark SQL string literal of `text` that nothing in `text` can end early."""
    if "'" not in text and "\\" not in text and not has_control(text):
        return "'" + text + "'"
    return f"CAST(X'{text.encode('utf-8', 'surrogatepass').hex().upper()}' AS STRING)"


def spark_strings(texts: list[str]) -> str:
    return ", ".join(spark_string(t) for t in texts)


def spark_identifier(name: str) -> str:
    if not name or has_control(name):
        raise Unsafe("a column name holds control characters")
    return "`" + name.replace("`", "``") + "`"


def spark_predicate(predicate: Predicate | None) -> str:
    """The predicate as Spark SQL, re-printed from its parse; Unsafe when it cannot be."""
    from audit.core.predicates.parsing import expression_of  # noqa: PLC0415

    expression = expression_of(predicate)
    if expression is None:
        raise Unsafe("the condition could not be parsed")
    nodes = list(expression.walk())
    if len(nodes) > MAX_PREDICATE_NODES:
        raise Unsafe("the condition is too long to restate")
    for node in nodes:
        if not isinstance(node, _SAFE_NODES):
            raise Unsafe(f"the condition uses {type(node).__name__}, which is not restated")
        if isinstance(node, exp.Identifier) and has_control(node.name):
            raise Unsafe("a column name holds control characters")
    safe = expression.copy().transform(_safe_literal)
    return safe.sql(dialect="spark", identify=True)


def _safe_literal(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Literal) and node.is_string:
        text = node.this
        if "'" in text or "\\" in text or has_control(text):
            hexed = exp.HexString(this=text.encode("utf-8", "surrogatepass").hex().upper())
            return exp.Cast(this=hexed, to=exp.DataType.build("STRING"))
    return node


def python_literal(value: object) -> str:
    """A Python literal of a str, int, bool, None, or a list / dict / tuple of them."""
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return f"float({str(value)!r})"
        return repr(value)
    if isinstance(value, list | tuple):
        items = ", ".join(python_literal(v) for v in value)
        return (
            f"[{items}]"
            if isinstance(value, list)
            else f"({items}{',' if len(value) == 1 else ''})"
        )
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items())
            + "}"
        )
    raise Unsafe(f"a value of type {type(value).__name__} is not restated")
