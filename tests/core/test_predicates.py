"""Predicates: parsing the three dialects (Spark, delta-rs, plain SQL), hostile text, round trips,
the parse cache and its speed (partition scope, pruning, pyarrow, MERGE, disjointness:
test_predicate_scope.py).

Real inputs: the predicates Spark wrote into the copied Delta test tables, and a table written
with the `deltalake` package (tests/support/predicate_logs.py).
"""

from __future__ import annotations

import random
import time
from decimal import Decimal
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates import (
    detect_target_alias,
    disjoint,
    expression_of,
    merge_condition_lacks_partition_literal,
    parse_predicate,
    parsing,
    partition_matcher,
    rewrite_merge_condition,
    stats_may_match,
    to_arrow_expression,
)
from audit.core.predicates.comparisons import literal_of
from tests.support.paths import DELTA_TABLES
from tests.support.predicate_logs import commit_info, log_actions, operations

TABLES = DELTA_TABLES


# =========================================================================== parsing: Spark


@pytest.mark.parametrize(
    ("raw", "sql", "columns"),
    [
        ('["((id#1904L >= 5) AND (id#1904L <= 9))"]', "id >= 5 AND id <= 9", {"id"}),
        ('["(col1#10915 = 16)"]', "col1 = 16", {"col1"}),
        ("(col2#477L = 2)", "col2 = 2", {"col2"}),
        ('["(id#480 < 50)"]', "id < 50", {"id"}),
        ('["(date#12 = 2024-01-02)"]', "date = '2024-01-02'", {"date"}),
        ('["(country#33 = US)"]', "country = 'US'", {"country"}),
        ("isnotnull(x#5)", "NOT x IS NULL", {"x"}),
        ("(isnull(x#5) OR (x#5 = 1))", "x IS NULL OR x = 1", {"x"}),
        ("(x#5 IN (1,2,3))", "x IN (1, 2, 3)", {"x"}),
        ("(x#5 IN (US, FR))", "x IN ('US', 'FR')", {"x"}),
        ('["(id#480L = cast(id#482 as bigint))"]', "id = CAST(id AS BIGINT)", {"id"}),
        ("StartsWith(col#3, abc)", "STARTS_WITH(col, 'abc')", {"col"}),
        ("NOT (a#1 = 1)", "NOT a = 1", {"a"}),
        ("true", "TRUE", set()),
        ('["(id#1 = 1)", "(p#2 = a)"]', "id = 1 AND p = 'a'", {"id", "p"}),
        (
            '["((a#1 = 1) OR (b#2 = 2))", "(c#3 = 3)"]',
            "(a = 1 OR b = 2) AND c = 3",
            {"a", "b", "c"},
        ),
        (
            '["(spark_catalog.delta.`/private/var/folders/T/spark-2434`.id IN (0, 180, 308))"]',
            "id IN (0, 180, 308)",
            {"id"},
        ),
        ("[\"`col2` LIKE 'data-2-%'\"]", "col2 LIKE 'data-2-%'", {"col2"}),
        (
            "((t.date#12 = s.date#40) AND (t.date#12 = 2024-01-02))",
            "t.date = s.date AND t.date = '2024-01-02'",
            {"date"},
        ),
        ("(select#1 = 1)", '"select" = 1', {"select"}),
    ],
)
def test_it_normalises_spark_simple_strings(raw: str, sql: str, columns: set[str]) -> None:
    pred = parse_predicate(raw)
    assert pred is not None and pred.error is None
    assert pred.raw == raw
    assert pred.sql == sql
    assert pred.columns == columns


@pytest.mark.parametrize(
    ("raw", "literal"),
    [
        ("(date#12 = 2024-01-02)", "2024-01-02"),  # a date, not 2024 - 1 - 2
        ("(name#1 = O'Brien)", "O'Brien"),
        ("(s#2 = a b)", "a b"),
        ("(ts#3 = 2024-01-02 10:00:00)", "2024-01-02 10:00:00"),
        ("(ts#3 = 2024-01-02 10:00:00.123456)", "2024-01-02 10:00:00.123456"),
        ("(path#4 = C:\\dir\\x)", "C:\\dir\\x"),
        ("(s#5 = )", ""),  # Spark prints the empty string as nothing
        ('(s#6 = say "hi")', 'say "hi"'),
        ("(s#7 = data-2-%)", "data-2-%"),
        ("(s#8 = 'quoted')", "quoted"),  # already a SQL string: kept as one
    ],
)
def test_it_reads_spark_bare_literals_as_strings(raw: str, literal: str) -> None:
    expression = expression_of(parse_predicate(raw))
    assert isinstance(expression, exp.EQ)
    assert isinstance(expression.expression, exp.Literal)
    assert expression.expression.is_string
    assert expression.expression.this == literal


@pytest.mark.parametrize(
    ("raw", "number"),
    [
        ("(x#5 = -3)", Decimal(-3)),
        ("(x#5 = -1.25)", Decimal("-1.25")),
        ("(x#5 = 0.5)", Decimal("0.5")),
        ("(x#5L = 12345678901234)", Decimal(12345678901234)),
        ("(x#5 = 1.0E10)", Decimal("1.0E10")),
    ],
)
def test_it_keeps_spark_numbers_numeric(raw: str, number: Decimal) -> None:
    expression = expression_of(parse_predicate(raw))
    assert isinstance(expression, exp.EQ)
    assert literal_of(expression.expression) == (number, "number")


def test_it_parses_every_predicate_the_copied_spark_logs_hold() -> None:
    seen = 0
    for table in sorted(p.parent for p in TABLES.glob("*/*/_delta_log")):
        schema_columns: set[str] = set()
        for _version, actions in log_actions(table):
            for action in actions:
                if "metaData" in action and action["metaData"].get("schemaString"):
                    schema = orjson.loads(action["metaData"]["schemaString"])
                    schema_columns |= {f["name"].lower() for f in schema["fields"]}
            raw = commit_info(actions).get("operationParameters", {}).get("predicate")
            if raw is None:
                continue
            pred = parse_predicate(raw)
            if raw == "[]":  # OPTIMIZE without a predicate
                assert pred is None
                continue
            seen += 1
            assert pred is not None and pred.error is None, (table.name, raw)
            assert "#" not in pred.sql
            assert pred.columns and pred.columns <= schema_columns, (table.name, raw)
    assert seen >= 40


def test_it_reads_merge_clause_predicates_from_a_real_spark_merge() -> None:
    table = TABLES / "golden" / "basic-with-inserts-merge"
    params = next(
        commit_info(actions)["operationParameters"]
        for _v, actions in log_actions(table)
        if commit_info(actions).get("operation") == "MERGE"
    )
    assert parse_predicate(params["predicate"]).sql == "id = CAST(id AS BIGINT)"
    clauses = orjson.loads(params["notMatchedBySourcePredicates"])
    assert parse_predicate(clauses[0]["predicate"]).sql == "id < 10"


# =========================================================================== parsing: delta-rs, SQL


@pytest.mark.parametrize(
    ("raw", "sql", "columns"),
    [
        ("d = '2024-01-02'::date", "d = CAST('2024-01-02' AS DATE)", {"d"}),
        ("arrow_cast(x, 'Int64') > 5", "ARROW_CAST(x, 'Int64') > 5", {"x"}),
        ("a != 1", "a <> 1", {"a"}),
        ("p = 'x' AND a > 3", "p = 'x' AND a > 3", {"p", "a"}),
        ('"quoted col" = 1', '"quoted col" = 1', {"quoted col"}),
        ('"Upper" = 1', '"Upper" = 1', {"upper"}),
        ("date < '2010-01-01'", "date < '2010-01-01'", {"date"}),
        (
            "t.country = 'US' AND t.date = '2024-01-01'",
            "t.country = 'US' AND t.date = '2024-01-01'",
            {"country", "date"},
        ),
        ("x BETWEEN 1 AND 5", "x BETWEEN 1 AND 5", {"x"}),
        ("x NOT IN (1, 2)", "NOT x IN (1, 2)", {"x"}),
        ("name NOT LIKE 'a%'", "name NOT LIKE 'a%'", {"name"}),
        ("TRUE", "TRUE", set()),
    ],
)
def test_it_parses_delta_rs_and_plain_sql(raw: str, sql: str, columns: set[str]) -> None:
    pred = parse_predicate(raw)
    assert pred is not None and pred.error is None
    assert (pred.sql, pred.columns) == (sql, columns)


def test_it_parses_the_predicates_deltalake_writes(delta_rs_table: Path) -> None:
    ops = operations(delta_rs_table)
    delete = parse_predicate(ops["DELETE"][0][1]["predicate"])
    assert delete.sql == "d = CAST('2024-01-02' AS DATE)" and delete.columns == {"d"}
    update = parse_predicate(ops["UPDATE"][0][1]["predicate"])
    assert update.sql == "country = 'US' AND id > 301" and update.columns == {"country", "id"}
    merge_params = ops["MERGE"][0][1]
    merge = parse_predicate(merge_params["mergePredicate"])
    assert merge.columns == {"id", "d"}
    assert detect_target_alias(merge) == "target"
    overwrite = parse_predicate(ops["WRITE"][-1][1]["predicate"])
    assert overwrite.error is None and overwrite.columns == {"d", "country"}


# =========================================================================== hostile input

HOSTILE = [
    "<script>alert(1)</script>",
    "((a = 1)",
    "a = 1)",
    "a = 'unterminated",
    "x = \x00",
    "\x00\x01\x02",
    "DROP TABLE x",
    "1; DROP TABLE x",
    "select * from t",
    "hello world",
    "(" * 5000 + "a = 1" + ")" * 5000,
    "(" * 10_000,
    "a = 1 AND " * 2000 + "b = 2",
    "#" * 10_000,
    "x#1" * 3000,
    "[1, 2, 3]",
    '[{"predicate": "a = 1"}]',
    "[not json",
    "\u202e = '\ud7ff'",
    "'; --",
    "a" * 300_000,
    "(id#1 = ))))",
    "(col#1 IN (",
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_it_never_raises_on_hostile_text(raw: str) -> None:
    pred = parse_predicate(raw)
    assert pred is not None and pred.raw == raw
    if pred.sql is None:
        assert pred.error and "\n" not in pred.error and len(pred.error) <= 200
    # Whatever came out, the downstream helpers must cope with it.
    matcher = partition_matcher(pred, ["a"], {"a": "integer"})
    assert matcher({"a": "1"}) in (True, False)
    assert stats_may_match(pred, {"numRecords": 1}, {}, {}) in (True, False)
    assert disjoint(pred, pred, ["a"]) in (True, False, None)
    assert to_arrow_expression(pred, pa.schema([("a", pa.int64())])) is None or pred.sql
    assert isinstance(rewrite_merge_condition(raw, {"a": "1"}, "t"), str)
    assert merge_condition_lacks_partition_literal(raw, ["a"]) in (True, False)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("x = \x00", "control characters"),
        ("(" * 500 + "a" + ")" * 500, "nests deeper"),
        ("a" * 300_000, "too long"),
        ("<script>", "not a SQL condition"),
        ([1, 2], "not text"),
        ({"a": 1}, "unsupported predicate value"),
        (42, "unsupported predicate value"),
    ],
)
def test_it_explains_why_it_could_not_parse(raw: object, error: str) -> None:
    pred = parse_predicate(raw)  # type: ignore[arg-type]
    assert pred is not None and pred.sql is None and error in pred.error


def test_it_survives_random_garbage() -> None:
    rng = random.Random(7)
    alphabet = "abc#12L()'\"`,=<>!-:%_ .[]{}\\\x00ANDORNOTIN\n"
    for _ in range(1500):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        pred = parse_predicate(raw)
        assert pred is None or pred.raw == raw
        partition_matcher(pred, ["a", "b"])({"a": "1", "b": None})
        stats_may_match(pred, {"numRecords": 3, "minValues": {"a": 1}}, {"b": "x"}, {})


@pytest.mark.parametrize("raw", [None, "", "   ", "[]", [], [""], '[""]', "[ ]"])
def test_it_reads_no_predicate_as_none(raw: object) -> None:
    assert parse_predicate(raw) is None  # type: ignore[arg-type]


# =========================================================================== cache, round trip

ROUND_TRIP = [
    '["((id#1904L >= 5) AND (id#1904L <= 9))"]',
    "(name#1 = O'Brien)",
    "(c#1 = C:\\dir)",
    "d = '2024-01-02'::date",
    "arrow_cast(x, 'Int64') > 5",
    '"quoted col" = 1 OR "select" = 2',
    "(select#1 = 1)",
    "NOT (a = 1 OR b IN ('x', 'y')) AND c IS NOT NULL",
    "isnotnull(x#5)",
    "x NOT BETWEEN 1 AND 2",
]


@pytest.mark.parametrize("raw", ROUND_TRIP)
def test_it_prints_sql_that_parses_back_to_the_same_tree(raw: str) -> None:
    pred = parse_predicate(raw)
    assert sqlglot.parse_one(pred.sql, into=exp.Condition) == expression_of(pred)


def test_it_caches_parses_and_rebuilds_evicted_expressions() -> None:
    raw = '["(date#12 = 2024-01-02)"]'
    first = parse_predicate(raw)
    assert parse_predicate(raw) is first
    as_list = parse_predicate(["(date#12 = 2024-01-02)"])
    assert as_list.sql == first.sql and as_list.raw == raw
    remembered = expression_of(first)
    parsing._EXPRESSIONS.clear()
    rebuilt = expression_of(first)
    assert rebuilt is not remembered and rebuilt == remembered
    assert expression_of(Predicate(raw="x", sql="((", columns=frozenset())) is None
    assert expression_of(None) is None


def test_it_parses_a_hundred_thousand_predicates_quickly(capsys: pytest.CaptureFixture) -> None:
    rng = random.Random(1)
    templates = [
        '["((id#{a}L >= {b}) AND (id#{a}L <= {c}))"]',
        '["(date#{a} = 2024-01-{d:02d})"]',
        "d = '2024-01-{d:02d}'::date AND x > {b}",
        "country = 'C{b}' AND date < '2010-01-{d:02d}'",
        '["(col1#{a} = {b})"]',
    ]
    distinct = [
        templates[i % 5].format(
            a=rng.randint(1, 99999), b=rng.randint(0, 999), c=rng.randint(1000, 2000), d=i % 28 + 1
        )
        for i in range(200)
    ]
    parsing._parse_text_cached.cache_clear()
    start = time.perf_counter()
    for raw in distinct:
        assert parse_predicate(raw).error is None
    cold = time.perf_counter() - start
    stream = [distinct[rng.randrange(200)] for _ in range(100_000)]
    start = time.perf_counter()
    for raw in stream:
        parse_predicate(raw)
    warm = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n  parse: {cold / 200 * 1e3:.2f} ms per new predicate, 100k cached {warm:.3f} s")
    assert cold < 5 and warm < 2
