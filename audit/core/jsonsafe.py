"""The one JSON sanitiser: any value the core produces, as JSON both databases and orjson take.

Log strings are untrusted (NUL bytes, lone surrogates) and integers derived from them may not
fit in 64 bits; values read from data files are dates, decimals, bytes and sets. Every path
that stores or ships such values (the Celery ingest, the Spark rows, the API's explain and
analysis responses) goes through `json_text` / `json_safe`, so a finding shipped as a Spark
row is stored exactly like one stored directly.

`cell_value` is the separate rule for *data cells* shown as sample rows of a witness, where a
reader wants ISO dates and base64 bytes rather than Python's str().
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from typing import Any

import orjson

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_default(value: Any) -> Any:
    """orjson's fallback for values read from data files (dates, decimals, sets, bytes)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def json_text(value: Any) -> str:
    """`value` as JSON text storable in SQLite and PostgreSQL jsonb (no NUL, no surrogates)."""
    try:
        data = orjson.dumps(value, default=json_default, option=_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):  # an out-of-range int or a lone surrogate
        data = orjson.dumps(_scrub(value), default=json_default, option=orjson.OPT_NON_STR_KEYS)
    # PostgreSQL refuses \u0000 in jsonb; log strings are untrusted and may contain it.
    return data.replace(b"\\u0000", b"\\ufffd").decode()


def json_safe(value: Any) -> Any:
    """`value` as plain JSON data (see json_text), for JSON fields and API responses."""
    return orjson.loads(json_text(value))


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if _INT64_MIN <= value <= _INT64_MAX else str(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): _scrub(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):  # the order json_default gives sets
        return [_scrub(v) for v in sorted(value, key=repr)]
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def clean_text(text: str) -> str:
    """Text storable in both databases: NUL becomes U+FFFD, lone surrogates are replaced."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def cell_value(value: Any) -> Any:
    """A data cell as JSON that keeps its meaning (dates as ISO text, decimals as text...)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): cell_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cell_value(v) for v in value]
    return str(value)
