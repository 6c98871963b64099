"""Parsing a commit file's bytes (newline-delimited JSON actions) into a `Commit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from audit.core.errors import DeltaAuditError
from audit.core.log.actions import _ACTION_HANDLERS, _add_from, _Malformed, _remove_from
from audit.core.log.layout import commit_file_name
from audit.core.model import Commit


def _json_line_error(
    label: str, file_name: str, lineno: int, line: bytes, err: Exception
) -> DeltaAuditError:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return DeltaAuditError(
            f"{label}: line {lineno} of {file_name} is not valid UTF-8 (bad byte at offset {bad.start})"
        )
    reason = str(err).splitlines()[0] if str(err) else "malformed"
    return DeltaAuditError(
        f"{label}: line {lineno} is not valid JSON ({reason}) in {file_name}; the file may be truncated or corrupt"
    )


class _SlowPath(Exception):
    """The one-call fast path met something unusual; the line-by-line path will explain it."""


def _parse_actions(
    data: bytes,
    commit: Commit,
    kind: str = "commit",
    file_name: str | None = None,
    sidecars: list[dict[str, Any]] | None = None,
) -> Commit:
    """Parse newline-delimited JSON actions into `commit`.

    Fast path: the whole file as one JSON array (one orjson call per file instead of one per
    line). Anything unusual (blank lines, a corrupt line, a malformed action) is re-parsed
    line by line, which raises an error naming the line. `kind` and `file_name` only serve
    error messages. `sidecars` collects V2 checkpoint sidecar actions.
    """
    try:
        actions = load_actions(data)
        if actions:
            adds, removes = split_actions(actions, commit, sidecars)
            commit.adds.extend(map(_add_from, adds))
            commit.removes.extend(map(_remove_from, removes))
            return commit
    except (orjson.JSONDecodeError, _SlowPath, _Malformed):
        _reset(commit)
    return _parse_lines(data, commit, kind, file_name, sidecars)


def load_actions(data: bytes) -> list[Any]:
    """A file's JSON lines as one JSON array: one orjson call per file, not one per line."""
    return orjson.loads(b"[" + data.strip().replace(b"\n", b",") + b"]")


def split_actions(
    actions: list[Any], commit: Commit, sidecars: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Apply every action but add and remove to `commit`; return the add and remove objects.

    The caller decides what adds and removes become (file objects, or digest.py's counts).
    Raises _SlowPath for a line that is not an object, _Malformed for a malformed action.
    """
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    handlers = _ACTION_HANDLERS
    for obj in actions:
        if type(obj) is not dict:
            raise _SlowPath
        for key, value in obj.items():
            # The three actions of almost every line, dispatched without a lookup.
            if type(value) is dict:
                if key == "add":
                    adds.append(value)
                    continue
                if key == "remove":
                    removes.append(value)
                    continue
                if key == "commitInfo":
                    if commit.commit_info is None:
                        commit.commit_info = value
                    continue
            _apply_other(commit, key, value, handlers, sidecars)
    return adds, removes


def _apply_other(
    commit: Commit,
    key: str,
    value: Any,
    handlers: dict[str, Callable[[Commit, dict[str, Any]], None]],
    sidecars: list[dict[str, Any]] | None,
) -> None:
    handler = handlers.get(key)
    if handler is None:
        if sidecars is not None and key == "sidecar" and type(value) is dict:
            sidecars.append(value)
        elif not (sidecars is not None and key == "checkpointMetadata"):
            commit.unknown_actions.append(key)
    elif type(value) is dict:
        handler(commit, value)
    elif value is not None:  # {"add": null} carries nothing; anything else is malformed
        raise _Malformed(f"'{key}' is not a JSON object")


def _reset(commit: Commit) -> None:
    for items in (commit.adds, commit.removes, commit.cdcs, commit.txns, commit.domain_metadata):
        items.clear()
    commit.unknown_actions.clear()
    commit.commit_info = commit.metadata = commit.protocol = None


def _parse_lines(
    data: bytes,
    commit: Commit,
    kind: str,
    file_name: str | None,
    sidecars: list[dict[str, Any]] | None,
) -> Commit:
    """The line-by-line parser: tolerant of blank lines, precise about errors."""
    handlers = _ACTION_HANDLERS
    seen_action = False
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            if not line.strip():
                continue  # a blank line (e.g. "\r" or spaces) carries no action
            raise _json_line_error(
                _label(kind, commit), _file_of(commit, file_name), lineno, line, err
            ) from None
        if type(obj) is not dict:
            raise _located(kind, commit, file_name, lineno, "is not a JSON object")
        seen_action = True
        for key, value in obj.items():
            try:
                if key == "commitInfo" and type(value) is dict:
                    if commit.commit_info is None:
                        commit.commit_info = value
                else:
                    _apply_other(commit, key, value, handlers, sidecars)
            except _Malformed as err:
                raise _located(kind, commit, file_name, lineno, str(err)) from None
    if not seen_action:
        raise DeltaAuditError(
            f"{_label(kind, commit)}: {_file_of(commit, file_name)} is empty (no actions)",
            version=commit.version,
        )
    return commit


def _label(kind: str, commit: Commit) -> str:
    return f"{kind} {commit.version}"


def _file_of(commit: Commit, file_name: str | None) -> str:
    return file_name or commit_file_name(commit.version)


def _located(
    kind: str, commit: Commit, file_name: str | None, lineno: int, problem: str
) -> DeltaAuditError:
    return DeltaAuditError(
        f"{_label(kind, commit)}: line {lineno} of {_file_of(commit, file_name)}: {problem}",
        version=commit.version,
    )


def parse_commit(version: int, data: bytes) -> Commit:
    """Parse the bytes of commit file `version`. Raises DeltaAuditError on unreadable input."""
    return _parse_actions(data, Commit(version=version))
