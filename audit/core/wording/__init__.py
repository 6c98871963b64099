"""The sentences a finding shows (summary, explanation), apart from the code that finds it.

Like Jepsen Elle's explainer, which turns an anomaly found elsewhere into prose: the modules
of `conflicts/` and `anomalies/` compute facts (dataclasses), and the functions here turn
those facts, and nothing else, into words. Tests and the CLI's JSON compare these texts, so a
change of wording is a change of contract.
"""

from __future__ import annotations

from typing import NamedTuple


class FindingText(NamedTuple):
    summary: str
    explanation: str


def operation_name(operation: str | None) -> str:
    """A commit's operation as a sentence names it."""
    return operation or "an unnamed operation"


def versions_listed(versions: list[int]) -> str:
    return ", ".join(str(v) for v in versions)
