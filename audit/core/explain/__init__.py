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

from audit.core.explain.fixes import fixes_for
from audit.core.explain.locate import (
    TIMESTAMP_TOLERANCE_MS,
    CommitView,
    HistoryLike,
    Location,
    TableFacts,
    candidate_versions,
    likely_peer_versions,
    locate,
    locate_conflicting_commit,
    table_facts,
)
from audit.core.explain.parse import ParsedException, parse_exception, parse_partition_hint
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
from audit.core.explain.untrusted import MAX_INPUT_CHARS, MAX_JSON_CHARS, MAX_TEXT
from audit.core.explain.wording import MEANINGS

__all__ = [
    "APPEND",
    "CANONICAL_EXCEPTIONS",
    "DELETE_DELETE",
    "DELETE_READ",
    "MAX_INPUT_CHARS",
    "MAX_JSON_CHARS",
    "MAX_TEXT",
    "MEANINGS",
    "METADATA",
    "PROTOCOL",
    "TIMESTAMP_TOLERANCE_MS",
    "TRANSACTION",
    "WRITE",
    "CommitView",
    "ConflictingCommit",
    "Explanation",
    "HistoryLike",
    "Location",
    "Operations",
    "ParsedException",
    "ReportedCommit",
    "TableFacts",
    "candidate_versions",
    "explain",
    "explain_conflict",
    "fixes_for",
    "likely_peer_versions",
    "locate",
    "locate_conflicting_commit",
    "parse_exception",
    "parse_partition_hint",
    "table_facts",
]
