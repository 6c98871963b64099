"""Parts of a page rendered once per process under the values they read (frontend_tags
`remembered`): the same HTML as rendering the part, another for other values, bounded."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from frontend.templatetags import frontend_tags
from frontend.views.overview import TABLE_SORTS

HOSTILE = '"><script>alert(1)</script>&amp;'
PART = "frontend/_index_head.html"


@pytest.mark.parametrize("query", ["", "t01", HOSTILE, "a b/c?d"])
def test_it_renders_what_the_part_renders_for_every_value(query):
    for sort in TABLE_SORTS:
        for _ in range(2):  # rendered, then remembered
            got = frontend_tags.remembered(PART, query=query, sort=sort)
            assert got == render_to_string(PART, {"query": query, "sort": sort})
    assert "<script>" not in frontend_tags.remembered(PART, query=HOSTILE, sort="name")


def test_it_keys_lists_by_their_items_and_stays_bounded(monkeypatch):
    monkeypatch.setattr(frontend_tags, "_MAX_PARTS", 3)
    monkeypatch.setattr(frontend_tags, "_PARTS", {})
    search = "frontend/_index_search.html"
    one = frontend_tags.remembered(search, query="", sort="name", sorts=["name", "risk"])
    two = frontend_tags.remembered(search, query="", sort="name", sorts=["name"])
    assert "risk" in one and "risk" not in two
    for i in range(6):
        frontend_tags.remembered(PART, query=str(i), sort="name")
        assert len(frontend_tags._PARTS) <= 3
