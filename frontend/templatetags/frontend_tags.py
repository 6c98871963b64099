"""Small display filters for the dashboard. Every one returns plain text; autoescape applies."""

from __future__ import annotations

import math
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils.html import format_html, json_script
from django.utils.safestring import SafeString, mark_safe

from audit.core import numbers
from audit.core.wording import names
from audit.reads import cache

register = template.Library()

# IEC, as frontend/static/frontend/format.js spells them (the pages' one size format).
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_TENTH = Decimal("0.1")

# The dashboard's sections (the top bar), by the namespace and URL name of a page.
_SECTIONS = {
    "frontend": {
        "findings": "findings",
        "finding": "findings",
        "explain": "explain",
        "login": None,
    },
    "alerting": "alerts",
}


@register.filter
def ms_datetime(value: Any) -> datetime | None:
    """Milliseconds since the epoch -> an aware datetime (None for junk and for times outside
    the calendar: audit.core.numbers.ms_datetime)."""
    return numbers.ms_datetime(value)


@register.filter
def filesize(value: Any) -> str:
    """Bytes in IEC units ("512 B", "34.6 KiB", "1.0 GiB"), digits rounded half up as
    JavaScript's toFixed does: format.js gives the same text for the same number."""
    try:
        size = float(value)
    except (TypeError, ValueError, OverflowError):
        return "—"
    if not math.isfinite(size):  # "inf" or a hostile 1e400 is no size
        return "—"
    size = size or 0.0  # -0.0 reads "0 B", as in JavaScript
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{Decimal(size).quantize(Decimal(1), ROUND_HALF_UP)} B"
            return f"{Decimal(size).quantize(_TENTH, ROUND_HALF_UP)} {unit}"
        size /= 1024
    return "—"


@register.filter
def kind_name(value: Any) -> str:
    """A finding kind in words ("Never-existed snapshot"): audit/core/wording/names.py."""
    return names.kind_name("" if value is None else str(value))


@register.filter
def operation_name(value: Any) -> str:
    """A Delta operation in words ("Optimize (compaction)"); unknown ones as written."""
    return "" if value is None else names.operation_name(str(value))


@register.simple_tag
def kind_label(kind: Any) -> SafeString:
    """A kind in words with its identifier as a small detail (what rules and the API use)."""
    text = "" if kind is None else str(kind)
    return format_html(
        '<span class="kind-name">{}</span> <code class="ident">{}</code>',
        names.kind_name(text),
        text,
    )


@register.simple_tag
def names_json() -> SafeString:
    """The words of kinds and operations for the pages' scripts (a JSON script element)."""
    return json_script(
        {"kinds": names.KIND_NAMES, "operations": names.OPERATION_NAMES}, "names-data"
    )


@register.simple_tag(takes_context=True)
def nav_section(context: dict[str, Any]) -> str | None:
    """Which top-bar section the page belongs to: tables, findings, explain, alerts, api."""
    request = context.get("request")
    if request is None:
        return None
    if request.path.startswith("/api/"):
        return "api"
    match = getattr(request, "resolver_match", None)
    if match is None:
        return None
    section = _SECTIONS.get(match.namespace)
    if isinstance(section, dict):  # the dashboard: every other page is a table's
        return section.get(match.url_name, "tables")
    return section


@register.filter
def partition(value: Any) -> str:
    """Partition values as text: {"day": "2024-01-01"} -> day=2024-01-01, {} -> (unpartitioned)."""
    if isinstance(value, dict):
        if not value:
            return "(unpartitioned)"
        return "/".join(f"{k}={'null' if v is None else v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "/".join(f"{k}={'null' if v is None else v}" for k, v in value)
    return "" if value is None else str(value)


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key, mapping.get(str(key)))
    return None


@register.filter
def thousands(value: Any) -> str:
    """A count with separators; "—" for anything that is no count of a log (log_int: a float
    1e400 from a hostile stats string, a bool, text)."""
    number = value if type(value) is int else numbers.log_int(value, signed=True)
    return "—" if number is None else f"{number:,}"


@register.filter
def exception_short(value: Any) -> str:
    """Drop the "Exception" suffix (ConcurrentAppendException -> ConcurrentAppend): cells stay narrow."""
    text = "" if value is None else str(value)
    return text.removesuffix("Exception") or text


@register.filter
def duration(seconds: Any) -> str:
    """A rough human duration ("45 s", "12 min", "3 h 10 min") for estimates like a backfill's."""
    try:
        total = max(int(round(float(seconds))), 0)
    except (TypeError, ValueError):
        return "—"
    if total < 90:
        return f"{total} s"
    minutes = round(total / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


@register.filter
def since_mark(value: Any) -> str:
    """A cached page's place for `value|timesince` (it moves with the clock): filled in on
    every request by `audit.reads.cache.with_times`."""
    return cache.since_mark(value)


# Rendered parts by (template, values): `remembered`.
_PARTS: dict[tuple, SafeString] = {}
_MAX_PARTS = 1024


@register.simple_tag
def remembered(template_name: str, **values: Any) -> SafeString:
    """`render_to_string(template_name, values)`, remembered per process under the template
    and the values (lists as tuples): for a part of a page that shows only a few values of
    the request (the overview's search form and sortable header, ~30 nodes, a sixth of its
    cold content). Never stale: the key is all the part reads."""
    key = (template_name, *sorted((k, tuple(v) if isinstance(v, list) else v)
                                  for k, v in values.items()))  # fmt: skip
    found = _PARTS.get(key)
    if found is None:
        if len(_PARTS) >= _MAX_PARTS:
            _PARTS.clear()  # a bound, not a policy: a part renders in ~0.1 ms
        found = _PARTS[key] = mark_safe(render_to_string(template_name, values))  # noqa: S308
    return found
