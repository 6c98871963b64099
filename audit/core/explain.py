"""Conflict-exception texts -> what happened, which commit did it, and what to change.

Input is whatever a user pastes: a Spark/Delta OSS exception (old wording or with an error
class), a Databricks text carrying `Conflicting commit: {json}`, a PySpark/Py4J wrapper with a
stack trace, or a delta-rs error (Python `CommitFailedError`, Rust `CommitConflictError`). All
of it is untrusted: it is searched with bounded regular expressions, never evaluated, and the
strings it contributes to the output are capped in length.

`parse_exception` extracts the facts; `explain_conflict` turns them, plus optional table facts
from a loaded History, into an explanation and fixes. Both are pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from audit.core.matrix import INSERT, OPTIMIZE, UDM, operation_family, uses_zorder
from audit.core.model import CommitSummary, TableState
from audit.core.summary import decode_parameters, effective_isolation_level

APPEND = "ConcurrentAppendException"
DELETE_READ = "ConcurrentDeleteReadException"
DELETE_DELETE = "ConcurrentDeleteDeleteException"
METADATA = "MetadataChangedException"
TRANSACTION = "ConcurrentTransactionException"
PROTOCOL = "ProtocolChangedException"
WRITE = "ConcurrentWriteException"  # the generic one, seventh
CANONICAL_EXCEPTIONS: tuple[str, ...] = (
    APPEND,
    DELETE_READ,
    DELETE_DELETE,
    METADATA,
    TRANSACTION,
    PROTOCOL,
    WRITE,
)

MAX_INPUT_CHARS = 1_000_000  # beyond this a paste is a log dump; the exception is near the top
MAX_JSON_CHARS = 200_000
MAX_TEXT = 300  # cap on any single untrusted string echoed back
TIMESTAMP_TOLERANCE_MS = 5_000

# What the reference page says each exception means.
MEANINGS: dict[str, str] = {
    APPEND: (
        "A concurrent operation added files in the same partition (or anywhere in an "
        "unpartitioned table) that your operation read. The additions can come from INSERT, "
        "DELETE, UPDATE or MERGE; under WriteSerializable files added by blind appends are "
        "exempt, under Serializable they conflict too."
    ),
    DELETE_READ: (
        "A concurrent operation deleted a file that your operation read. Common causes are a "
        "DELETE, UPDATE or MERGE that rewrites files, or a compaction (OPTIMIZE)."
    ),
    DELETE_DELETE: (
        "A concurrent operation deleted a file that your operation also deletes, typically two "
        "concurrent compactions rewriting the same files."
    ),
    METADATA: (
        "A concurrent transaction updated the table's metadata: an ALTER TABLE, a table "
        "property change or a write that changed the schema. Metadata changes make all "
        "concurrent writes fail."
    ),
    TRANSACTION: (
        "Two streaming queries using the same checkpoint location wrote to the table at the "
        "same time. Two streaming queries must never share a running checkpoint location."
    ),
    PROTOCOL: (
        "The table's protocol changed concurrently: it was upgraded (a table feature was "
        "enabled or dropped), or several writers created or replaced the table, or wrote to an "
        "empty path, at the same time."
    ),
    WRITE: (
        "A concurrent transaction committed new data after your transaction read the table; "
        "Delta could not tell which of the specific conflicts above it was."
    ),
}

_ERROR_CLASSES = {
    "DELTA_CONCURRENT_APPEND": APPEND,
    "DELTA_CONCURRENT_DELETE_READ": DELETE_READ,
    "DELTA_CONCURRENT_DELETE_DELETE": DELETE_DELETE,
    "DELTA_METADATA_CHANGED": METADATA,
    "DELTA_CONCURRENT_TRANSACTION": TRANSACTION,
    "DELTA_PROTOCOL_CHANGED": PROTOCOL,
    "DELTA_CONCURRENT_WRITE": WRITE,
}
_RUST_VARIANTS = {
    "ConcurrentAppend": APPEND,
    "ConcurrentDeleteRead": DELETE_READ,
    "ConcurrentDeleteDelete": DELETE_DELETE,
    "MetadataChanged": METADATA,
    "ConcurrentTransaction": TRANSACTION,
    "ProtocolChanged": PROTOCOL,
}

_ERROR_CLASS_RE = re.compile(r"\[(DELTA_[A-Z_]{3,60})(?:\.([A-Z_]{1,60}))?\]")
_CLASS_NAME_RE = re.compile(r"\b(" + "|".join(CANONICAL_EXCEPTIONS) + r")\b")
_GENERIC_CLASS_RE = re.compile(r"\bDeltaConcurrentModificationException\b")
_RUST_RE = re.compile(
    r"\b(?:CommitConflict\(|CommitConflictError::)(" + "|".join(_RUST_VARIANTS) + r")\b"
)
# (pattern, exception, engine) for the message wordings, checked when no class name is given.
_PHRASES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"Files were added to (?:partition \[|the root of the table)"), APPEND, "spark"),
    (re.compile(r"attempted to read one or more files that were deleted"), DELETE_READ, "spark"),
    (
        re.compile(r"attempted to delete one or more files that were deleted"),
        DELETE_DELETE,
        "spark",
    ),
    (
        re.compile(r"metadata of the Delta table has been changed by a concurrent update"),
        METADATA,
        "spark",
    ),
    (
        re.compile(r"protocol version of the Delta table has been changed by a concurrent update"),
        PROTOCOL,
        "spark",
    ),
    (
        re.compile(r"multiple streaming queries are using the same checkpoint"),
        TRANSACTION,
        "spark",
    ),
    (
        re.compile(r"concurrent transaction has written new data since the current transaction"),
        WRITE,
        "spark",
    ),
    (
        re.compile(
            r"Transaction conflict detected\. A concurrent [^\n]{1,80}? added data to table"
        ),
        APPEND,
        "databricks",
    ),
    (
        re.compile(
            r"Transaction conflict detected, a concurrent [^\n]{1,80}? deleted data from table"
            r".{0,600}?that this transaction read",
            re.S,
        ),
        DELETE_READ,
        "databricks",
    ),
    (re.compile(r"a concurrent transactions? added new data"), APPEND, "delta-rs"),
    (
        re.compile(r"a concurrent transaction deleted data this operation read"),
        DELETE_READ,
        "delta-rs",
    ),
    (
        re.compile(r"a concurrent transaction deleted the same data your transaction deletes"),
        DELETE_DELETE,
        "delta-rs",
    ),
    (re.compile(r"Metadata changed since last commit"), METADATA, "delta-rs"),
    (re.compile(r"Protocol changed since last commit"), PROTOCOL, "delta-rs"),
    (re.compile(r"Concurrent transaction failed\."), TRANSACTION, "delta-rs"),
    (re.compile(r"Tried committing existing table version: ?-?\d+"), WRITE, "delta-rs"),
    (re.compile(r"Delta transaction failed, version -?\d+ already exists"), WRITE, "delta-rs"),
    (re.compile(r"\bVersionAlreadyExists\(-?\d+\)"), WRITE, "delta-rs"),
)
_VERSION_MISMATCH_RE = re.compile(r"\bVersion mismatch\b")

_CONFLICTING_COMMIT_RE = re.compile(r"Conflicting commit:\s*")
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
_SCALAR_RE = re.compile(
    r'-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|"(?:[^"\\\n]|\\.){0,5000}"'
)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass
class ParsedException:
    exception: str  # one of CANONICAL_EXCEPTIONS
    error_class: str | None  # e.g. DELTA_CONCURRENT_APPEND or DELTA_CONCURRENT_APPEND.WITHOUT_HINT
    message: str  # the human part of the message, one line, capped
    engine: str  # "spark" | "databricks" | "delta-rs" | "unknown"
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


class HistoryLike(Protocol):
    """What explain needs from audit.core.summary.History."""

    table_uri: str
    state: TableState
    summaries: list[CommitSummary]


# =========================================================================== parsing


def parse_exception(text: str) -> ParsedException | None:
    """Parse one conflict-exception text; None when it is not a Delta conflict exception."""
    if not isinstance(text, str) or not text.strip():
        return None
    truncated = len(text) > MAX_INPUT_CHARS
    text = text[:MAX_INPUT_CHARS]
    commit, complete, span = _conflicting_commit(text)
    # Search outside the JSON: a user name or predicate in it may spell an exception name.
    searchable = (
        text if span is None else text[: span[0]] + " " * (span[1] - span[0]) + text[span[1] :]
    )
    found = _detect(searchable)
    if found is None:
        return None
    exception, error_class, engine, position = found
    parsed = ParsedException(
        exception=exception,
        error_class=error_class,
        message=_message_at(searchable, position),
        engine=_engine(searchable, engine, commit),
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


def _detect(text: str) -> tuple[str, str | None, str, int] | None:
    """(exception, error class, engine hint, position) of the earliest signal in the text."""
    signals: list[tuple[int, str, str | None, str]] = []
    error_class = None
    for match in _ERROR_CLASS_RE.finditer(text):
        if match.group(1) in _ERROR_CLASSES:
            error_class = match.group(1) + (f".{match.group(2)}" if match.group(2) else "")
            signals.append((match.start(), _ERROR_CLASSES[match.group(1)], error_class, "spark"))
            break
    match = _CLASS_NAME_RE.search(text)
    if match:
        signals.append((match.start(), match.group(1), None, "spark"))
    match = _RUST_RE.search(text)
    if match:
        signals.append((match.start(), _RUST_VARIANTS[match.group(1)], None, "delta-rs"))
    for pattern, exception, engine in _PHRASES:
        match = pattern.search(text)
        if match:
            signals.append((match.start(), exception, None, engine))
    if not signals:
        match = _GENERIC_CLASS_RE.search(text) or (
            _VERSION_MISMATCH_RE.search(text) if "delta" in text.lower() else None
        )
        if match is None:
            return None
        signals.append((match.start(), WRITE, None, "unknown"))
    position, exception, _, engine = min(signals, key=lambda s: s[0])
    # The error class belongs to the exception only if it names the same one.
    if error_class and _ERROR_CLASSES[error_class.split(".")[0]] != exception:
        error_class = None
    return exception, error_class, engine, position


def _message_at(text: str, position: int) -> str:
    """The human-readable message from `position` on, without wrapper prefixes.

    A class name or error class starts the message; a matched wording may sit mid-sentence,
    so then the message starts at that sentence (after the previous ': ' or '. ').
    """
    start = text.rfind("\n", 0, position) + 1
    if _RUST_RE.match(text, position):
        pass  # a Debug-printed Rust error: the whole line is the message
    elif not _starts_with_name(text, position):
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
    return _clip(message, 1000)


def _starts_with_name(text: str, position: int) -> bool:
    """Whether an exception name, error class or delta-rs variant starts at `position`."""
    head = text[position : position + 120]
    return bool(_CLASS_NAME_RE.match(head) or _ERROR_CLASS_RE.match(head) or _RUST_RE.match(head))


def _engine(text: str, hint: str, commit: dict[str, Any] | None) -> str:
    lowered = text[:200_000].lower()
    engine_info = str((commit or {}).get("engineInfo") or "").lower()
    delta_rs_marks = ("commitfailederror", "deltalake.exceptions", "deltalake_core", "delta-rs")
    if hint == "delta-rs" or any(mark in lowered for mark in delta_rs_marks):
        return "delta-rs"
    if (
        "databricks" in engine_info
        or "com.databricks" in lowered
        or "databricks.com" in lowered
        or "azuredatabricks" in lowered
        or (commit or {}).get("clusterId")
    ):
        return "databricks"
    if hint in ("spark", "databricks") or "io.delta" in lowered or "org.apache.spark" in lowered:
        return "databricks" if hint == "databricks" else "spark"
    return "unknown"


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
    parsed.partition_hints = _unique(_clip(h, MAX_TEXT) for h in hints)[:20]
    parsed.partitions = [parse_partition_hint(h) for h in parsed.partition_hints]
    for path in files:
        from_path = _partition_from_path(path)
        if from_path and from_path not in parsed.partitions:
            parsed.partitions.append(from_path)
    parsed.files = [_clip(f, MAX_TEXT) for f in files]


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
        parsed.concurrent_operation = _clip(match.group("op"), 80)
        parsed.table_name = _clip(match.group("table").rstrip(".,"), MAX_TEXT)
    elif parsed.conflicting_commit:
        operation = parsed.conflicting_commit.get("operation")
        if isinstance(operation, str):
            parsed.concurrent_operation = _clip(operation, 80)


def _version(commit: dict[str, Any] | None, text: str) -> int | None:
    value = (commit or {}).get("version")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    for pattern in _VERSION_PATTERNS:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def _detail(exception: str, text: str) -> str | None:
    if exception == PROTOCOL:
        if _EMPTY_DIR_RE.search(text):
            return "several writers wrote to an empty path at the same time"
        match = _PROTOCOL_DETAIL_RE.search(text)
        if match and match.group(1).strip():
            return _clip(match.group(1).strip(), MAX_TEXT)
    return None


def parse_partition_hint(hint: str, columns: Iterable[str] | None = None) -> dict[str, str | None]:
    """'date=2024-01-01, country=US' -> {'date': '2024-01-01', 'country': 'US'}.

    Values may themselves contain ', ' or '='; with the table's partition columns known the
    split happens only at '<column>=' boundaries, which keeps such values whole.
    """
    text = hint.strip().strip("[]")
    known = [c for c in (columns or []) if c]
    if known:
        starts = []
        for column in known:
            match = re.search(r"(?:^|, )" + re.escape(column) + "=", text)
            if match:
                starts.append((match.start() if match.start() == 0 else match.start() + 2, column))
        starts.sort()
        values: dict[str, str | None] = {}
        for index, (start, column) in enumerate(starts):
            end = starts[index + 1][0] - 2 if index + 1 < len(starts) else len(text)
            values[column] = _partition_value(text[start + len(column) + 1 : end])
        if values:
            return values
    values = {}
    for part in text.split(", "):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            values[_clip(key.strip(), 100)] = _partition_value(value)
    return values


def _partition_value(value: str) -> str | None:
    value = value.strip()
    return None if value in ("null", "__HIVE_DEFAULT_PARTITION__") else _clip(value, MAX_TEXT)


def _partition_from_path(path: str) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for segment in path.split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if sep and key:
            values[_clip(key, 100)] = _partition_value(value)
    return values


# --------------------------------------------------------------------------- conflicting commit


def _conflicting_commit(text: str) -> tuple[dict[str, Any] | None, bool, tuple[int, int] | None]:
    """The `Conflicting commit: {...}` object, whether it was complete, and its text span."""
    match = _CONFLICTING_COMMIT_RE.search(text)
    if not match:
        return None, False, None
    start = match.end()
    if start >= len(text) or text[start] != "{":
        return None, False, None
    end = _balanced_end(text, start)
    if end is not None:
        try:
            value = orjson.loads(text[start:end])
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value, True, (start, end)
    # Cut off, or not JSON (e.g. redacted "version":xxxx): keep the top-level scalars we can read.
    stop = end if end is not None else _line_end(text, start)
    partial = _top_level_scalars(text[start:stop])
    return (partial or None), False, (start, stop)


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
                value_at = _skip_spaces(fragment, after + 1)
                scalar = _SCALAR_RE.match(fragment, value_at)
                if scalar and _is_complete_scalar(fragment, scalar.end()):
                    try:
                        key = orjson.loads(fragment[index:end])
                        values[str(key)] = orjson.loads(scalar.group(0))
                    except orjson.JSONDecodeError:
                        pass  # a malformed member: skip it, keep the others
                    index = scalar.end()
                    continue
                index = after + 1
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


def _is_complete_scalar(fragment: str, end: int) -> bool:
    """A number cut off by truncation ('"version":12' at the end) is not trusted."""
    after = _skip_spaces(fragment, end)
    return after < len(fragment) and fragment[after] in ",}"


def _string_end(text: str, start: int) -> int | None:
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


# =========================================================================== explaining


@dataclass
class TableFacts:
    """What the fixes depend on, read from the table's latest state."""

    table_uri: str
    partition_columns: list[str]
    clustering_columns: list[str]
    deletion_vectors: bool
    isolation_property: str | None
    isolation_level: str | None  # effective for the engine that raised the exception
    isolation_level_source: (
        str  # "table property" | "recorded by commits" | "engine default" | "unknown"
    )
    identity_columns: list[str]
    row_level_concurrency: bool  # DVs on and (unpartitioned or liquid clustering)
    latest_version: int
    first_version: int | None


@dataclass
class CommitView:
    """The conflicting commit, from the table's history or else from the exception's JSON."""

    version: int | None
    timestamp: int | None
    operation: str | None
    operation_parameters: dict[str, Any]
    read_version: int | None
    isolation_level: str | None
    blind_append: bool | None
    txn_id: str | None
    user_name: str | None
    engine_info: str | None
    source: str  # "history" | "exception"

    @property
    def kind(self) -> str:
        return operation_family(self.operation, self.blind_append, self.operation_parameters)


def table_facts(history: HistoryLike, engine: str = "unknown") -> TableFacts:
    state = history.state
    properties = state.properties
    dv = str(properties.get("delta.enableDeletionVectors", "")).strip().lower() == "true"
    partitioned = bool(state.partition_columns)
    level, source = _isolation_level(history, engine)
    versions = [s.version for s in history.summaries]
    return TableFacts(
        table_uri=_clip(str(history.table_uri), 1000),
        partition_columns=list(state.partition_columns),
        clustering_columns=list(state.clustering_columns),
        deletion_vectors=dv,
        isolation_property=properties.get("delta.isolationLevel"),
        isolation_level=level,
        isolation_level_source=source,
        identity_columns=[c.name for c in state.identity_columns],
        row_level_concurrency=dv and (not partitioned or bool(state.clustering_columns)),
        latest_version=state.version,
        first_version=min(versions) if versions else None,
    )


def _isolation_level(history: HistoryLike, engine: str) -> tuple[str | None, str]:
    """The level the failing writer most likely enforced, and where that came from.

    The table property wins (as the writer's engine reads it); without one, the level the
    table's own writers recorded last (SnapshotIsolation is OPTIMIZE's, not a table level);
    else the engine's default.
    """
    properties = history.state.properties
    writer_engine = engine if engine in ("spark", "databricks", "delta-rs") else "unknown"
    if properties.get("delta.isolationLevel"):
        level = effective_isolation_level(writer_engine, properties)  # type: ignore[arg-type]
        return level, "table property"
    for summary in reversed(history.summaries):
        recorded = summary.facts.get("isolation_level") == "recorded"
        if recorded and summary.isolation_level in ("Serializable", "WriteSerializable"):
            return summary.isolation_level, "recorded by commits"
    level = effective_isolation_level(writer_engine, properties)  # type: ignore[arg-type]
    return level, "engine default" if level else "unknown"


def locate_conflicting_commit(
    parsed: ParsedException, summaries: list[CommitSummary]
) -> tuple[CommitSummary | None, str | None, list[str]]:
    """(summary, how it was found, notes). By version, else txnId, else timestamp+operation."""
    reported = parsed.conflicting_commit or {}
    notes: list[str] = []
    by_version = {s.version: s for s in summaries}
    if parsed.version is not None:
        found = by_version.get(parsed.version)
        if found is not None:
            return found, "version", _mismatches(found, reported)
        notes.append(
            f"Version {parsed.version} is not in this table's history"
            + (f" (it holds versions {min(by_version)}..{max(by_version)})." if by_version else ".")
        )
    txn_id = reported.get("txnId")
    if isinstance(txn_id, str) and txn_id:
        for summary in summaries:
            if summary.txn_id == txn_id:
                return summary, "txnId", notes
    timestamp = reported.get("timestamp")
    if isinstance(timestamp, int) and not isinstance(timestamp, bool):
        operation = reported.get("operation")
        near = [
            s
            for s in summaries
            if s.timestamp is not None
            and abs(s.timestamp - timestamp) <= TIMESTAMP_TOLERANCE_MS
            and (not isinstance(operation, str) or (s.operation or "").upper() == operation.upper())
        ]
        if near:
            return min(near, key=lambda s: abs((s.timestamp or 0) - timestamp)), "timestamp", notes
    return None, None, notes


def _mismatches(summary: CommitSummary, reported: dict[str, Any]) -> list[str]:
    problems = []
    operation = reported.get("operation")
    if (
        isinstance(operation, str)
        and summary.operation
        and operation.upper() != summary.operation.upper()
    ):
        problems.append(
            f"the exception names operation {_clip(operation, 80)!r} but version {summary.version}"
            f" is {_clip(summary.operation, 80)!r}"
        )
    txn_id = reported.get("txnId")
    if isinstance(txn_id, str) and summary.txn_id and txn_id != summary.txn_id:
        problems.append(f"txnId {_clip(txn_id, 80)} differs from the log's {summary.txn_id}")
    timestamp = reported.get("timestamp")
    if (
        isinstance(timestamp, int)
        and summary.timestamp is not None
        and abs(summary.timestamp - timestamp) > TIMESTAMP_TOLERANCE_MS
    ):
        problems.append(
            f"timestamp {_iso(timestamp)} differs from the log's {_iso(summary.timestamp)}"
        )
    if problems:
        problems.insert(0, f"Version {summary.version} exists but does not match the exception:")
        problems.append("is this the right table?")
        return [" ".join(problems)]
    return []


def likely_peer_versions(summaries: list[CommitSummary], conflicting_version: int) -> list[int]:
    """Commits whose read interval [read_version, version) contains the conflicting version.

    They were in flight when the conflicting commit landed (or read it and retried), so they
    are the committed neighbours of the transaction that failed; a retry of that transaction is
    among them if it succeeded later.
    """
    return [
        s.version
        for s in summaries
        if s.read_version is not None
        and s.version != conflicting_version
        and s.read_version <= conflicting_version < s.version
    ][:50]


def candidate_versions(exception: str, summaries: list[CommitSummary], limit: int = 5) -> list[int]:
    """Without a version in the text: the latest commits that could raise this exception."""

    def could_cause(s: CommitSummary) -> bool:
        if exception == METADATA:
            return s.metadata_changed
        if exception == PROTOCOL:
            return s.protocol_changed or (s.metadata_changed and s.version == 0)
        if exception == TRANSACTION:
            return bool(s.app_ids)
        if exception in (DELETE_READ, DELETE_DELETE):
            return bool(s.removed_paths_all)
        return s.files_added > 0

    return [s.version for s in reversed(summaries) if could_cause(s)][:limit]


def explain_conflict(text: str, history: HistoryLike | None = None) -> dict[str, Any]:
    """Explain a conflict exception, located in `history` when given. Never raises on input."""
    parsed = parse_exception(text)
    if parsed is None:
        return {
            "exception": None,
            "conflicting_version": None,
            "explanation": "This is not a Delta conflict exception: none of the six conflict "
            "exceptions (or delta-rs's commit conflicts) is named or worded in the text.",
            "fixes": [],
        }
    facts = table_facts(history, parsed.engine) if history is not None else None
    located, found_by, notes = (
        locate_conflicting_commit(parsed, history.summaries)
        if history is not None
        else (None, None, [])
    )
    view = _view_from_summary(located) if located else _view_from_report(parsed)
    conflicting_version = (
        parsed.version if parsed.version is not None else (view.version if view else None)
    )
    peers = (
        likely_peer_versions(history.summaries, conflicting_version)
        if history is not None and conflicting_version is not None
        else []
    )
    candidates = (
        candidate_versions(parsed.exception, history.summaries)
        if history is not None and view is None
        else []
    )
    if parsed.input_truncated:
        notes.append(
            f"The input was longer than {MAX_INPUT_CHARS} characters; only the start was read."
        )
    if parsed.conflicting_commit is not None and not parsed.conflicting_commit_complete:
        notes.append(
            "The Conflicting commit JSON was cut off or invalid; only its readable fields were used."
        )
    return {
        "exception": parsed.exception,
        "conflicting_version": conflicting_version,
        "explanation": _explanation(parsed, view, found_by, facts),
        "fixes": fixes_for(parsed, view, facts),
        "error_class": parsed.error_class,
        "engine": parsed.engine,
        "message": parsed.message,
        "meaning": MEANINGS[parsed.exception],
        "partitions": parsed.partitions,
        "root_of_table": parsed.root_of_table,
        "files": parsed.files,
        "operations": {
            "conflicting": view.operation if view else parsed.concurrent_operation,
            "conflicting_kind": view.kind if view else None,
        },
        "conflicting_commit": _commit_dict(view, found_by) if located else None,
        "reported_commit": _reported_dict(parsed),
        "likely_peer_versions": peers,
        "candidate_versions": candidates,
        "isolation_level": facts.isolation_level if facts else None,
        "table": asdict(facts) if facts else None,
        "notes": notes,
    }


def _view_from_summary(summary: CommitSummary) -> CommitView:
    return CommitView(
        version=summary.version,
        timestamp=summary.timestamp,
        operation=summary.operation,
        operation_parameters=dict(summary.operation_parameters or {}),
        read_version=summary.read_version,
        isolation_level=summary.isolation_level,
        blind_append=summary.blind_append,
        txn_id=summary.txn_id,
        user_name=summary.user_name,
        engine_info=summary.engine_info,
        source="history",
    )


def _view_from_report(parsed: ParsedException) -> CommitView | None:
    reported = parsed.conflicting_commit
    if not reported and parsed.concurrent_operation is None and parsed.version is None:
        return None
    reported = reported or {}
    params = reported.get("operationParameters")
    return CommitView(
        version=parsed.version,
        timestamp=_int_or_none(reported.get("timestamp")),
        operation=_str_or_none(reported.get("operation")) or parsed.concurrent_operation,
        operation_parameters=decode_parameters(params) if isinstance(params, dict) else {},
        read_version=_int_or_none(reported.get("readVersion")),
        isolation_level=_str_or_none(reported.get("isolationLevel")),
        blind_append=reported.get("isBlindAppend")
        if isinstance(reported.get("isBlindAppend"), bool)
        else None,
        txn_id=_str_or_none(reported.get("txnId")),
        user_name=_str_or_none(reported.get("userName")),
        engine_info=_str_or_none(reported.get("engineInfo")),
        source="exception",
    )


def _commit_dict(view: CommitView, found_by: str | None) -> dict[str, Any]:
    return {
        "version": view.version,
        "timestamp": view.timestamp,
        "operation": view.operation,
        "kind": view.kind,
        "read_version": view.read_version,
        "isolation_level": view.isolation_level,
        "blind_append": view.blind_append,
        "txn_id": view.txn_id,
        "user_name": view.user_name,
        "engine_info": view.engine_info,
        "found_by": found_by,
    }


_REPORTED_KEYS = (
    "version",
    "timestamp",
    "userId",
    "userName",
    "operation",
    "operationParameters",
    "job",
    "notebook",
    "clusterId",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "operationMetrics",
    "engineInfo",
    "txnId",
)


def _reported_dict(parsed: ParsedException) -> dict[str, Any] | None:
    if parsed.conflicting_commit is None:
        return None
    reported = {
        k: parsed.conflicting_commit[k] for k in _REPORTED_KEYS if k in parsed.conflicting_commit
    }
    reported["complete"] = parsed.conflicting_commit_complete
    return reported


# --------------------------------------------------------------------------- the words


def _explanation(
    parsed: ParsedException, view: CommitView | None, found_by: str | None, facts: TableFacts | None
) -> str:
    parts = [f"{parsed.exception}: {MEANINGS[parsed.exception]}"]
    if view is not None:
        parts.append(_describe_commit(view, found_by))
    where = _where(parsed)
    if where:
        parts.append(f"The conflict was in {where}.")
    if parsed.detail:
        parts.append(f"Detail: {parsed.detail}.")
    if facts is not None:
        parts.append(_describe_table(facts))
    return " ".join(parts)


def _describe_commit(view: CommitView, found_by: str | None) -> str:
    what = f"version {view.version}" if view.version is not None else "a commit"
    bits = []
    if view.operation:
        bits.append(_clip(view.operation, 80))
    if view.blind_append is True and view.kind == INSERT:
        bits.append("a blind append")
    if view.timestamp is not None:
        bits.append(f"at {_iso(view.timestamp)}")
    if view.user_name:
        bits.append(f"by {_clip(view.user_name, 120)}")
    if view.read_version is not None:
        bits.append(f"read version {view.read_version}")
    detail = f" ({', '.join(bits)})" if bits else ""
    if view.source == "history":
        how = {
            "version": " by its version",
            "txnId": " by its txnId",
            "timestamp": " by its timestamp",
        }
        return f"The conflicting commit is {what}{detail}, found in the table's history{how.get(found_by or '', '')}."
    return f"The conflicting commit is {what}{detail}, as the exception reports it."


def _where(parsed: ParsedException) -> str | None:
    if parsed.partitions:
        shown = [
            "[" + ", ".join(f"{k}={v}" for k, v in p.items()) + "]" for p in parsed.partitions[:5]
        ]
        return "partition " + "; ".join(shown)
    if parsed.root_of_table:
        return "the root of the table (Delta says so when the table is unpartitioned)"
    return None


def _describe_table(facts: TableFacts) -> str:
    layout = (
        f"partitioned by {', '.join(facts.partition_columns)}"
        if facts.partition_columns
        else "unpartitioned"
    )
    if facts.clustering_columns:
        layout += f", liquid-clustered by {', '.join(facts.clustering_columns)}"
    dvs = "deletion vectors on" if facts.deletion_vectors else "deletion vectors off"
    level = facts.isolation_level or "not recorded"
    rlc = "applies" if facts.row_level_concurrency else "does not apply"
    return (
        f"The table is {layout}, with {dvs}; its isolation level for this writer is {level}"
        f"; row-level concurrency {rlc}."
    )


def fixes_for(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    """Specific fixes for this exception on this table (generic ones when no table is given)."""
    builders = {
        APPEND: _fixes_append,
        DELETE_READ: _fixes_delete_read,
        DELETE_DELETE: _fixes_delete_delete,
        METADATA: _fixes_metadata,
        PROTOCOL: _fixes_protocol,
        TRANSACTION: _fixes_transaction,
        WRITE: _fixes_write,
    }
    fixes = builders[parsed.exception](parsed, view, facts)
    if facts is not None and facts.identity_columns:
        fixes.insert(
            0,
            f"This table has identity columns ({', '.join(facts.identity_columns)}): tables with "
            "identity columns do not support concurrent transactions, so run its writers one "
            "at a time.",
        )
    return _unique(fixes)


def _fixes_append(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes: list[str] = []
    columns = (
        facts.partition_columns if facts else sorted({k for p in parsed.partitions for k in p})
    )
    values = parsed.partitions[0] if parsed.partitions else {}
    partitioned = _partitioned(parsed, facts)
    if columns:
        fixes.append(
            "Make the separation explicit: put literal predicates on the partition columns into "
            "the operation's condition, so it reads only its own partition and not the ones "
            f"concurrent jobs write, e.g. MERGE INTO target t USING source s ON s.id = t.id AND "
            f"{_partition_example(columns, values)}."
        )
    if partitioned is not True:
        fixes.append(
            "Partition the table by the columns your UPDATE/DELETE/MERGE conditions filter on "
            "(a low-cardinality column such as a date), so concurrent operations touch disjoint "
            "files; avoid high-cardinality partition columns."
        )
    fixes.extend(_row_level_fixes(facts, partitioned))
    fixes.extend(_isolation_fixes(parsed, view, facts))
    fixes.append(
        "If the failing statement is an INSERT whose subquery or condition reads this table, it "
        "is not a blind append (footnote (1)) and conflicts like a MERGE; rewrite it as a plain "
        "append where you can."
    )
    fixes.append(_RETRY)
    return fixes


def _partitioned(parsed: ParsedException, facts: TableFacts | None) -> bool | None:
    """Whether the table is partitioned: from the table, else from the exception's hints."""
    if facts is not None:
        return bool(facts.partition_columns)
    if parsed.partitions:
        return True
    return None


def _row_level_fixes(facts: TableFacts | None, partitioned: bool | None) -> list[str]:
    enable = (
        "enable deletion vectors (ALTER TABLE <table> SET TBLPROPERTIES "
        "('delta.enableDeletionVectors' = true)) or liquid clustering: on Databricks Runtime "
        "14.2+ that gives row-level concurrency, where only changes to the same rows conflict"
    )
    if facts is None:
        if partitioned:
            return []
        return (
            [f"If the table is unpartitioned, {enable}."]
            if partitioned is None
            else [f"The table looks unpartitioned: {enable}."]
        )
    if facts.row_level_concurrency:
        return [
            "Row-level concurrency already applies to this table on Databricks Runtime 14.2+ "
            "(deletion vectors, no partitions or liquid clustering): the operations touched the "
            "same rows, or a condition fell under its limitations (complex types, "
            "non-deterministic expressions, subqueries; in 14.2 MERGE needs an explicit "
            "predicate on the target)."
        ]
    if not facts.partition_columns:
        return [f"This table is unpartitioned and has no row-level concurrency: {enable}."]
    if facts.deletion_vectors:
        return [
            "Partitioned tables get no row-level concurrency, even with deletion vectors; "
            "liquid clustering instead of partitioning would give it (Databricks Runtime 14.2+)."
        ]
    return []


def _isolation_fixes(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes: list[str] = []
    blind = view is not None and view.blind_append is True and view.kind == INSERT
    level = facts.isolation_level if facts else None
    if blind and level != "WriteSerializable":
        fixes.append(
            f"The conflicting commit{_at(view)} was a blind append, which conflicts only under "
            "Serializable. WriteSerializable (the Databricks default) exempts blind appends: "
            "ALTER TABLE <table> SET TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable'). "
            "The price: readers may see a table state that never existed in the history's order."
        )
    if blind and level == "WriteSerializable":
        fixes.append(
            f"The conflicting commit{_at(view)} was a blind append, which WriteSerializable "
            "exempts: the failing writer enforced Serializable. Check its engine and the "
            "table's delta.isolationLevel value."
        )
    if facts and parsed.engine == "delta-rs" and facts.isolation_property == "WriteSerializable":
        fixes.append(
            "delta-rs reads the property value 'WriteSerializable' as Serializable (it expects "
            "'writeSerializable'), so this writer checks blind appends too."
        )
    if (
        view is not None
        and view.blind_append is False
        and view.kind == UDM
        and _op(view) == "WRITE"
    ):
        fixes.append(
            f"The conflicting WRITE{_at(view)} read the table before appending (isBlindAppend "
            "false), so it counts as a MERGE for conflicts (footnote (1))."
        )
    return fixes


def _fixes_delete_read(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = _compaction_fixes(view, facts)
    values = parsed.partitions[0] if parsed.partitions else {}
    if view is None or view.kind != OPTIMIZE:
        fixes.append(
            f"The commit{_at(view)} rewrote or removed files your transaction had read. Add "
            "partition predicates to both operations' conditions (partition pruning) so each "
            "reads only the partitions it changes"
            + (
                f", e.g. WHERE {_partition_example(facts.partition_columns, values)}."
                if facts and facts.partition_columns
                else "; partition the table by those condition columns if it is not."
            )
        )
    fixes.extend(_row_level_fixes(facts, _partitioned(parsed, facts)))
    fixes.append(_RETRY)
    return fixes


def _fixes_delete_delete(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = [
        "Do not run two compactions (OPTIMIZE, REORG, auto compaction) on the same partitions at "
        "the same time: run one scheduled compaction job per table."
    ]
    fixes.extend(_compaction_fixes(view, facts))
    fixes.append(
        "If both were DELETE/UPDATE/MERGE, give them disjoint partition predicates so they never "
        "remove the same file."
    )
    fixes.append(_RETRY)
    return fixes


def _compaction_fixes(view: CommitView | None, facts: TableFacts | None) -> list[str]:
    if view is None or view.kind != OPTIMIZE:
        if view is None:
            return [
                "If the concurrent commit was OPTIMIZE or REORG, schedule compaction outside write "
                "windows or restrict it to partitions no writer is changing "
                "(OPTIMIZE <table> WHERE <partition predicate>)."
            ]
        return []
    fixes = [
        f"The conflicting commit{_at(view)} was a compaction ({_clip(view.operation or '', 40)}). "
        "Schedule compaction outside write windows, or restrict it to partitions no writer is "
        "changing (OPTIMIZE <table> WHERE <partition predicate>)."
    ]
    auto = view.operation_parameters.get("auto")
    if auto is True or str(auto).lower() == "true":
        fixes.append(
            "It was auto compaction (delta.autoOptimize.autoCompact): disable it on this table "
            "or for the busy writer, and run a scheduled OPTIMIZE instead."
        )
    if uses_zorder(view.operation_parameters):
        fixes.append(
            "It used ZORDER BY, which can conflict even with deletion vectors: run Z-ordering "
            "only when no UPDATE/DELETE/MERGE runs."
        )
    elif facts is None or not facts.deletion_vectors:
        fixes.append(
            "Enable deletion vectors (ALTER TABLE <table> SET TBLPROPERTIES "
            "('delta.enableDeletionVectors' = true)): then OPTIMIZE without ZORDER BY does not "
            "conflict with UPDATE/DELETE/MERGE."
        )
    return fixes


def _fixes_metadata(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = []
    if view is not None and view.operation:
        fixes.append(
            f"The metadata change was {_clip(view.operation, 80)}{_at(view)}: run such DDL "
            "(ALTER TABLE, SET TBLPROPERTIES) in a maintenance window with writers paused, not "
            "while they run."
        )
    else:
        fixes.append(
            "Do not run ALTER TABLE or table property changes while writers run; do DDL in a "
            "maintenance window with writers paused."
        )
    fixes.append(
        "Schema evolution changes metadata too: evolve the schema once (ALTER TABLE ADD COLUMNS) "
        "before starting concurrent writers instead of writing with mergeSchema/autoMerge on "
        "every batch."
    )
    fixes.append("Streaming reads of this table stop on a metadata change; restart them.")
    fixes.append(_RETRY)
    return fixes


def _fixes_protocol(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = []
    creating = parsed.detail and "empty path" in parsed.detail
    operation = _op(view)
    if creating or "CREATE" in operation or "REPLACE" in operation:
        fixes.append(
            "Create the table once, in a setup step, before starting concurrent writers (CREATE "
            "TABLE IF NOT EXISTS ...); never let several writers create or replace it, or write "
            "to its empty path, at the same time."
        )
    fixes.append(
        "Upgrade the protocol (enabling deletion vectors or other table features, DROP FEATURE, "
        "REORG ... APPLY (UPGRADE UNIFORM ...)) only while no writers run."
    )
    fixes.append(
        "If the new protocol needs newer readers or writers, upgrade the Databricks Runtime, "
        "Delta Lake or delta-rs version of every job that writes this table."
    )
    fixes.append(_RETRY)
    return fixes


def _fixes_transaction(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    return [
        "Two instances of one streaming query ran with the same checkpoint location: stop the "
        "duplicate (look for a second job or cluster running it) and never start a query while "
        "another with that checkpoint is running.",
        "Give every streaming query its own checkpointLocation.",
        "For idempotent foreachBatch writes (txnAppId/txnVersion), give each query its own "
        "txnAppId.",
    ]


def _fixes_write(
    parsed: ParsedException, view: CommitView | None, facts: TableFacts | None
) -> list[str]:
    fixes = [
        "Another transaction committed the same version first. Re-run the operation on the new "
        "table state."
    ]
    if parsed.engine == "delta-rs":
        fixes.append(
            "delta-rs retries conflicting commits itself; keep that on "
            "(CommitProperties(max_commit_retries=...)) and make sure every writer uses a log "
            "store with atomic commits (on S3, a locking provider or conditional writes)."
        )
    fixes.append(_RETRY)
    return fixes


_RETRY = (
    "Retry with backoff: the conflict is transient, but re-run the whole read-modify-write, not "
    "only the commit."
)


def _partition_example(columns: list[str], values: dict[str, str | None]) -> str:
    predicates = []
    for column in columns[:4]:
        value = values.get(column)
        literal = (
            f"'{_clip(value, 60).replace(chr(39), chr(39) * 2)}'" if value else f"'<{column}>'"
        )
        predicates.append(f"t.{_clip(column, 60)} = {literal}")
    return " AND ".join(predicates)


def _at(view: CommitView | None) -> str:
    return f" (version {view.version})" if view is not None and view.version is not None else ""


def _op(view: CommitView | None) -> str:
    return (view.operation or "").upper() if view is not None else ""


# --------------------------------------------------------------------------- small helpers


def _clip(value: Any, limit: int) -> str:
    text = _CONTROL_RE.sub(" ", str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return _clip(value, MAX_TEXT) if isinstance(value, str) and value else None


__all__ = [
    "APPEND",
    "CANONICAL_EXCEPTIONS",
    "DELETE_DELETE",
    "DELETE_READ",
    "METADATA",
    "PROTOCOL",
    "TRANSACTION",
    "WRITE",
    "ParsedException",
    "TableFacts",
    "explain_conflict",
    "fixes_for",
    "likely_peer_versions",
    "locate_conflicting_commit",
    "parse_exception",
    "parse_partition_hint",
    "table_facts",
]
