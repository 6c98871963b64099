"""Predicates from Delta commits: parse, normalise and reason about them.

Predicates reach us as text in `commitInfo.operationParameters` in three dialects:

* Spark `simpleString`, often a JSON list of strings, with expression ids and *unquoted*
  literals: `["((id#1904L >= 5) AND (id#1904L <= 9))"]`, `(date#12 = 2024-01-02)`.
* delta-rs / DataFusion SQL: `d = '2024-01-02'::date`, `arrow_cast(x, 'Int64') > 5`, `"col" = 1`.
* Plain SQL written by users: `date < '2010-01-01'`.

Everything is parsed with sqlglot into one AST; `Predicate.sql` is that AST printed in sqlglot's
default (ANSI-like) dialect, and the raw text is always kept. On top of the AST this module
answers the audit's questions: which conjuncts touch partition columns, may a file (by its
partition values or min/max stats) hold matching rows, do two predicates select disjoint values,
how to evaluate a predicate on a data file with pyarrow, and how to pin a MERGE condition to
partitions.

All answers are conservative: what we cannot model "may match". Log text is untrusted, so
nothing here raises on bad input; unparsable text gives `Predicate(sql=None, error=...)`.
The sqlglot expressions handed out are shared through a cache: copy before mutating.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import orjson
import sqlglot
from sqlglot import exp

from audit.core.model import Predicate

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.compute

__all__ = [
    "detect_target_alias",
    "disjoint",
    "expression_of",
    "merge_condition_lacks_partition_literal",
    "names_partition_column",
    "parse_predicate",
    "partition_matcher",
    "partition_part",
    "rewrite_merge_condition",
    "stats_may_match",
    "to_arrow_expression",
]

# Longer texts are refused rather than parsed: a commit's predicate is a few KB at most
# (long IN lists), and sqlglot's cost grows with length.
MAX_PREDICATE_CHARS = 200_000
# Deeper nesting would only exhaust the parser's recursion; no real predicate gets close.
MAX_NESTING = 200
_PARSE_CACHE_SIZE = 1 << 15
_EXPRESSION_CACHE_SIZE = 1 << 16

# =========================================================================== parsing


class _Unparsable(Exception):
    """Internal: the text is not a predicate. The message becomes Predicate.error."""


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
        return _failed(_json_text(raw), "predicate list holds items that are not text")
    return _failed(_json_text(raw), f"unsupported predicate value of type {type(raw).__name__}")


@functools.lru_cache(maxsize=_PARSE_CACHE_SIZE)
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


@functools.lru_cache(maxsize=_PARSE_CACHE_SIZE)
def _parse_items_cached(items: tuple[str, ...]) -> Predicate | None:
    return _build(_json_text(list(items)), list(items))


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _failed(raw: str, reason: str) -> Predicate:
    return Predicate(raw=raw, sql=None, columns=frozenset(), error=_one_line(reason))


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _build(raw: str, items: list[str]) -> Predicate | None:
    texts = [item.strip() for item in items if item and item.strip()]
    if not texts:
        return None
    templated = _build_from_template(raw, texts)
    if templated is not None:
        return templated
    return _parse_full(raw, texts)


def _parse_full(raw: str, texts: list[str]) -> Predicate | None:
    try:
        parts = [_parse_sql(text) for text in texts]
        expression = parts[0] if len(parts) == 1 else exp.and_(*parts, copy=False)
        expression = _normalise(expression)
        sql = expression.sql()
    except _Unparsable as err:
        return _failed(raw, str(err))
    except Exception as err:  # sqlglot on hostile text: RecursionError, TokenError, ...
        return _failed(raw, f"cannot parse predicate: {type(err).__name__}")
    _remember(sql, expression)
    return Predicate(raw=raw, sql=sql, columns=_columns_of(expression))


# Real logs hold thousands of predicates that differ only in their literals (a date, an id
# range). Parsing costs ~0.5 ms each, so such predicates are parsed once as a template: every
# numeric or ISO-date literal is swapped for a unique sentinel of the same kind, the template is
# parsed by sqlglot like any predicate, and the literals are put back into its normalised SQL.
_TEMPLATE_LITERAL = re.compile(r"(?<![\w#.:-])(\d{4}-\d{2}-\d{2}|\d+(?:\.\d+)?)(?![\w#.:-])")
_MAX_TEMPLATE_LITERALS = 27  # date sentinels are 1000-01-01 .. 1000-01-27


def _build_from_template(raw: str, texts: list[str]) -> Predicate | None:
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
        _TEMPLATE_LITERAL.sub(swap, _SPARK_ATTRIBUTE.sub(_canonical_attribute, text))
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
    return re.sub(r"#\d+", "#0", match.group(0))


@functools.lru_cache(maxsize=_PARSE_CACHE_SIZE)
def _parse_template(template: tuple[str, ...]) -> tuple[str, frozenset[str]] | None:
    try:
        parts = [_parse_sql(text) for text in template]
        expression = parts[0] if len(parts) == 1 else exp.and_(*parts, copy=False)
        expression = _normalise(expression)
        return expression.sql(), _columns_of(expression)
    except Exception:  # let the full parse produce the error message
        return None


def _parse_sql(text: str) -> exp.Expression:
    _check_shape(text)
    if _SPARK_ATTRIBUTE.search(text):
        # Spark simpleString: quote its bare literals, then the backtick dialect.
        # If that fails (a `#` inside a quoted string, say), the text may be plain SQL after all.
        attempts = [("spark", _spark_to_sql(text)), ("spark", text), ("postgres", text)]
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
    raise _Unparsable(f"cannot parse predicate: {first_error or 'not a SQL condition'}")


def _parser_message(err: Exception) -> str:
    message = (str(err).splitlines() or [""])[0]
    if not message or message.startswith("Failed to parse"):
        return "not a SQL condition"  # sqlglot's text repeats the input and names its classes
    return message


def _check_shape(text: str) -> None:
    if len(text) > MAX_PREDICATE_CHARS:
        raise _Unparsable(f"predicate is too long ({len(text)} characters)")
    if any(ord(ch) < 32 and ch not in "\t\r\n" for ch in text):
        raise _Unparsable("predicate contains control characters")
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise _Unparsable(f"predicate nests deeper than {MAX_NESTING} parentheses")
        elif ch == ")":
            depth -= 1


# --------------------------------------------------------------------------- Spark simpleString

# A Spark attribute reference: `name#123` (L suffix for longs), maybe qualified (`t.date#12`).
# Spark prints every column with its expression id, so this also tells the dialect apart.
_SPARK_ATTRIBUTE = re.compile(r"(?<![\w#`'])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*#\d+L?(?![\w#])")

# Lexer for quoting Spark's bare literals. Spark prints binary operators as `(l OP r)` with
# spaces around OP, functions as `name(args)` and casts as `cast(x as type)`. Everything
# between these delimiters that holds no attribute reference is a literal or a name.
_SPARK_TOKENS = re.compile(
    r"(?P<attr>" + _SPARK_ATTRIBUTE.pattern + r")"
    r"|(?P<postfix>\s+IS(?:\s+NOT)?\s+NULL\b)"
    r"|(?P<binary>\s+(?:AND|OR|NOT\s+IN|IN|NOT\s+LIKE|LIKE|RLIKE|ILIKE"
    r"|<=>|>=|<=|!=|<>|==|=|<|>|\+|-|\*|/|%|&|\||\^)\s+)"
    r"|(?P<cast_as>\s+(?:as|AS)\s+)"
    r"|(?P<prefix>(?<![\w#])NOT\s+)"
    r"|(?P<punct>[(),])"
)
_SPARK_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPARK_KEEP_WORDS = frozenset({"null", "true", "false"})


def _spark_to_sql(text: str) -> str:
    """Spark simpleString -> Spark SQL: attributes become `quoted` names, bare literals strings.

    `(date#12 = 2024-01-02)` -> "(`date` = '2024-01-02')"; `(s#2 = a b)` -> "(`s` = 'a b')".
    """
    tokens = _spark_tokens(text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind not in ("text", "attr"):
            out.append(value)
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if kind == "binary" and (nxt is None or nxt[1] in (")", ",")):
                out.append("''")  # Spark prints an empty string literal as nothing at all
            i += 1
            continue
        j = i
        while j < len(tokens) and tokens[j][0] in ("text", "attr"):
            j += 1
        previous = tokens[i - 1] if i else None
        following = tokens[j] if j < len(tokens) else None
        out.append(_render_spark_segment(tokens[i:j], previous, following))
        i = j
    return "".join(out)


def _spark_tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    for match in _SPARK_TOKENS.finditer(text):
        if match.start() > position:
            tokens.append(("text", text[position : match.start()]))
        tokens.append((match.lastgroup or "text", match.group()))
        position = match.end()
    if position < len(text):
        tokens.append(("text", text[position:]))
    return tokens


def _render_spark_segment(
    segment: list[tuple[str, str]],
    previous: tuple[str, str] | None,
    following: tuple[str, str] | None,
) -> str:
    if any(kind == "attr" for kind, _ in segment):
        return "".join(_spark_attribute_sql(v) if k == "attr" else v for k, v in segment)
    raw = "".join(value for _, value in segment)
    body = raw.strip()
    if not body:
        return raw
    keep = (
        (following is not None and following[1] == "(")  # a function name
        or (previous is not None and previous[0] == "cast_as")  # a type name
        or _SPARK_NUMBER.fullmatch(body) is not None
        or body.lower() in _SPARK_KEEP_WORDS
        or _is_sql_string(body)
    )
    if keep:
        return raw
    lead = raw[: len(raw) - len(raw.lstrip())]
    trail = raw[len(raw.rstrip()) :]
    # Spark SQL strings escape with backslashes.
    return lead + "'" + body.replace("\\", "\\\\").replace("'", "\\'") + "'" + trail


def _spark_attribute_sql(attribute: str) -> str:
    name = attribute.split("#", 1)[0]
    return ".".join(f"`{part}`" for part in name.split("."))


def _is_sql_string(body: str) -> bool:
    if len(body) < 2 or body[0] != "'" or body[-1] != "'":
        return False
    inner = body[1:-1].replace("\\\\", "").replace("\\'", "").replace("''", "")
    return "'" not in inner


# --------------------------------------------------------------------------- normalisation


def _normalise(expression: exp.Expression) -> exp.Expression:
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


def _identifier(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=not _bare_identifier_ok(name))


def _columns_of(expression: exp.Expression) -> frozenset[str]:
    return frozenset(c.name.lower() for c in expression.find_all(exp.Column) if c.name)


# --------------------------------------------------------------------------- expression cache

_EXPRESSIONS: dict[str, exp.Expression] = {}


def _remember(sql: str, expression: exp.Expression) -> None:
    if len(_EXPRESSIONS) >= _EXPRESSION_CACHE_SIZE:
        _EXPRESSIONS.clear()  # crude but bounded; entries are rebuilt from `sql` on demand
    _EXPRESSIONS[sql] = expression


def expression_of(pred: Predicate | None) -> exp.Expression | None:
    """The parsed sqlglot expression of a predicate (shared: copy before mutating)."""
    if pred is None or pred.sql is None:
        return None
    expression = _EXPRESSIONS.get(pred.sql)
    if expression is None:
        try:
            expression = sqlglot.parse_one(pred.sql, into=exp.Condition)
        except Exception:  # a Predicate built by hand with bad sql
            return None
        _remember(pred.sql, expression)
    return expression


def _predicate_from(expression: exp.Expression) -> Predicate:
    sql = expression.sql()
    _remember(sql, expression)
    return Predicate(raw=sql, sql=sql, columns=_columns_of(expression))


# =========================================================================== AST helpers


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _conjuncts(expression: exp.Expression) -> list[exp.Expression]:
    """Top-level AND terms, parentheses looked through."""
    out: list[exp.Expression] = []
    stack = [expression]
    while stack:
        node = _unparen(stack.pop())
        if isinstance(node, exp.And):
            stack.extend((node.expression, node.this))
        else:
            out.append(node)
    return out


def _disjuncts(expression: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    stack = [expression]
    while stack:
        node = _unparen(stack.pop())
        if isinstance(node, exp.Or):
            stack.extend((node.expression, node.this))
        else:
            out.append(node)
    return out


@dataclass(frozen=True, slots=True)
class _ColumnRef:
    name: str  # lower-cased
    qualifier: str | None  # table alias as written, if any


def _column_side(node: exp.Expression) -> _ColumnRef | None:
    """The column under casts (`CAST(c AS T)`, `arrow_cast(c, 'T')`), if the node is one."""
    node = _unparen(node)
    while True:
        if isinstance(node, exp.Cast):
            node = _unparen(node.this)
        elif (
            isinstance(node, exp.Anonymous)
            and str(node.this).lower() == "arrow_cast"
            and node.expressions
        ):
            node = _unparen(node.expressions[0])
        else:
            break
    if isinstance(node, exp.Column) and node.name:
        return _ColumnRef(node.name.lower(), node.table or None)
    return None


_NOT_LITERAL = object()

_DATE_TYPES = {exp.DataType.Type.DATE, exp.DataType.Type.DATE32}
_STRING_TYPES = {
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.TEXT,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.NCHAR,
}


def _literal(node: exp.Expression) -> tuple[Any, str] | object:
    """(value, hint) for a literal, hint in number/string/date/timestamp/bool/null.

    Numbers become Decimal, everything else keeps its text; casts of literals keep the
    literal and turn the cast type into the hint. Returns _NOT_LITERAL otherwise.
    """
    node = _unparen(node)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this, "string"
        return _number(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if inner is not _NOT_LITERAL and inner[1] == "number":  # type: ignore[index]
            return -inner[0], "number"  # type: ignore[index]
        return _NOT_LITERAL
    if isinstance(node, exp.Null):
        return None, "null"
    if isinstance(node, exp.Boolean):
        return bool(node.this), "bool"
    if isinstance(node, exp.Cast):
        inner = _literal(node.this)
        if inner is _NOT_LITERAL:
            return _NOT_LITERAL
        return inner[0], _hint_of_type(node.args.get("to"), inner[1])  # type: ignore[index]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "arrow_cast":
        return _literal(node.expressions[0]) if node.expressions else _NOT_LITERAL
    return _NOT_LITERAL


def _number(text: str) -> tuple[Decimal, str] | object:
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return _NOT_LITERAL
    return (value, "number") if value.is_finite() else _NOT_LITERAL


def _hint_of_type(data_type: exp.DataType | None, fallback: str) -> str:
    if not isinstance(data_type, exp.DataType):
        return fallback
    kind = data_type.this
    if kind in _DATE_TYPES:
        return "date"
    if kind in exp.DataType.TEMPORAL_TYPES:
        return "timestamp"
    if kind in exp.DataType.NUMERIC_TYPES:
        return "number"
    if kind == exp.DataType.Type.BOOLEAN:
        return "bool"
    if kind in _STRING_TYPES:
        return "string"
    return fallback


_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
_BINARY_OPS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}


@dataclass(frozen=True, slots=True)
class _Comparison:
    """`column op literal(s)`: op in = != < <= > >= <=> in is_null between like starts_with."""

    column: _ColumnRef
    op: str
    values: tuple[Any, ...]
    hint: str | None  # kind of the (first non-null) literal
    negated: bool = False  # NOT LIKE


def _as_comparison(node: exp.Expression) -> _Comparison | None:
    node = _unparen(node)
    op = _BINARY_OPS.get(type(node))
    if op is not None:
        column, other = _column_side(node.this), node.expression
        if column is None:
            column, other, op = _column_side(node.expression), node.this, _FLIPPED[op]
        return _comparison(column, op, [other])
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            return None
        return _comparison(_column_side(node.this), "in", node.expressions)
    if isinstance(node, exp.Is) and isinstance(_unparen(node.expression), exp.Null):
        return _comparison(_column_side(node.this), "is_null", [])
    if isinstance(node, exp.Between):
        return _comparison(
            _column_side(node.this), "between", [node.args.get("low"), node.args.get("high")]
        )
    if isinstance(node, exp.Like):
        found = _comparison(_column_side(node.this), "like", [node.expression])
        if found and node.args.get("negate"):
            found = replace(found, negated=True)
        return found if found and isinstance(found.values[0], str) else None
    if isinstance(node, exp.StartsWith):
        found = _comparison(_column_side(node.this), "starts_with", [node.expression])
        return found if found and isinstance(found.values[0], str) else None
    return None


def _comparison(
    column: _ColumnRef | None, op: str, operands: Iterable[exp.Expression | None]
) -> _Comparison | None:
    if column is None:
        return None
    values: list[Any] = []
    hint: str | None = None
    for operand in operands:
        found = _literal(operand) if operand is not None else _NOT_LITERAL
        if found is _NOT_LITERAL:
            return None
        value, kind = found  # type: ignore[misc]
        values.append(value)
        if hint is None and kind != "null":
            hint = kind
    return _Comparison(column, op, tuple(values), hint)


# =========================================================================== partition scope


def partition_part(pred: Predicate | None, partition_columns: list[str]) -> Predicate | None:
    """The top-level conjuncts that reference only partition columns, ANDed; None if none.

    A disjunct mixing partition and other columns (`p = 1 OR x = 2`) does not narrow the
    partitions read, so it is left out. The whole predicate is returned when all of it is
    the partition part (keeping its raw text).
    """
    expression = expression_of(pred)
    if expression is None or not partition_columns:
        return None
    wanted = {c.lower() for c in partition_columns}
    terms = _conjuncts(expression)
    kept = [t for t in terms if (cols := _columns_of(t)) and cols <= wanted]
    if not kept:
        return None
    if len(kept) == len(terms):
        return pred
    return _predicate_from(exp.and_(*(t.copy() for t in kept), copy=False))


def names_partition_column(pred: Predicate | None, partition_columns: list[str]) -> bool:
    if pred is None:
        return False
    return bool(pred.columns & {c.lower() for c in partition_columns})


# =========================================================================== evaluation
#
# Three-valued SQL logic over a *set* of possible outcomes: a bit mask of TRUE, FALSE and
# NULL. A leaf says which outcomes some row of the file could produce; AND/OR/NOT combine
# masks pointwise. A file may match iff TRUE is possible. This is sound (never prunes a file
# that could match) and exact when every value is known (partition values).

_T, _F, _N = 1, 2, 4
_ANY = _T | _F | _N


def _kleene_and(a: int, b: int) -> int:
    return _F if _F in (a, b) else _N if _N in (a, b) else _T


def _kleene_or(a: int, b: int) -> int:
    return _T if _T in (a, b) else _N if _N in (a, b) else _F


def _lift(op: Callable[[int, int], int]) -> list[list[int]]:
    table = [[0] * 8 for _ in range(8)]
    for a in range(8):
        for b in range(8):
            for x in (_T, _F, _N):
                for y in (_T, _F, _N):
                    if a & x and b & y:
                        table[a][b] |= op(x, y)
    return table


_AND = _lift(_kleene_and)
_OR = _lift(_kleene_or)
_NOT = [((m & _T) and _F) | ((m & _F) and _T) | (m & _N) for m in range(8)]


@dataclass(frozen=True, slots=True)
class _Facts:
    """What is known about one column's values in a file.

    low/high: raw bounds (log strings or stats JSON values), None when unknown.
    nulls/values: whether some row may be null / non-null. exact: low == high is every value.
    """

    low: Any
    high: Any
    nulls: bool
    values: bool
    exact: bool


def _partition_value_facts(value: Any) -> _Facts | None:
    """Facts of a partition value from the log; None (unknown) for values that are not text."""
    if value is None or isinstance(value, str):
        return _partition_facts(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _partition_facts(str(value))
    return None


@functools.lru_cache(maxsize=65536)
def _partition_facts(value: str | None) -> _Facts:
    # Delta writes a null partition as null; an empty string means null too.
    if value is None or value == "":
        return _Facts(None, None, nulls=True, values=False, exact=True)
    return _Facts(value, value, nulls=False, values=True, exact=True)


_Lookup = Callable[[str], "_Facts | None"]
_Evaluator = Callable[[_Lookup], int]


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


def _kind_for(comparison: _Comparison, types: dict[str, str]) -> str | None:
    column_kind = _kind_of_delta_type(types.get(comparison.column.name))
    hint = comparison.hint
    if column_kind is None:
        return hint or "string"
    if column_kind == "string" and hint == "number":
        return "number"  # Spark casts the string side to a number
    return None if column_kind == "opaque" else column_kind


_BAD = object()


@functools.lru_cache(maxsize=1 << 17, typed=True)
def _coerce(kind: str, raw: Any) -> Any:
    """A comparable Python value of `kind` from a log string, stats value or literal."""
    try:
        if kind == "number":
            if isinstance(raw, bool):
                return _BAD
            if isinstance(raw, float):
                raw = repr(raw)
            value = Decimal(str(raw).strip())
            return value if value.is_finite() else _BAD
        if kind == "string":
            return raw if isinstance(raw, str) else _BAD
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            return {"true": True, "false": False}.get(text, _BAD)
        if not isinstance(raw, str):
            return _BAD
        if kind == "date":
            return _parse_date(raw.strip())
        if kind == "timestamp":
            return dt.datetime.fromisoformat(raw.strip())
    except (InvalidOperation, ValueError, OverflowError):
        return _BAD
    return _BAD


def _parse_date(text: str) -> Any:
    if len(text) == 10:
        return dt.date.fromisoformat(text)
    moment = dt.datetime.fromisoformat(text)
    # A date compared with a timestamp literal: only midnight is the same instant.
    return moment.date() if moment.time() == dt.time(0) and moment.tzinfo is None else _BAD


def _bounds(facts: _Facts, kind: str) -> tuple[Any, Any]:
    low = _coerce(kind, facts.low) if isinstance(facts.low, str | int | float | bool) else None
    high = _coerce(kind, facts.high) if isinstance(facts.high, str | int | float | bool) else None
    low = None if low is _BAD else low
    high = None if high is _BAD else high
    if not facts.exact and high is not None:
        # Stats bounds are rounded: Delta truncates long strings (max is then no upper bound)
        # and writes timestamps in milliseconds.
        if kind == "string" and len(high) >= 32:
            high = None
        elif kind == "timestamp":
            high = high + dt.timedelta(milliseconds=1)
    return low, high


def _eq_bits(low: Any, high: Any, value: Any) -> int:
    may_true = (low is None or low <= value) and (high is None or value <= high)
    all_equal = low is not None and high is not None and low == value == high
    return (_T if may_true else 0) | (0 if all_equal else _F)


def _range_bits(op: str, low: Any, high: Any, value: Any) -> int:
    if op == "<":
        return (_T if low is None or low < value else 0) | (
            _F if high is None or high >= value else 0
        )
    if op == "<=":
        return (_T if low is None or low <= value else 0) | (
            _F if high is None or high > value else 0
        )
    if op == ">":
        return (_T if high is None or high > value else 0) | (
            _F if low is None or low <= value else 0
        )
    return (_T if high is None or high >= value else 0) | (_F if low is None or low < value else 0)


def _like_regex(pattern: str) -> re.Pattern[str]:
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


def _like_prefix(pattern: str) -> str:
    prefix = []
    for ch in pattern:
        if ch in "%_\\":
            break
        prefix.append(ch)
    return "".join(prefix)


def _compile_leaf(comparison: _Comparison, types: dict[str, str]) -> _Evaluator:
    kind = _kind_for(comparison, types)
    if kind is None:
        return _constant(_ANY)
    leaf = _compile_leaf_as(comparison, kind)
    if comparison.column.name in types or comparison.hint != "string" or comparison.op == "like":
        return leaf
    # Column type unknown and a string literal that also reads as a number or a timestamp
    # (`n > '10'`, `ts = '2024-01-01T10:00:00'`): the column may be either, so the file may
    # match if it matches under either reading.
    literals = [v for v in comparison.values if v is not None]
    readings = [leaf] + [
        _compile_leaf_as(comparison, other)
        for other in ("number", "timestamp")
        if literals and all(_coerce(other, v) is not _BAD for v in literals)
    ]
    if len(readings) == 1:
        return leaf
    return lambda lookup: functools.reduce(operator.or_, (r(lookup) for r in readings))


def _compile_leaf_as(comparison: _Comparison, kind: str) -> _Evaluator:
    name, op = comparison.column.name, comparison.op
    if op == "is_null":
        return lambda lookup: _null_test_bits(lookup(name))
    if op in ("like", "starts_with"):
        return _compile_like(comparison, kind)
    non_null = [v for v in comparison.values if v is not None]
    if op != "in" and len(non_null) < len(comparison.values):
        # Comparing with NULL gives NULL; `<=>` NULL is IS NULL.
        if op == "<=>":
            return lambda lookup: _null_test_bits(lookup(name))
        return _constant(_N)
    literals = [_coerce(kind, v) for v in non_null]
    if any(v is _BAD for v in literals):
        return _constant(_ANY)
    test = _value_test(op, literals)

    def leaf(lookup: _Lookup) -> int:
        facts = lookup(name)
        if facts is None:
            return _ANY
        mask = _N if facts.nulls else 0
        if op == "<=>":
            mask = _F if facts.nulls else 0  # NULL <=> x is FALSE, never NULL
        if not facts.values:
            return mask
        low, high = _bounds(facts, kind)
        try:
            return mask | test(low, high)
        except TypeError:  # e.g. naive vs aware timestamps
            return mask | _T | _F

    return leaf


def _value_test(op: str, literals: list[Any]) -> Callable[[Any, Any], int]:
    if op in ("=", "<=>"):
        return lambda low, high: _eq_bits(low, high, literals[0])
    if op == "!=":
        return lambda low, high: _NOT[_eq_bits(low, high, literals[0])]
    if op == "in":

        def in_bits(low: Any, high: Any) -> int:
            bits = 0
            for value in literals:
                bits |= _eq_bits(low, high, value) & _T
            exact_member = low is not None and low == high and low in literals
            return bits | (0 if exact_member else _F)

        return in_bits
    if op == "between":
        low_literal, high_literal = literals

        def between_bits(low: Any, high: Any) -> int:
            return _AND[_range_bits(">=", low, high, low_literal)][
                _range_bits("<=", low, high, high_literal)
            ]

        return between_bits
    return lambda low, high: _range_bits(op, low, high, literals[0])


def _null_test_bits(facts: _Facts | None) -> int:
    if facts is None:
        return _T | _F
    return (_T if facts.nulls else 0) | (_F if facts.values else 0)


def _compile_like(comparison: _Comparison, kind: str) -> _Evaluator:
    if kind != "string":
        return _constant(_ANY)
    pattern = str(comparison.values[0])
    if comparison.op == "starts_with":
        prefix, regex = pattern, re.compile(re.escape(pattern) + ".*", re.DOTALL)
    else:
        prefix, regex = _like_prefix(pattern), _like_regex(pattern)
    name, negated = comparison.column.name, comparison.negated

    def leaf(lookup: _Lookup) -> int:
        facts = lookup(name)
        if facts is None:
            return _ANY
        mask = _N if facts.nulls else 0
        if not facts.values:
            return mask
        low, high = _bounds(facts, "string")
        if facts.exact and isinstance(low, str):
            bits = _T if regex.fullmatch(low) else _F
        else:
            below = high is not None and high < prefix
            above = low is not None and low > prefix and not low.startswith(prefix)
            bits = _F if (prefix and (below or above)) else _T | _F
        return mask | (_NOT[bits] if negated else bits)

    return leaf


def _constant(mask: int) -> _Evaluator:
    return lambda lookup: mask


def _compile(node: exp.Expression, types: dict[str, str]) -> _Evaluator:
    node = _unparen(node)
    if isinstance(node, exp.And):
        return _compile_connective([_compile(t, types) for t in _conjuncts(node)], _AND, _F)
    if isinstance(node, exp.Or):
        return _compile_connective([_compile(t, types) for t in _disjuncts(node)], _OR, _T)
    if isinstance(node, exp.Not):
        inner = _compile(node.this, types)
        return lambda lookup: _NOT[inner(lookup)]
    if isinstance(node, exp.Boolean):
        return _constant(_T if node.this else _F)
    if isinstance(node, exp.Null):
        return _constant(_N)
    comparison = _as_comparison(node)
    if comparison is not None:
        return _compile_leaf(comparison, types)
    column = _column_side(node)
    if column is not None and isinstance(node, exp.Column):  # a boolean column on its own
        return _compile_leaf(_Comparison(column, "=", (True,), "bool"), types)
    return _constant(_ANY)


def _compile_connective(
    children: list[_Evaluator], table: list[list[int]], decisive: int
) -> _Evaluator:
    def evaluate(lookup: _Lookup) -> int:
        mask = _T if decisive == _F else _F  # the identity of AND / OR
        for child in children:
            mask = table[mask][child(lookup)]
            if mask == decisive:
                break
        return mask

    return evaluate


def _types_key(types: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k).lower(), str(v)) for k, v in (types or {}).items()))


@functools.lru_cache(maxsize=8192)
def _compiled(sql: str, types_key: tuple[tuple[str, str], ...]) -> _Evaluator:
    expression = expression_of(Predicate(raw=sql, sql=sql, columns=frozenset()))
    if expression is None:
        return _constant(_ANY)
    return _compile(expression, dict(types_key))


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
    evaluate = _compiled(part.sql, _types_key(partition_types))
    names = {c.lower(): c for c in partition_columns}

    def may_match(values: dict[str, str | None]) -> bool:
        def lookup(name: str) -> _Facts | None:
            key = names.get(name, name)
            if key in values:
                return _partition_value_facts(values[key])
            for other, value in values.items():  # tolerate a differently-cased key
                if str(other).lower() == name:
                    return _partition_value_facts(value)
            return None

        return bool(evaluate(lookup) & _T)

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

    def lookup(name: str) -> _Facts | None:
        if name in partitions:
            return _partition_value_facts(partitions[name])
        if name not in minimums and name not in maximums and name not in null_counts:
            return None
        nulls = null_counts.get(name)
        known_nulls = isinstance(nulls, int) and not isinstance(nulls, bool)
        known_records = isinstance(records, int) and not isinstance(records, bool)
        return _Facts(
            minimums.get(name),
            maximums.get(name),
            nulls=not known_nulls or nulls > 0,
            values=not (known_nulls and known_records) or nulls < records,
            exact=False,
        )

    evaluate = _compiled(pred.sql, _types_key(column_types))
    return bool(evaluate(lookup) & _T)


def _lowered(mapping: Any) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        return {}
    return {str(k).lower(): v for k, v in mapping.items()}


# =========================================================================== pyarrow


class _Unsupported(Exception):
    pass


def to_arrow_expression(
    pred: Predicate | None, schema: pyarrow.Schema
) -> pyarrow.compute.Expression | None:
    """The predicate as a pyarrow.compute expression over `schema`; None if unsupported.

    Columns are matched case-insensitively; literals are cast to the field's type. Casts on
    columns are looked through (the literal is cast to the column's type instead).
    """
    import pyarrow as pa

    expression = expression_of(pred)
    if expression is None:
        return None
    fields = {field.name.lower(): field for field in schema}
    try:
        return _arrow(expression, fields)
    except (_Unsupported, pa.ArrowException, TypeError, ValueError, ArithmeticError):
        return None


def _arrow(node: exp.Expression, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    node = _unparen(node)
    if isinstance(node, exp.And):
        terms = [_arrow(t, fields) for t in _conjuncts(node)]
        return functools.reduce(lambda a, b: a & b, terms)
    if isinstance(node, exp.Or):
        terms = [_arrow(t, fields) for t in _disjuncts(node)]
        return functools.reduce(lambda a, b: a | b, terms)
    if isinstance(node, exp.Not):
        return ~_arrow(node.this, fields)
    if isinstance(node, exp.Boolean):
        return pc.scalar(bool(node.this))
    if type(node) in _BINARY_OPS and type(node) is not exp.NullSafeEQ:
        left, right = _column_side(node.this), _column_side(node.expression)
        if left is not None and right is not None:
            return _arrow_compare(
                _BINARY_OPS[type(node)],
                _arrow_field(left, fields),
                _arrow_field(right, fields),
            )
    comparison = _as_comparison(node)
    if comparison is not None:
        return _arrow_comparison(comparison, fields)
    column = _column_side(node)
    if isinstance(node, exp.Column) and column is not None:
        field = fields.get(column.name)
        if field is not None and str(field.type) == "bool":
            return pc.field(field.name)
    raise _Unsupported(type(node).__name__)


def _arrow_field(column: _ColumnRef, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    field = fields.get(column.name)
    if field is None:
        raise _Unsupported(f"no column {column.name}")
    return pc.field(field.name)


def _arrow_compare(op: str, left: Any, right: Any) -> Any:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _arrow_comparison(comparison: _Comparison, fields: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    field = fields.get(comparison.column.name)
    if field is None:
        raise _Unsupported(f"no column {comparison.column.name}")
    target = pc.field(field.name)
    op = comparison.op
    if op == "is_null":
        return target.is_null()
    if op in ("like", "starts_with"):
        pattern = str(comparison.values[0])
        found = (
            pc.starts_with(target, pattern=pattern)
            if op == "starts_with"
            else pc.match_like(target, pattern=pattern)
        )
        return ~found if comparison.negated else found
    if op == "<=>" or any(v is None for v in comparison.values) and op != "in":
        raise _Unsupported("comparison with NULL")
    values = [_arrow_scalar(v, field.type) for v in comparison.values if v is not None]
    if op == "in":
        import pyarrow as pa

        return target.isin(pa.array([v.as_py() for v in values], type=field.type))
    if op == "between":
        return (target >= pc.scalar(values[0])) & (target <= pc.scalar(values[1]))
    return _arrow_compare(op, target, pc.scalar(values[0]))


def _arrow_scalar(value: Any, arrow_type: Any) -> Any:
    import pyarrow as pa

    if isinstance(value, Decimal):
        if pa.types.is_integer(arrow_type):
            if value != value.to_integral_value():
                raise _Unsupported("fractional literal for an integer column")
            value = int(value)
        elif pa.types.is_floating(arrow_type):
            value = float(value)
    if isinstance(value, str) and pa.types.is_timestamp(arrow_type):
        moment = dt.datetime.fromisoformat(value.strip())
        if (moment.tzinfo is None) != (arrow_type.tz is None):
            raise _Unsupported("timestamp literal and column differ in time zone awareness")
        return pa.scalar(moment, type=arrow_type)
    return pa.scalar(value).cast(arrow_type)


# =========================================================================== MERGE conditions

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
    return not any(_pins_target_columns(t, wanted, alias) for t in _conjuncts(expression))


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
        for term in _conjuncts(expression):
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
    terms = [term.copy() for term in _conjuncts(expression)]
    return exp.and_(*terms, *additions, copy=False).sql()


def _pin(column: str, value: str | None, alias: str | None) -> exp.Expression:
    ref = exp.Column(this=_identifier(column), table=_identifier(alias) if alias else None)
    if value is None:
        return exp.Is(this=ref, expression=exp.Null())
    return exp.EQ(this=ref, expression=exp.Literal.string(str(value)))


# =========================================================================== disjointness


@dataclass(frozen=True, slots=True)
class _Range:
    """The values one predicate admits for one column.

    values: a finite set of non-null values, or None for "not a finite set". low/high: bounds
    (None = unbounded). excluded: values ruled out. null/non_null: whether NULL / some non-null
    value is admitted.
    """

    values: frozenset | None = None
    low: Any = None
    low_inclusive: bool = True
    high: Any = None
    high_inclusive: bool = True
    excluded: frozenset = frozenset()
    null: bool = True
    non_null: bool = True


_EVERYTHING = _Range()


def disjoint(a: Predicate | None, b: Predicate | None, columns: list[str]) -> bool | None:
    """Do `a` and `b` provably select disjoint values of at least one of `columns`?

    True: on some column the value ranges cannot meet (`date < '2010-01-01'` vs
    `date > '2010-01-01'`). False: on every column they can meet. None: unknown, because a
    predicate is unparsable or restricts a column in a way we do not model (`LIKE`,
    functions) and nothing else proves disjointness.
    """
    first, second = expression_of(a), expression_of(b)
    if first is None or second is None or not columns:
        return None
    verdicts = [_disjoint_on(first, second, column.lower()) for column in columns]
    if True in verdicts:
        return True
    return None if None in verdicts else False


def _disjoint_on(first: exp.Expression, second: exp.Expression, column: str) -> bool | None:
    ranges_a, approximate_a = _ranges(first, column)
    ranges_b, approximate_b = _ranges(second, column)
    try:
        empty = _empty(ranges_a + ranges_b)
    except TypeError:  # values of incomparable kinds
        return None
    if empty:
        return True
    return None if approximate_a or approximate_b else False


def _ranges(expression: exp.Expression, column: str) -> tuple[list[_Range], bool]:
    """Constraints one predicate's conjuncts put on `column`; flag if some were not modelled."""
    ranges: list[_Range] = []
    approximate = False
    for term in _conjuncts(expression):
        columns = _columns_of(term)
        if column not in columns:
            continue
        found = _range_of(term, column) if columns == {column} else None
        if found is None:
            approximate = True  # ignoring a conjunct only widens the range: still sound
        else:
            ranges.append(found)
    return ranges, approximate


def _range_of(node: exp.Expression, column: str) -> _Range | None:
    node = _unparen(node)
    if isinstance(node, exp.Or):
        parts = [_range_of(t, column) for t in _disjuncts(node)]
        if any(p is None for p in parts):
            return None
        try:
            return functools.reduce(_union, parts)  # type: ignore[arg-type]
        except TypeError:
            return None
    if isinstance(node, exp.Not):
        inner = _as_comparison(node.this)
        if inner is None or inner.column.name != column:
            return None
        if inner.op == "is_null":
            return _Range(null=False)
        if inner.op in ("=", "in") and all(v is not None for v in inner.values):
            return _Range(
                excluded=frozenset(_sortable(v, inner.hint) for v in inner.values), null=False
            )
        return None
    comparison = _as_comparison(node)
    if comparison is None or comparison.column.name != column:
        return None
    return _comparison_range(comparison)


def _comparison_range(comparison: _Comparison) -> _Range | None:
    op, hint = comparison.op, comparison.hint
    if op == "is_null":
        return _Range(values=frozenset(), non_null=False)
    if op in ("like", "starts_with") or (op != "in" and None in comparison.values):
        return None
    values = [_sortable(v, hint) for v in comparison.values if v is not None]
    if op in ("=", "<=>", "in"):
        return _Range(values=frozenset(values), null=False)
    if op == "!=":
        return _Range(excluded=frozenset(values), null=False)
    if op == "between":
        return _Range(low=values[0], high=values[1], null=False)
    if op in ("<", "<="):
        return _Range(high=values[0], high_inclusive=op == "<=", null=False)
    return _Range(low=values[0], low_inclusive=op == ">=", null=False)


def _sortable(value: Any, hint: str | None) -> Any:
    """Literals made comparable: ISO dates and timestamps as naive datetimes."""
    if (
        isinstance(value, str)
        and hint in ("string", "date", "timestamp")
        and _looks_temporal(value)
    ):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return value
        if moment.tzinfo is not None:
            moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
        return moment
    return value


def _looks_temporal(text: str) -> bool:
    text = text.strip()
    return len(text) >= 10 and text[:4].isdigit() and text[4] == "-" and text[7] == "-"


def _align(x: Any, y: Any) -> tuple[Any, Any]:
    """Bring a string to the other side's kind (`5` vs `'5'`), as SQL's implicit casts do."""
    if type(x) is type(y):
        return x, y
    if isinstance(x, str):
        return _convert_like(x, y), y
    if isinstance(y, str):
        return x, _convert_like(y, x)
    return x, y


def _convert_like(text: str, other: Any) -> Any:
    try:
        if isinstance(other, Decimal):
            return Decimal(text.strip())
        if isinstance(other, dt.datetime):
            return dt.datetime.fromisoformat(text.strip())
    except (InvalidOperation, ValueError):
        pass
    raise TypeError("incomparable literals")


def _compare(x: Any, y: Any) -> int:
    x, y = _align(x, y)
    return (x > y) - (x < y)


def _same(x: Any, y: Any) -> bool:
    try:
        return _compare(x, y) == 0
    except TypeError:
        if isinstance(x, str) != isinstance(y, str):
            raise
        return False


def _admits(constraint: _Range, value: Any) -> bool:
    if constraint.values is not None and not any(_same(value, v) for v in constraint.values):
        return False
    if constraint.low is not None:
        order = _compare(value, constraint.low)
        if order < 0 or (order == 0 and not constraint.low_inclusive):
            return False
    if constraint.high is not None:
        order = _compare(value, constraint.high)
        if order > 0 or (order == 0 and not constraint.high_inclusive):
            return False
    return not any(_same(value, v) for v in constraint.excluded)


def _empty(constraints: list[_Range]) -> bool:
    """Whether no value (NULL included) satisfies all constraints at once."""
    if all(c.null for c in constraints):
        return False
    if not all(c.non_null for c in constraints):
        return True
    finite = [c.values for c in constraints if c.values is not None]
    if finite:
        smallest = min(finite, key=len)
        return not any(all(_admits(c, v) for c in constraints) for v in smallest)
    low, low_inclusive, high, high_inclusive = None, True, None, True
    for c in constraints:
        if c.low is not None and (low is None or _compare(c.low, low) >= 0):
            same = low is not None and _compare(c.low, low) == 0
            low_inclusive = (low_inclusive and c.low_inclusive) if same else c.low_inclusive
            low = c.low
        if c.high is not None and (high is None or _compare(c.high, high) <= 0):
            same = high is not None and _compare(c.high, high) == 0
            high_inclusive = (high_inclusive and c.high_inclusive) if same else c.high_inclusive
            high = c.high
    if low is None or high is None:
        return False
    order = _compare(low, high)
    if order > 0:
        return True
    if order == 0:
        point_excluded = any(_same(low, v) for c in constraints for v in c.excluded)
        return not (low_inclusive and high_inclusive) or point_excluded
    return False


def _union(a: _Range, b: _Range) -> _Range:
    """A range holding both (the hull when they are not both finite sets)."""
    null = a.null or b.null
    if not a.non_null:
        return replace(b, null=null)
    if not b.non_null:
        return replace(a, null=null)
    if a.values is not None and b.values is not None and _plain(a) and _plain(b):
        return _Range(values=a.values | b.values, null=null)
    low_a, high_a = _hull(a)
    low_b, high_b = _hull(b)
    low = None if low_a is None or low_b is None else min(low_a, low_b, key=_Key)
    high = None if high_a is None or high_b is None else max(high_a, high_b, key=_Key)
    return _Range(low=low, high=high, null=null)


def _plain(r: _Range) -> bool:
    return r.low is None and r.high is None and not r.excluded


def _hull(r: _Range) -> tuple[Any, Any]:
    if r.values is not None and r.values:
        ordered = sorted(r.values, key=_Key)
        return ordered[0], ordered[-1]
    return r.low, r.high


@functools.total_ordering
class _Key:
    """Sort key using _compare (raises TypeError on incomparable values)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and _compare(self.value, other.value) == 0

    def __lt__(self, other: _Key) -> bool:
        return _compare(self.value, other.value) < 0

    __hash__ = None  # type: ignore[assignment]
