"""A pasted conflict-exception text -> the facts it states (`ParsedException`).

Input is whatever a user pastes: a Spark/Delta OSS exception (old wording or with an error
class), a Databricks text carrying `Conflicting commit: {json}`, a PySpark/Py4J wrapper with a
stack trace, or a delta-rs error (Python `CommitFailedError`, Rust `CommitConflictError`). All
of it is untrusted: it is searched with bounded regular expressions, never evaluated, and the
strings it contributes are capped in length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from audit.core.explain.commit_json import conflicting_commit
from audit.core.explain.signals import PROTOCOL, RUST_RE, detect, starts_with_name
from audit.core.explain.untrusted import MAX_INPUT_CHARS, MAX_TEXT, clip, unique
from audit.core.numbers import log_int
from audit.core.vocab import ConflictException, Engine

_APPEND_PARTITION_RE = re.compile(
    r"Files were added to (?:partition \[(?P<p>.{0,2000}?)\]|(?P<root>the root of the table))"
    r" by a concurrent update",
    re.S,
)
_FOR_EXAMPLE_RE = re.compile(
    r"\(for example (?P<file>[^\s()]{1,1000}?)"
    r"(?: in (?:partition \[(?P<p>.{0,2000}?)\]|(?P<root>the root of the table)))?\)"
    r" by a concurrent update",
    re.S,
)
_ANY_PARTITION_RE = re.compile(r"\bpartition \[(?P<p>[^\]\n]{1,2000})\]")
_PARQUET_RE = re.compile(r"\.parquet\b")
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=%~+")
_DATABRICKS_RE = re.compile(
    r"A concurrent (?P<op>[^\n]{1,80}?) (?:added|deleted) data (?:to|from) table (?P<table>\S{1,300})"
    r".{0,40}?committed at version (?P<version>\d{1,19})",
    re.S,
)
_VERSION_PATTERNS = (
    re.compile(r"committed at version (\d{1,19})"),
    re.compile(r"Tried committing existing table version: ?(\d{1,19})"),
    re.compile(r"Delta transaction failed, version (\d{1,19}) already exists"),
    re.compile(r"VersionAlreadyExists\((\d{1,19})\)"),
)
_PROTOCOL_DETAIL_RE = re.compile(r"Protocol changed since last commit: ?([^\n]{0,300})")
_EMPTY_DIR_RE = re.compile(r"writing to an empty (?:directory|path)", re.I)
_MESSAGE_PREFIX_RE = re.compile(
    r"^(?:\s*:\s*|\s*(?:[\w$]+\.)*[\w$]*(?:Exception|Error)\s*:\s*|\s*\[[A-Z_.]+\]\s*|\s*E\s+)+"
)
_STOP_LINE_RE = re.compile(
    r"^\s*(?:E\s+)?(?:at |File \"|Conflicting commit:|Refer to |Caused by|note: |\.\.\.|\^)"
)
_DELTA_RS_MARKS = ("commitfailederror", "deltalake.exceptions", "deltalake_core", "delta-rs")
_DATABRICKS_MARKS = ("com.databricks", "databricks.com", "azuredatabricks")


@dataclass
class ParsedException:
    """What one exception text states; every string in it is clipped untrusted text."""

    exception: ConflictException
    error_class: str | None  # e.g. DELTA_CONCURRENT_APPEND or DELTA_CONCURRENT_APPEND.WITHOUT_HINT
    message: str  # the human part of the message, one line, capped
    engine: Engine  # SPARK, DATABRICKS, DELTA_RS or UNKNOWN
    partitions: list[dict[str, str | None]] = field(default_factory=list)
    partition_hints: list[str] = field(default_factory=list)  # raw "[date=2024-01-01]" texts
    root_of_table: bool = False
    files: list[str] = field(default_factory=list)
    conflicting_commit: dict[str, Any] | None = None  # the `Conflicting commit:` JSON
    conflicting_commit_complete: bool = False  # False when the JSON was cut off or invalid
    version: int | None = None  # the conflicting commit's version, when the text says
    concurrent_operation: str | None = None
    table_name: str | None = None
    detail: str | None = None  # e.g. delta-rs protocol detail, "empty directory"
    input_truncated: bool = False


def parse_exception(text: str) -> ParsedException | None:
    """Parse one conflict-exception text; None when it is not a Delta conflict exception."""
    if not isinstance(text, str) or not text.strip():
        return None
    truncated = len(text) > MAX_INPUT_CHARS
    text = text[:MAX_INPUT_CHARS]
    commit, complete, span = conflicting_commit(text)
    # Search outside the JSON: a user name or predicate in it may spell an exception name.
    searchable = (
        text if span is None else text[: span[0]] + " " * (span[1] - span[0]) + text[span[1] :]
    )
    signal = detect(searchable)
    if signal is None:
        return None
    position = signal.position
    parsed = ParsedException(
        exception=signal.exception,
        error_class=signal.error_class,
        message=_message_at(searchable, position),
        engine=_engine(searchable, signal.engine, commit),
        conflicting_commit=commit,
        conflicting_commit_complete=complete,
        input_truncated=truncated,
    )
    # Hints sit in the message itself; a bounded window keeps hostile input cheap.
    _add_partitions_and_files(parsed, searchable[max(0, position - 2_000) : position + 20_000])
    _add_databricks_facts(parsed, searchable)
    parsed.version = _version(commit, searchable)
    parsed.detail = _detail(parsed.exception, searchable)
    return parsed


def _message_at(text: str, position: int) -> str:
    """The human-readable message from `position` on, without wrapper prefixes.

    A class name or error class starts the message; a matched wording may sit mid-sentence,
    so then the message starts at that sentence (after the previous ': ' or '. ').
    """
    start = text.rfind("\n", 0, position) + 1
    if RUST_RE.match(text, position):
        pass  # a Debug-printed Rust error: the whole line is the message
    elif not starts_with_name(text, position):
        start = max(
            start, text.rfind(": ", start, position) + 2, text.rfind(". ", start, position) + 2
        )
    else:
        start = position
    lines: list[str] = []
    for index, line in enumerate(text[start : start + 20_000].split("\n")):
        if index and (not line.strip() or _STOP_LINE_RE.match(line)):
            break
        lines.append(line.split("Conflicting commit:")[0])
        if index >= 5 or "Conflicting commit:" in line:
            break
    message = " ".join(part.strip() for part in lines if part.strip())
    message = _MESSAGE_PREFIX_RE.sub("", message)
    # Wrappers repeat "X: [CLASS] X: text"; keep the innermost text.
    for _ in range(5):
        stripped = _MESSAGE_PREFIX_RE.sub("", message)
        if stripped == message:
            break
        message = stripped
    return clip(message, 1000)


def _engine(text: str, hint: Engine, commit: dict[str, Any] | None) -> Engine:
    """The engine that raised the exception: its marks in the text win over the wording's hint."""
    lowered = text[:200_000].lower()
    engine_info = str((commit or {}).get("engineInfo") or "").lower()
    if hint == Engine.DELTA_RS or any(mark in lowered for mark in _DELTA_RS_MARKS):
        return Engine.DELTA_RS
    if (
        "databricks" in engine_info
        or any(mark in lowered for mark in _DATABRICKS_MARKS)
        or (commit or {}).get("clusterId")
    ):
        return Engine.DATABRICKS
    if hint == Engine.DATABRICKS:
        return Engine.DATABRICKS
    if hint == Engine.SPARK or "io.delta" in lowered or "org.apache.spark" in lowered:
        return Engine.SPARK
    return Engine.UNKNOWN


def _add_partitions_and_files(parsed: ParsedException, text: str) -> None:
    hints: list[str] = []
    files: list[str] = []
    match = _APPEND_PARTITION_RE.search(text)
    if match:
        if match.group("root"):
            parsed.root_of_table = True
        else:
            hints.append(match.group("p"))
    match = _FOR_EXAMPLE_RE.search(text)
    if match:
        files.append(match.group("file"))
        if match.group("root"):
            parsed.root_of_table = True
        elif match.group("p") is not None:
            hints.append(match.group("p"))
    if not hints:
        hints.extend(m.group("p") for m in _ANY_PARTITION_RE.finditer(text))
    for name in _parquet_paths(text):
        if name not in files and len(files) < 20:
            files.append(name)
    parsed.partition_hints = unique(clip(h, MAX_TEXT) for h in hints)[:20]
    parsed.partitions = [parse_partition_hint(h) for h in parsed.partition_hints]
    for path in files:
        from_path = _partition_from_path(path)
        if from_path and from_path not in parsed.partitions:
            parsed.partitions.append(from_path)
    parsed.files = [clip(f, MAX_TEXT) for f in files]


def _parquet_paths(text: str) -> Iterable[str]:
    """Paths ending in .parquet; scanned backwards from each suffix so the cost stays linear."""
    floor = 0
    for match in _PARQUET_RE.finditer(text):
        start = match.start()
        while start > max(floor, match.start() - 500) and text[start - 1] in _PATH_CHARS:
            start -= 1
        floor = match.end()
        name = text[start : match.end()].lstrip("./")
        if name and name != "parquet" and not name.startswith("parquet"):
            yield name


def _add_databricks_facts(parsed: ParsedException, text: str) -> None:
    match = _DATABRICKS_RE.search(text)
    if match:
        parsed.concurrent_operation = clip(match.group("op"), 80)
        parsed.table_name = clip(match.group("table").rstrip(".,"), MAX_TEXT)
    elif parsed.conflicting_commit:
        operation = parsed.conflicting_commit.get("operation")
        if isinstance(operation, str):
            parsed.concurrent_operation = clip(operation, 80)


def _version(commit: dict[str, Any] | None, text: str) -> int | None:
    raw = (commit or {}).get("version")
    if type(raw) is int and (value := log_int(raw)) is not None:  # the JSON's own number
        return value
    for pattern in _VERSION_PATTERNS:
        match = pattern.search(text)
        if match:
            return log_int(match.group(1))
    return None


def _detail(exception: ConflictException, text: str) -> str | None:
    if exception == PROTOCOL:
        if _EMPTY_DIR_RE.search(text):
            return "several writers wrote to an empty path at the same time"
        match = _PROTOCOL_DETAIL_RE.search(text)
        if match and match.group(1).strip():
            return clip(match.group(1).strip(), MAX_TEXT)
    return None


def parse_partition_hint(hint: str, columns: Iterable[str] | None = None) -> dict[str, str | None]:
    """'date=2024-01-01, country=US' -> {'date': '2024-01-01', 'country': 'US'}.

    Values may themselves contain ', ' or '='; with the table's partition columns known the
    split happens only at '<column>=' boundaries, which keeps such values whole.
    """
    text = hint.strip().strip("[]")
    known = [c for c in (columns or []) if c]
    if known:
        values = _split_at_columns(text, known)
        if values:
            return values
    values = {}
    for part in text.split(", "):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            values[clip(key.strip(), 100)] = _partition_value(value)
    return values


def _split_at_columns(text: str, columns: list[str]) -> dict[str, str | None]:
    """'a=1, 2, b=x=y' with columns a, b -> {'a': '1, 2', 'b': 'x=y'}."""
    starts = []
    for column in columns:
        match = re.search(r"(?:^|, )" + re.escape(column) + "=", text)
        if match:
            starts.append((match.start() if match.start() == 0 else match.start() + 2, column))
    starts.sort()
    values: dict[str, str | None] = {}
    for index, (start, column) in enumerate(starts):
        end = starts[index + 1][0] - 2 if index + 1 < len(starts) else len(text)
        values[column] = _partition_value(text[start + len(column) + 1 : end])
    return values


def _partition_value(value: str) -> str | None:
    value = value.strip()
    return None if value in ("null", "__HIVE_DEFAULT_PARTITION__") else clip(value, MAX_TEXT)


def _partition_from_path(path: str) -> dict[str, str | None]:
    """The partition values in a data file's path ('date=2024-01-01/part-0.parquet')."""
    values: dict[str, str | None] = {}
    for segment in path.split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if sep and key:
            values[clip(key, 100)] = _partition_value(value)
    return values
