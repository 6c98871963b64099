"""The literal-template fast path of predicate parsing must equal a full sqlglot parse."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.core.predicates.parsing import _parse_full
from audit.core.predicates.templates import build_from_template
from tests.support.paths import DELTA_TABLES

TABLES = DELTA_TABLES

SHAPES = [
    "(date#{a} = {d1})",
    '["((id#{a}L >= {n1}) AND (id#{a}L <= {n2}))"]',
    "d = '{d1}'::date AND a > {n1}",
    "(country#{a} = US) AND (date#{b} >= {d1})",
    "date < '{d1}' OR date > '{d2}'",
    "id IN ({n1}, {n2}, {n3})",
    "arrow_cast(x, 'Int64') > {n1}",
    "t.date = '{d1}' AND s.id = t.id",
    "(value#{a} = {n1}.{n2})",
    "(ts#{a} >= {d1} 10:00:00)",
    "name = 'abc {n1}' AND x != {n2}",
    "a BETWEEN {n1} AND {n2}",
    "(p#{a} = {n1}) AND isnotnull(p#{a})",
]


def _compare(text: str) -> None:
    fast = build_from_template(text, [text])
    if fast is None:
        return  # the fast path declined: the full parse is used, nothing to compare
    full = _parse_full(text, [text])
    assert full is not None
    assert (fast.sql, fast.columns) == (full.sql, full.columns), text


@settings(max_examples=300, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    a=st.integers(0, 99999),
    b=st.integers(0, 99999),
    n=st.lists(st.integers(0, 10**9), min_size=3, max_size=3),
    days=st.lists(st.dates(), min_size=2, max_size=2),
)
def test_template_parse_equals_full_parse(shape, a, b, n, days):
    text = shape.format(
        a=a, b=b, n1=n[0], n2=n[1], n3=n[2], d1=days[0].isoformat(), d2=days[1].isoformat()
    )
    _compare(text)


def _real_predicates() -> list[str]:
    found = set()
    for path in TABLES.rglob("*.json"):
        for match in re.finditer(
            r'"(?:predicate|replaceWhere)":"((?:[^"\\]|\\.)*)"', path.read_text(errors="replace")
        ):
            found.add(match.group(1).encode().decode("unicode_escape"))
    return sorted(found)


@pytest.mark.parametrize("text", _real_predicates())
def test_template_parse_equals_full_parse_on_real_logs(text):
    _compare(text)
