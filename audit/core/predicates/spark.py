"""Spark's `simpleString` predicates rewritten as Spark SQL that sqlglot can parse.

Spark prints each column with its expression id (`date#12`) and literals without quotes
(`(date#12 = 2024-01-02)`, `(s#2 = a b)`). This lexes that text, quotes the bare literals and
backticks the attribute names; the expression ids are dropped.
"""

from __future__ import annotations

import re

# A Spark attribute reference: `name#123` (L suffix for longs), maybe qualified (`t.date#12`).
# Spark prints every column with its expression id, so this also tells the dialect apart.
SPARK_ATTRIBUTE = re.compile(r"(?<![\w#`'])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*#\d+L?(?![\w#])")

# Lexer for quoting Spark's bare literals. Spark prints binary operators as `(l OP r)` with
# spaces around OP, functions as `name(args)` and casts as `cast(x as type)`. Everything
# between these delimiters that holds no attribute reference is a literal or a name.
_SPARK_TOKENS = re.compile(
    r"(?P<attr>" + SPARK_ATTRIBUTE.pattern + r")"
    r"|(?P<postfix>\s+IS(?:\s+NOT)?\s+NULL\b)"
    r"|(?P<binary>\s+(?:AND|OR|NOT\s+IN|IN|NOT\s+LIKE|LIKE|RLIKE|ILIKE"
    r"|<=>|>=|<=|!=|<>|==|=|<|>|\+|-|\*|/|%|&|\||\^)\s+)"
    r"|(?P<cast_as>\s+(?:as|AS)\s+)"
    r"|(?P<prefix>(?<![\w#])NOT\s+)"
    r"|(?P<punct>[(),])"
)
_SPARK_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPARK_KEEP_WORDS = frozenset({"null", "true", "false"})


def spark_to_sql(text: str) -> str:
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
