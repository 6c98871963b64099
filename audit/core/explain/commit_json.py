"""The `Conflicting commit: {json}` object Databricks appends to a conflict exception.

Pasted texts cut it off, redact it ("version":xxxx) or break it across lines, so a full parse
is tried first and otherwise the readable top-level scalars are kept. The scanners are linear
and bounded by MAX_JSON_CHARS: the text is untrusted.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import orjson

from audit.core.explain.untrusted import MAX_JSON_CHARS

_CONFLICTING_COMMIT_RE = re.compile(r"Conflicting commit:\s*")
_SCALAR_RE = re.compile(
    r'-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|"(?:[^"\\\n]|\\.){0,5000}"'
)


class CommitJson(NamedTuple):
    """What the text says about the conflicting commit, and where it says it."""

    value: dict[str, Any] | None  # the object, or its readable scalars when not complete
    complete: bool  # False when the JSON was cut off or invalid
    span: tuple[int, int] | None  # its place in the text, to keep it out of other searches


def conflicting_commit(text: str) -> CommitJson:
    """The `Conflicting commit: {...}` object, whether it was complete, and its text span."""
    match = _CONFLICTING_COMMIT_RE.search(text)
    if not match:
        return CommitJson(None, False, None)
    start = match.end()
    if start >= len(text) or text[start] != "{":
        return CommitJson(None, False, None)
    end = _balanced_end(text, start)
    if end is not None:
        try:
            value = orjson.loads(text[start:end])
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return CommitJson(value, True, (start, end))
    # Cut off, or not JSON (e.g. redacted "version":xxxx): keep the top-level scalars we can read.
    stop = end if end is not None else _line_end(text, start)
    partial = _top_level_scalars(text[start:stop])
    return CommitJson(partial or None, False, (start, stop))


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the brace matching text[start] ('{'); None if it never closes."""
    depth = 0
    in_string = False
    escaped = False
    limit = min(len(text), start + MAX_JSON_CHARS)
    for index in range(start, limit):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return min(len(text) if end < 0 else end, start + MAX_JSON_CHARS)


def _top_level_scalars(fragment: str) -> dict[str, Any]:
    """Scalar members of the outermost object in a possibly cut-off JSON text."""
    values: dict[str, Any] = {}
    depth = 0
    index = 0
    while index < len(fragment):
        char = fragment[index]
        if char == '"':
            end = _string_end(fragment, index)
            if end is None:
                break
            after = _skip_spaces(fragment, end)
            if depth == 1 and after < len(fragment) and fragment[after] == ":":
                index = _read_member(fragment, index, end, after, values)
                continue
            index = end
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                break
        index += 1
    return values


def _read_member(
    fragment: str, key_start: int, key_end: int, colon: int, values: dict[str, Any]
) -> int:
    """Store the member whose key spans [key_start, key_end) if its value is a whole scalar.

    Returns where scanning goes on: past the scalar, or just past the colon when the value is
    an object, an array or cut off (the scan then walks into it and tracks the depth).
    """
    value_at = _skip_spaces(fragment, colon + 1)
    scalar = _SCALAR_RE.match(fragment, value_at)
    if not (scalar and _is_complete_scalar(fragment, scalar.end())):
        return colon + 1
    try:
        key = orjson.loads(fragment[key_start:key_end])
        values[str(key)] = orjson.loads(scalar.group(0))
    except orjson.JSONDecodeError:
        pass  # a malformed member: skip it, keep the others
    return scalar.end()


def _is_complete_scalar(fragment: str, end: int) -> bool:
    """A number cut off by truncation ('"version":12' at the end) is not trusted."""
    after = _skip_spaces(fragment, end)
    return after < len(fragment) and fragment[after] in ",}"


def _string_end(text: str, start: int) -> int | None:
    """Index just past the JSON string starting at text[start]; None if the line ends first."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index + 1
        if char == "\n":
            return None
        index += 1
    return None


def _skip_spaces(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index
