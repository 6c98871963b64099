"""Bounds on the untrusted text a user pastes, and the few helpers that echo it back safely.

Everything an exception text contributes to an explanation passes through `clip`, so no
echoed string carries control characters or grows past its cap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from audit.core.numbers import ms_datetime

MAX_INPUT_CHARS = 1_000_000  # beyond this a paste is a log dump; the exception is near the top
MAX_JSON_CHARS = 200_000
MAX_TEXT = 300  # cap on any single untrusted string echoed back

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clip(value: Any, limit: int) -> str:
    """`value` as text without control characters, cut to `limit` characters (with '…')."""
    text = _CONTROL_RE.sub(" ", str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unique(items: Iterable[str]) -> list[str]:
    """The items in their first order, each once."""
    return list(dict.fromkeys(items))


def iso(ms: int) -> str:
    """A commit timestamp for people; a hostile one outside the calendar is an unknown time."""
    moment = ms_datetime(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment is not None else "an unknown time"


def int_or_none(value: Any) -> int | None:
    """A JSON integer (not a boolean, which Python counts as one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def str_or_none(value: Any) -> str | None:
    """A non-empty JSON string, clipped, else None."""
    return clip(value, MAX_TEXT) if isinstance(value, str) and value else None
