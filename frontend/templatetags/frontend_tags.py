"""Small display filters for the dashboard. Every one returns plain text; autoescape applies."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django import template

from audit.core import numbers
from audit.reads import cache

register = template.Library()

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


@register.filter
def ms_datetime(value: Any) -> datetime | None:
    """Milliseconds since the epoch -> an aware datetime (None for junk and for times outside
    the calendar: audit.core.numbers.ms_datetime)."""
    return numbers.ms_datetime(value)


@register.filter
def filesize(value: Any) -> str:
    try:
        size = float(value)
    except (TypeError, ValueError, OverflowError):
        return "—"
    if not math.isfinite(size):  # "inf" or a hostile 1e400 is no size
        return "—"
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return "—"


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
