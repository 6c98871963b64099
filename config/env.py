"""Typed parsing of one environment value (config/declared.py says which names exist)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
N = TypeVar("N", int, float)


class ConfigError(RuntimeError):
    pass


def parse_str(name: str, raw: str | None, default: str) -> str:
    # Set but blank stays blank: an empty secret key must be refused, not replaced by the default.
    return default if raw is None else raw


def parse_bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false)")


def parse_int(name: str, raw: str | None, default: int) -> int:
    return _parse_number(name, raw, default, int, "an integer")


def parse_float(name: str, raw: str | None, default: float) -> float:
    return _parse_number(name, raw, default, float, "a number")


def _parse_number(
    name: str, raw: str | None, default: N, parse: Callable[[str], N], what: str
) -> N:
    """`parse` of the value; unset or blank gives `default`, anything else unparsable fails."""
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not {what}") from None


def parse_list(name: str, raw: str | None, default: list[str]) -> list[str]:
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def parse_json(name: str, raw: str | None, default: dict[str, Any]) -> dict[str, Any]:
    """A JSON object; unset or blank gives `default`."""
    if raw is None or raw.strip() == "":
        return dict(default)
    try:
        value = json.loads(raw)
    except ValueError as err:
        raise ConfigError(f"{name} is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object")
    return value


PARSERS: dict[type, Callable[[str, str | None, Any], Any]] = {
    str: parse_str,
    bool: parse_bool,
    int: parse_int,
    float: parse_float,
    list: parse_list,
    dict: parse_json,
}
