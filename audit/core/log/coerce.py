"""Small coercions of untrusted log values: a field of the wrong type is treated as absent."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from audit.core.numbers import log_int


def _int(value: Any) -> int | None:
    return log_int(value, signed=True)


def _int_like(value: Any) -> int | None:
    """Identity column metadata is written as numbers by some writers and strings by others."""
    return log_int(value, signed=True)


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def _bool(value: Any, default: bool) -> bool:
    return value if type(value) is bool else default


def _dict(value: Any) -> dict[str, Any] | None:
    return value if type(value) is dict else None


def _str_map(value: Any) -> dict[str, str | None]:
    """A map<string,string>: a JSON object, or the list of pairs pyarrow gives for a parquet map."""
    if type(value) is dict:
        items = value.items()
    elif type(value) is list:
        items = (pair for pair in value if type(pair) is tuple and len(pair) == 2)
    else:
        return {}
    out: dict[str, str | None] = {}
    for key, item in items:
        if type(key) is not str:
            continue
        out[key] = item if item is None or type(item) is str else str(item)
    return out


def _partition_values(value: Any) -> dict[str, str | None]:
    if type(value) is dict:
        # Fast path: a well-formed JSON object is used as it is.
        for item in value.values():
            if item is not None and type(item) is not str:
                return _str_map(value)
        return value
    return _str_map(value)


def _str_list(value: Any) -> list[str]:
    return [item for item in value if type(item) is str] if type(value) is list else []


def _decode_path(path: str) -> str:
    # PROTOCOL.md: paths in add/remove/cdc are URL-encoded (RFC 2396). `unquote`, not
    # `unquote_plus`: a '+' in a path is a literal plus.
    return unquote(path) if "%" in path else path
