"""WriteSerializable reorders: a commit that ignored blind appends it should have read.

WriteSerializable exempts files added by blind appends from the added-files check, so a
commit that read a partition an append wrote to still commits. The table then behaves as if it
ran before the append, which the history shows first: legal under WriteSerializable, forbidden
under Serializable. Critical when the rows it missed were found in the data (never-existed).
"""

from __future__ import annotations

from audit.core import severity as sev
from audit.core.conflicts.verdict import CommitAudit, Recheck, commit_facts
from audit.core.facts.anomalies import ReorderFacts
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import ConflictException, FindingKind, IsolationLevel
from audit.core.wording.anomalies import reorder_text


def is_reorder(level: str | None, verdict: Recheck) -> bool:
    """Did a WriteSerializable commit pass only because the winner was a blind append?"""
    return (
        level == IsolationLevel.WRITE_SERIALIZABLE
        and verdict.blind_append_exempt
        and verdict.write_serializable is None
    )


def exception_avoided(verdict: Recheck) -> ConflictException:
    """What Serializable would have raised instead of letting the commit reorder."""
    return verdict.serializable or ConflictException.CONCURRENT_APPEND


def reorder_facts(
    txn: CommitSummary,
    audit: CommitAudit,
    winners: list[int],
    exceptions: dict[int, ConflictException],
) -> ReorderFacts:
    return ReorderFacts(**commit_facts(txn, audit), winners=list(winners), exceptions=exceptions)


def reorder_finding(
    txn: CommitSummary,
    audit: CommitAudit,
    winners: list[int],
    exceptions: dict[int, ConflictException],
) -> Finding:
    facts = reorder_facts(txn, audit, winners, exceptions)
    return reorder_text(facts).finding(
        FindingKind.WRITE_SERIALIZABLE_REORDER,
        sev.reorder_severity(False),
        facts.version,
        list(facts.winners),
        details={
            "exceptions": {str(w): exceptions[w] for w in winners},
            "read_scope": audit.read_scope.as_dict(),
        },
    )


def upgrade_reorders(findings: list[Finding]) -> None:
    """A reorder whose never-existed snapshot was confirmed in the data becomes critical."""
    confirmed = {
        f.version for f in findings if f.kind == FindingKind.NEVER_EXISTED_SNAPSHOT and f.confirmed
    }
    for f in findings:
        if f.kind == FindingKind.WRITE_SERIALIZABLE_REORDER and f.version in confirmed:
            f.severity = sev.reorder_severity(True)
