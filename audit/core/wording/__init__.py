"""The sentences a finding shows (summary, explanation), apart from the code that finds it.

Like Jepsen Elle's explainer, which turns an anomaly found elsewhere into prose: the modules
of `conflicts/` and `anomalies/` compute facts (dataclasses), and the functions here turn
those facts, and nothing else, into words. Tests and the CLI's JSON compare these texts, so a
change of wording is a change of contract.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from audit.core.model import Finding
from audit.core.vocab import FindingKind, Severity


class FindingText(NamedTuple):
    summary: str
    explanation: str

    def finding(
        self,
        kind: FindingKind,
        severity: Severity,
        version: int,
        related_versions: list[int],
        *,
        confirmed: bool = True,
        details: dict[str, Any] | None = None,
        witness: dict[str, Any] | None = None,
    ) -> Finding:
        """The finding that shows these words (the one place a detector's facts meet them)."""
        return Finding(
            kind=kind,
            severity=severity,
            version=version,
            related_versions=related_versions,
            confirmed=confirmed,
            summary=self.summary,
            explanation=self.explanation,
            witness=witness,
            details=details if details is not None else {},
        )


def operation_name(operation: str | None) -> str:
    """A commit's operation as a sentence names it."""
    return operation or "an unnamed operation"


def versions_listed(versions: list[int]) -> str:
    return ", ".join(str(v) for v in versions)
