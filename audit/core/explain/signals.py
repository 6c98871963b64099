"""How each engine names or words a conflict exception, and which signal in a text comes first.

A text can carry several signals (a wrapper's class name, an error class, the message's own
wording, a delta-rs variant); the earliest one names the exception and hints at the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from audit.core.vocab import ConflictException, Engine

# The names the rest of the code (and older imports) use for the seven exceptions.
APPEND = ConflictException.CONCURRENT_APPEND
DELETE_READ = ConflictException.CONCURRENT_DELETE_READ
DELETE_DELETE = ConflictException.CONCURRENT_DELETE_DELETE
METADATA = ConflictException.METADATA_CHANGED
TRANSACTION = ConflictException.CONCURRENT_TRANSACTION
PROTOCOL = ConflictException.PROTOCOL_CHANGED
WRITE = ConflictException.CONCURRENT_WRITE  # the generic one, seventh
CANONICAL_EXCEPTIONS: tuple[ConflictException, ...] = (
    APPEND,
    DELETE_READ,
    DELETE_DELETE,
    METADATA,
    TRANSACTION,
    PROTOCOL,
    WRITE,
)

# Delta OSS error classes ("[DELTA_CONCURRENT_APPEND.WITHOUT_HINT]": the part before the dot).
ERROR_CLASSES: dict[str, ConflictException] = {
    "DELTA_CONCURRENT_APPEND": APPEND,
    "DELTA_CONCURRENT_DELETE_READ": DELETE_READ,
    "DELTA_CONCURRENT_DELETE_DELETE": DELETE_DELETE,
    "DELTA_METADATA_CHANGED": METADATA,
    "DELTA_CONCURRENT_TRANSACTION": TRANSACTION,
    "DELTA_PROTOCOL_CHANGED": PROTOCOL,
    "DELTA_CONCURRENT_WRITE": WRITE,
}
# delta-rs `CommitConflictError` variants; it has none for the generic exception.
_RUST_VARIANTS: dict[str, ConflictException] = {
    "ConcurrentAppend": APPEND,
    "ConcurrentDeleteRead": DELETE_READ,
    "ConcurrentDeleteDelete": DELETE_DELETE,
    "MetadataChanged": METADATA,
    "ConcurrentTransaction": TRANSACTION,
    "ProtocolChanged": PROTOCOL,
}

ERROR_CLASS_RE = re.compile(r"\[(DELTA_[A-Z_]{3,60})(?:\.([A-Z_]{1,60}))?\]")
CLASS_NAME_RE = re.compile(r"\b(" + "|".join(CANONICAL_EXCEPTIONS) + r")\b")
RUST_RE = re.compile(
    r"\b(?:CommitConflict\(|CommitConflictError::)(" + "|".join(_RUST_VARIANTS) + r")\b"
)
_GENERIC_CLASS_RE = re.compile(r"\bDeltaConcurrentModificationException\b")
_VERSION_MISMATCH_RE = re.compile(r"\bVersion mismatch\b")

# Each engine's message wordings, checked whatever class name is given; "(?s)" where a
# wording spans lines. Bounded repeats keep hostile input cheap.
_WORDINGS: dict[Engine, tuple[tuple[str, ConflictException], ...]] = {
    Engine.SPARK: (
        (r"Files were added to (?:partition \[|the root of the table)", APPEND),
        (r"attempted to read one or more files that were deleted", DELETE_READ),
        (r"attempted to delete one or more files that were deleted", DELETE_DELETE),
        (r"metadata of the Delta table has been changed by a concurrent update", METADATA),
        (r"protocol version of the Delta table has been changed by a concurrent update", PROTOCOL),
        (r"multiple streaming queries are using the same checkpoint", TRANSACTION),
        (r"concurrent transaction has written new data since the current transaction", WRITE),
    ),
    Engine.DATABRICKS: (
        (r"Transaction conflict detected\. A concurrent [^\n]{1,80}? added data to table", APPEND),
        (
            r"(?s)Transaction conflict detected, a concurrent [^\n]{1,80}? deleted data from table"
            r".{0,600}?that this transaction read",
            DELETE_READ,
        ),
    ),
    Engine.DELTA_RS: (
        (r"a concurrent transactions? added new data", APPEND),
        (r"a concurrent transaction deleted data this operation read", DELETE_READ),
        (r"a concurrent transaction deleted the same data your transaction deletes", DELETE_DELETE),
        (r"Metadata changed since last commit", METADATA),
        (r"Protocol changed since last commit", PROTOCOL),
        (r"Concurrent transaction failed\.", TRANSACTION),
        (r"Tried committing existing table version: ?-?\d+", WRITE),
        (r"Delta transaction failed, version -?\d+ already exists", WRITE),
        (r"\bVersionAlreadyExists\(-?\d+\)", WRITE),
    ),
}
_PHRASES: tuple[tuple[re.Pattern[str], ConflictException, Engine], ...] = tuple(
    (re.compile(pattern), exception, engine)
    for engine, wordings in _WORDINGS.items()
    for pattern, exception in wordings
)


@dataclass(frozen=True)
class Signal:
    """The earliest sign of a conflict exception in a text."""

    exception: ConflictException
    error_class: str | None  # e.g. DELTA_CONCURRENT_APPEND.WITHOUT_HINT, when it names `exception`
    engine: Engine  # the engine the signal's wording belongs to (a hint, not the verdict)
    position: int


def detect(text: str) -> Signal | None:
    """The earliest signal in the text; None when nothing names or words a conflict."""
    signals: list[tuple[int, ConflictException, Engine]] = []
    error_class = None
    for match in ERROR_CLASS_RE.finditer(text):
        if match.group(1) in ERROR_CLASSES:
            error_class = match.group(1) + (f".{match.group(2)}" if match.group(2) else "")
            signals.append((match.start(), ERROR_CLASSES[match.group(1)], Engine.SPARK))
            break
    match = CLASS_NAME_RE.search(text)
    if match:
        signals.append((match.start(), ConflictException(match.group(1)), Engine.SPARK))
    match = RUST_RE.search(text)
    if match:
        signals.append((match.start(), _RUST_VARIANTS[match.group(1)], Engine.DELTA_RS))
    for pattern, exception, engine in _PHRASES:
        match = pattern.search(text)
        if match:
            signals.append((match.start(), exception, engine))
    if not signals:
        match = _GENERIC_CLASS_RE.search(text) or (
            _VERSION_MISMATCH_RE.search(text) if "delta" in text.lower() else None
        )
        if match is None:
            return None
        signals.append((match.start(), WRITE, Engine.UNKNOWN))
    position, exception, engine = min(signals, key=lambda s: s[0])
    # The error class belongs to the exception only if it names the same one.
    if error_class and ERROR_CLASSES[error_class.split(".")[0]] != exception:
        error_class = None
    return Signal(exception, error_class, engine, position)


def starts_with_name(text: str, position: int) -> bool:
    """Whether an exception name, error class or delta-rs variant starts at `position`."""
    head = text[position : position + 120]
    return bool(CLASS_NAME_RE.match(head) or ERROR_CLASS_RE.match(head) or RUST_RE.match(head))
