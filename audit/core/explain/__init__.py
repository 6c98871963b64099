"""Conflict-exception texts -> what happened, which commit did it, and what to change.

The package, by concern:
- `signals`: how each engine names or words the seven exceptions; which comes first in a text.
- `commit_json`: the `Conflicting commit: {json}` Databricks appends (often cut off).
- `parse`: a pasted text -> `ParsedException`, the facts it states.
- `locate`: those facts placed in a table's history (`Location`), and the table's `TableFacts`.
- `wording` and `fixes`: the explanation's sentences and the advice.
- `result`: the entry point, `explain` -> `Explanation`, and `explain_conflict`, its JSON dict.
- `untrusted`: the caps and helpers every echoed string passes through.
All are pure functions of their input; the text is untrusted and never evaluated.
"""

# Handed on: the names callers outside the package use (the CLI, the API, the pages, tests).
from audit.core.explain.locate import TableFacts, likely_peer_versions, locate_conflicting_commit
from audit.core.explain.parse import parse_exception, parse_partition_hint
from audit.core.explain.result import (
    ConflictingCommit,
    Explanation,
    Operations,
    ReportedCommit,
    explain,
    explain_conflict,
)
from audit.core.explain.signals import (
    APPEND,
    CANONICAL_EXCEPTIONS,
    DELETE_DELETE,
    DELETE_READ,
    METADATA,
    PROTOCOL,
    TRANSACTION,
    WRITE,
)

__all__ = [
    "APPEND",
    "CANONICAL_EXCEPTIONS",
    "DELETE_DELETE",
    "DELETE_READ",
    "METADATA",
    "PROTOCOL",
    "TRANSACTION",
    "WRITE",
    "ConflictingCommit",
    "Explanation",
    "Operations",
    "ReportedCommit",
    "TableFacts",
    "explain",
    "explain_conflict",
    "likely_peer_versions",
    "locate_conflicting_commit",
    "parse_exception",
    "parse_partition_hint",
]
