"""errors.one_line: the one line users see of an error (untrusted text folded and bounded)."""

from __future__ import annotations

import pytest

from audit.core.errors import one_line


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("plain text", "plain text"),
        ("\n\n  first  line \nsecond", "first line"),
        ("a\x00b\x1b[31mred", "a b [31mred"),  # control characters become spaces
        ("tab\there\u200bzero-width", "tab here zero-width"),
        ("\u00a0\u2028only separators\u00a0", "only separators"),
        (" \x07 \n x", "x"),  # a line of nothing printable is blank: the next one is taken
    ],
)
def test_it_keeps_the_first_printable_line_with_white_space_folded(text, line):
    assert one_line(text) == line


def test_it_bounds_the_line_and_names_what_has_no_text():
    assert one_line("x" * 50, limit=10) == "x" * 7 + "..."
    assert one_line(ValueError()) == "ValueError"
    assert one_line(" \n ") == "unknown error"
    assert one_line("", empty="nothing") == "nothing"
