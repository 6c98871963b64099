"""Normalised SQL parsed through its literal template gives what a parse of its own gives:
the tree, the partition part and the compiled evaluator (predicates/sql_templates.py)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from audit.core.model import Predicate
from audit.core.predicates import evaluator as ev
from audit.core.predicates import skipping
from audit.core.predicates.comparisons import conjuncts
from audit.core.predicates.facts import Facts, partition_value_facts
from audit.core.predicates.normalise import columns_of
from audit.core.predicates.sql_templates import expression_from_template, literal_template

SQLS = [
    "date = '2024-01-01' AND id > 756913",
    "a = 1.5 AND b = 7",
    "x IN (1, 2, 3) AND d = '2024-01-01 10:00:00'",
    '"col 5" = 3',
    "CAST(x AS DECIMAL(10, 2)) = 5",
    "x = 'it''s 5'",
    "d BETWEEN '2024-01-01' AND '2024-02-01'",
    "x = 0 OR y = 007",
    "NOT id < 7 AND name LIKE '5%'",
    "date = '2024-01-02' AND (id = 4 OR id = 9)",
    "b AND id = 4",
]
FACTS = [
    None,
    Facts(1, 8, nulls=False, values=True, exact=False),
    Facts(5, 5, nulls=True, values=True, exact=True),
    partition_value_facts("2024-01-01"),
    partition_value_facts("12"),
    Facts("2024-01-02", "2024-01-05", nulls=False, values=True, exact=False),
]


def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, into=exp.Condition)


@pytest.mark.parametrize("sql", SQLS)
def test_the_tree_is_the_one_its_own_parse_gives(sql):
    made = expression_from_template(sql)
    if made is None:  # the template could not stand for it: the caller parses in full
        return
    assert made == _parsed(sql)
    assert made.sql() == _parsed(sql).sql()
    assert repr(made) == repr(_parsed(sql))


def test_the_shared_tree_is_never_handed_out():
    sql = "date = '2024-01-01' AND id > 5"
    first, second = expression_from_template(sql), expression_from_template(sql)
    assert first is not second
    first.find(exp.Literal).set("this", "changed")
    assert expression_from_template(sql) == _parsed(sql)


def test_text_that_could_be_a_sentinel_is_parsed_in_full():
    assert literal_template("id = 9876500001") is None
    assert literal_template("d = '1000-01-01'") is None
    assert literal_template("name = 'x'") is None  # no literal to swap


@pytest.mark.parametrize("sql", SQLS)
@pytest.mark.parametrize("columns", [["date"], ["id"], ["col 5"], ["x", "y"]])
def test_the_partition_part_is_the_one_the_parse_gives(sql, columns):
    pred = Predicate(raw=sql, sql=sql, columns=frozenset())
    fast = skipping.partition_part(pred, columns)
    wanted = {c.lower() for c in columns}
    terms = conjuncts(_parsed(sql))
    kept = [t for t in terms if (cols := columns_of(t)) and cols <= wanted]
    if not kept:
        assert fast is None
    elif len(kept) == len(terms):
        assert fast is pred
    else:
        expected = exp.and_(*(t.copy() for t in kept), copy=False)
        assert fast is not None and fast.sql == expected.sql()
        assert fast.columns == columns_of(expected)


@pytest.mark.parametrize("sql", SQLS)
@pytest.mark.parametrize("types", [(), (("date", "date"), ("d", "date"), ("id", "long"))])
def test_the_evaluator_answers_as_the_full_compile_does(sql, types):
    ev.compiled_evaluator.cache_clear()
    fast = ev.compiled_evaluator(sql, types)
    full = ev._compile(_parsed(sql), dict(types))
    for facts in FACTS:
        assert fast(lambda _name, f=facts: f) == full(lambda _name, f=facts: f)


@pytest.mark.parametrize(
    "sql", [*SQLS, "ts > CURRENT_TIMESTAMP - INTERVAL '1' DAY", "x / 2 > 3 AND d = '2024-01-01'"]
)
def test_a_predicates_shape_is_its_templates(sql):
    from audit.core.incidents import causes

    causes.predicate_shape.cache_clear()
    shape = causes.predicate_shape(sql, sql)
    assert shape == causes._shape_of(_parsed(sql))


@pytest.mark.parametrize(
    "sql",
    [
        "t.date = '2024-01-01' AND t.id = s.id",
        "t.id = s.id AND t.date = '2024-01-03' AND s.n > 5",
        "date = '2024-01-02' AND id > 77",
        "t.id = s.id AND s.n = 3",
        "target.day >= '2024-01-01' AND target.k = source.k",
    ],
)
def test_a_merge_conditions_target_part_is_the_one_the_parse_gives(sql):
    from audit.core.data import witness
    from audit.core.predicates import detect_target_alias
    from audit.core.predicates.parsing import parse_predicate

    pred = parse_predicate(sql)
    assert literal_template(pred.sql) is not None  # the template path is the one under test
    fast = witness.merge_target_part(pred)
    kept, whole = witness._merge_kept(_parsed(pred.sql), detect_target_alias(pred))
    if not kept:
        assert fast is None
    elif whole:
        assert fast is pred
    else:
        assert fast == parse_predicate(witness._and_sql(kept))
