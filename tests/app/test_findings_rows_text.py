"""The findings rows tag's escaping and truncation shortcuts (frontend/templatetags/
findings_rows.py: `_e`, `_truncated`) give the template loop's text for summaries and names of
every shape: short, exactly 220 characters, long, not NFC-normalised, combining marks, quotes
and markup, and for values that are safe strings."""

from __future__ import annotations

import pytest
from django.template import engines
from django.utils.safestring import mark_safe

from frontend.templatetags.findings_rows import _e, _truncated
from tests.app.test_findings_rows import LOOP

TEXTS = [
    "", "plain", "x" * 219, "x" * 220, "x" * 221, "x" * 500, "e\u0301" * 150, "e\u0301" * 300,
    "\u212b" * 50, "a'b\"c<d>&e", "&amp; <script>x</script>" * 20, "\u0301" * 230,
    "x" * 218 + "e\u0301\u0301", "🙂" * 221,
]  # fmt: skip


@pytest.mark.parametrize("text", TEXTS)
def test_truncation_and_escaping_match_the_template(text):
    engine = engines["django"]
    expected = engine.from_string("{{ s|truncatechars:220 }}").render({"s": text})
    assert _e(_truncated(text)) == expected
    assert _e(text) == engine.from_string("{{ s }}").render({"s": text})


def test_safe_strings_and_numbers_escape_as_conditional_escape():
    assert _e(mark_safe("<b>ok</b>")) == "<b>ok</b>"
    assert _e(42) == "42"


def test_the_loop_still_renders_hostile_rows(db):
    assert "truncatechars:220" in LOOP  # the limit the tag's SUMMARY_CHARS mirrors
