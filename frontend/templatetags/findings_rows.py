"""The findings table's rows, rendered in Python: one page of 50 rows through the template
engine cost ~12 ms of CPU (three `{% url %}` and ~20 variable lookups per row); this builds
the same HTML with each link reversed once per page. Every text from the data is escaped."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from functools import lru_cache
from html import escape as _escape
from types import SimpleNamespace
from typing import Any
from unicodedata import normalize

from django import template
from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from audit.core.wording.names import kind_name

register = template.Library()

SUMMARY_CHARS = 220  # the template's `truncatechars:220`

# What a row reads is declared with the page's read (audit/reads/pages.py: ROW_FIELDS,
# ROW_VALUES, TABLE_ROW_FIELDS, TABLE_ROW_VALUES).


class FindingRow:
    """A row of `.values(*ROW_VALUES)` (or TABLE_ROW_VALUES) with what the tag reads of a
    Finding: its columns, and `table` (name and URI) when the row names them. A cold findings
    page spent a third of its CPU building a Finding and a Table per row."""

    def __init__(self, values: dict[str, Any]):
        self.__dict__ = values
        if "table__name" in values:
            self.table = SimpleNamespace(name=values["table__name"], uri=values["table__uri"])


_MARK = 918273645  # a number no real id is compared against: only split on
_MARK2 = 546372819


def _link(name: str, *marks: int) -> tuple[str, ...]:
    """The URL of `name` cut at its arguments' places (joined per row), reversed once per
    process for each script prefix and URLconf (~0.3 ms of each cold page's three)."""
    return _cut(name, marks, get_script_prefix(), get_urlconf(), settings.ROOT_URLCONF)


@lru_cache(maxsize=64)
def _cut(name: str, marks: tuple[int, ...], *resolved_by: Any) -> tuple[str, ...]:
    url, pieces = reverse(name, args=marks), []
    for mark in marks:
        head, url = url.split(str(mark), 1)
        pieces.append(head)
    return (*pieces, url)


def _e(value: Any) -> str:
    """conditional_escape without its lazy-string wrapper (~2 us a call, 500 calls a page):
    the same text (`html.escape`, as Django's `escape`) for every value but safe strings."""
    if hasattr(value, "__html__"):
        return conditional_escape(value)
    return _escape(str(value))


def _truncated(text: str) -> str:
    """`Truncator(text).chars(220)`: a text of at most 220 characters comes back only
    NFC-normalised, which Truncator does before counting."""
    if len(text) <= SUMMARY_CHARS:
        return normalize("NFC", text)
    return Truncator(text).chars(SUMMARY_CHARS)


# Rendered rows, per process, under everything a row shows (`_row_key`) and the page's links.
_ROWS: dict[tuple, str] = {}
ROW_HTML = 4096  # ~700 B each: a few pages of every filter many times over


def _row_key(f: Any, show_table: bool) -> tuple:
    """All a row's HTML depends on (with the links): what it prints, and the truthiness and
    status its tags read."""
    name = (f.table.name or f.table.uri) if show_table else None
    return (
        f.id, f.table_id, f.version, f.kind, f.severity, f.summary, f.status,
        bool(f.confirmed), bool(f.acknowledged_at), show_table, name,
        # A safe string prints as it is, a str escaped: equal values, other HTML.
        type(f.kind), type(f.severity), type(f.summary), type(name),
    )  # fmt: skip


@register.simple_tag
def findings_rows(findings: Iterable[Any], show_table: bool) -> SafeString:
    """The rows of frontend/_findings_rows.html (byte for byte what its loop rendered), each
    remembered per process under all it shows: escaping a row's ten values was a fifth of a
    cold findings page, and a page after a change shows mostly the rows it showed before.
    Never stale: the key holds every value the row prints or tests."""
    links = (
        _link("frontend:finding", _MARK),
        _link("frontend:table", _MARK),
        _link("frontend:commit", _MARK, _MARK2),
    )
    out: list[str] = []
    for f in findings:
        key = (links, _row_key(f, show_table))
        html = _ROWS.get(key)
        if html is None:
            if len(_ROWS) >= ROW_HTML:
                _ROWS.clear()  # a bound, not a policy: rendering a page's rows is cheap
            html = _ROWS[key] = _row_html(f, show_table, *links)
        out.append(html)
    return mark_safe("".join(out))  # noqa: S308 - every value went through escape (_row_html)


def _row_html(f: Any, show_table: bool, fin: tuple, tab: tuple, com: tuple) -> str:
    """One row, every value from the data escaped."""
    sev = _e(f.severity)
    confirmed = (
        ' <span class="tag tag-bad" title="rows found in the data files">confirmed</span>'
        if f.confirmed
        else ""
    )
    table = ""
    if show_table:
        name = f.table.name or f.table.uri
        table = f'<td><a href="{tab[0]}{f.table_id}{tab[1]}">{_e(name)}</a></td>'
    if f.acknowledged_at:
        state = '<span class="tag">acknowledged</span>'
    elif f.status == "resolved":
        state = '<span class="tag tag-ok">resolved</span>'
    else:
        state = '<span class="tag tag-accent">open</span>'
    summary = _e(_truncated(f.summary))
    return (
        f'\n  <tr>\n    <td><span class="badge sev-{sev}">{sev}</span></td>\n'
        f'    <td class="nowrap"><a href="{fin[0]}{f.id}{fin[1]}">{_e(kind_name(f.kind))}</a>'
        f' <code class="ident">{_e(f.kind)}</code>{confirmed}</td>\n    {table}\n'
        f'    <td class="num mono"><a href="{com[0]}{f.table_id}{com[1]}{f.version}{com[2]}">'
        f"{_e(f.version)}</a></td>\n"
        f'    <td class="summary">{summary}</td>\n'
        f'    <td class="nowrap">{state}</td>\n  </tr>\n  '
    )


# Rendered <select> widgets by everything their rendering reads (below). Rendering one through
# Django's widget templates cost ~0.7 ms of a cold findings page each; the page shows two, and
# their choices (the reader's tables, the severities) rarely change.
_SELECTS: dict[tuple, SafeString] = {}
_MAX_SELECTS = 512


@register.filter
def select_html(bound: Any) -> SafeString:
    """`{{ form.<choice field> }}`, the same HTML, remembered per process under the widget's
    name, final attributes, value and choices (all that `Select.render` reads)."""
    widget = bound.field.widget
    attrs = bound.build_widget_attrs({}, widget)
    if bound.auto_id and "id" not in widget.attrs:
        attrs.setdefault("id", bound.auto_id)
    value = bound.value()
    choices = list(bound.field.choices)  # one query for a model's choices, hit or miss
    key = (
        type(widget),
        bound.html_name,
        tuple(sorted((str(k), str(v)) for k, v in {**widget.attrs, **attrs}.items())),
        str(value) if value is not None else None,
        tuple((str(v), str(label)) for v, label in choices),
    )
    found = _SELECTS.get(key)
    if found is None:
        if len(_SELECTS) >= _MAX_SELECTS:
            _SELECTS.clear()
        listed = copy.copy(widget)
        listed.choices = choices  # rendered from the choices just read, not a second query
        found = _SELECTS[key] = mark_safe(bound.as_widget(widget=listed))  # noqa: S308
    return found


@register.simple_tag
def kind_options(kinds: Iterable[str], value: Any) -> SafeString:
    """The kind dropdown's options as the template's loop wrote them (`<option value="k" >`,
    the kind in words, its identifier in brackets;
    `selected` on the chosen one): the loop compared `form.kind.value` with each of ~40 kinds,
    a tenth of a cold findings page's CPU."""
    kinds = tuple(kinds)
    try:
        key = (kinds, type(value), value)
        found = _KIND_OPTIONS.get(key)
    except TypeError:  # an unhashable value: rendered, not remembered
        key, found = None, None
    if found is None:
        out = []
        for kind in kinds:
            text = conditional_escape(kind)
            words = conditional_escape(kind_name(str(kind)))
            chosen = "selected" if value == kind else ""
            out.append(f'<option value="{text}" {chosen}>{words} ({text})</option>')
        found = mark_safe("".join(out))  # noqa: S308 - every kind went through conditional_escape
        if key is not None:
            if len(_KIND_OPTIONS) >= _MAX_SELECTS:
                _KIND_OPTIONS.clear()
            _KIND_OPTIONS[key] = found
    return found


# The kind options by (kinds, the chosen value): ~40 kinds in words was ~0.07 ms a page.
_KIND_OPTIONS: dict[tuple, SafeString] = {}
