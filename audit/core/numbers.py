"""The one reading of a number found in a log: a count, a version, a timestamp, a size.

Log values are untrusted. Writers spell numbers as JSON ints or as strings ("12"), and a
hostile or broken writer may put anything there: `"²"` (which `str.isdigit` accepts and `int`
refuses), `"١٢"` (which `int` accepts), 10**27 (which no database column nor orjson takes),
`true` (an int to Python), `1e300`, NaN. Every number read from a log goes through
`log_int`, so each of those reads as unknown (None) in one place instead of crashing a pass.

The same module holds what becomes of such numbers at the edges: `log_version` (a version a
log names), `ms_datetime` (a time as a date, None outside the calendar) and `clamp` (a sum or
difference of log numbers moved into the range of the column that stores it).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import orjson

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# ASCII digits only (`\d` would take any Unicode decimal digit): leading zeros (a commit file
# name has twenty digits), then at most 19 digits, so the text is never long enough for int()
# to be slow or to refuse it (see _MAX_TEXT).
_UNSIGNED = re.compile(r"0*[0-9]{1,19}", re.ASCII)
_SIGNED = re.compile(r"-?0*[0-9]{1,19}", re.ASCII)
_MAX_TEXT = 64
_SHORT = 18  # digits: below 10**18, inside the signed 64-bit range
_BLANKS = " \t\r\n"
# The times `ms_datetime` turns into dates: the calendar of Python and both databases (years 1
# to 9999), less a day at either end so that any time zone can still show them.
_DAY_MS = 86_400_000
_FIRST_MS = -62_135_596_800_000 + _DAY_MS  # 0001-01-02T00:00Z
_LAST_MS = 253_402_300_800_000 - _DAY_MS - 1  # 9999-12-30T23:59:59.999Z
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def log_int(value: Any, *, signed: bool = False) -> int | None:
    """`value` as an int in the signed 64-bit range, else None (unknown).

    Accepted: a JSON int, a whole finite float, or text of ASCII digits (surrounding blanks
    allowed); a leading '-' only when `signed` (timestamps, versions a writer may mark -1).
    Without `signed`, a negative value is unknown too: a count below zero means nothing.
    """
    low = INT64_MIN if signed else 0
    if type(value) is int:  # the common case first; bool is not of type int
        return value if low <= value <= INT64_MAX else None
    if value is None:  # an absent field, the next most common
        return None
    if type(value) is str and len(value) <= _SHORT and value.isascii() and value.isdigit():
        return int(value)  # metrics' "128811": ASCII digits, too short to leave the range
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # an int subclass (numpy-like values of a checkpoint)
        number = int(value)
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        number = int(value)
    elif isinstance(value, str):
        text = value.strip(_BLANKS)
        if len(text) > _MAX_TEXT or not (_SIGNED if signed else _UNSIGNED).fullmatch(text):
            return None
        number = int(text)
    else:
        return None
    return number if low <= number <= INT64_MAX else None


def stats_records(stats: str | None) -> int | None:
    """`numRecords` of an add action's stats JSON, or None when absent or unreadable."""
    if not stats:
        return None
    try:
        value = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return log_int(value)


def log_version(value: Any) -> int | None:
    """A version a log names (a commit's readVersion), else None (unknown).

    As `log_int`, signed, and at least -1: a writer marks a table's first commit as having
    read "no version" with -1 (Delta's own golden table deltalog-commit-info records it), but
    no version lies below that, so -7 means nothing."""
    number = log_int(value, signed=True)
    return number if number is not None and number >= -1 else None


def ms_datetime(ms: Any) -> dt.datetime | None:
    """Milliseconds since the epoch as an aware UTC datetime; None (an unknown time) for a
    value that is no number (`log_int`) or no date of the calendar (10**17 ms is the year
    3170843, which no datetime nor database column holds)."""
    number = ms if type(ms) is int else log_int(ms, signed=True)
    if number is None or not _FIRST_MS <= number <= _LAST_MS:
        return None
    return _EPOCH + dt.timedelta(milliseconds=number)  # exact: no float of seconds


def clamp(value: int, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """`value` moved into [low, high] (by default a bigint column's range).

    Python's ints never overflow, so sums and differences of log numbers are exact in the
    core; two adds of size 2**62 still total more than a bigint holds. Stored, such a number
    is the edge of its column's range: the row goes in and the table goes on."""
    return low if value < low else high if value > high else value
