"""Findings of the re-run conflict checks: `missed_conflict` (a writer let through what its own
isolation level forbids) and `concurrent_metadata_change` (commits ran across a protocol or
metadata change). Facts here, words in wording/conflicts.py."""

from __future__ import annotations

from audit.core import severity as sev
from audit.core.conflicts.verdict import CommitAudit, commit_facts
from audit.core.facts.conflicts import MetadataChangeFacts, MissedConflictFacts
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import FindingKind, ReadVersionFact
from audit.core.wording.conflicts import metadata_change_text, missed_conflict_text


def missed_conflict_facts(
    txn: CommitSummary, audit: CommitAudit, winners: list[int]
) -> MissedConflictFacts:
    return MissedConflictFacts(
        **commit_facts(txn, audit),
        engine=txn.engine,
        isolation_level=txn.isolation_level,
        isolation_level_fact=txn.facts.get("isolation_level", ReadVersionFact.UNKNOWN),
        winners=list(winners),
        exceptions={str(w): audit.conflicts[w].at(txn.isolation_level) for w in winners},
    )


def missed_conflict_finding(txn: CommitSummary, audit: CommitAudit, winners: list[int]) -> Finding:
    facts = missed_conflict_facts(txn, audit, winners)
    return missed_conflict_text(facts).finding(
        FindingKind.MISSED_CONFLICT,
        sev.missed_conflict_severity(),
        facts.version,
        list(facts.winners),
        confirmed=facts.read_version_fact == ReadVersionFact.RECORDED,
        details={"exceptions": facts.exceptions, "isolation_level": facts.isolation_level},
    )


def metadata_change_facts(
    winner: CommitSummary | None, txns: list[CommitSummary]
) -> MetadataChangeFacts:
    protocol = winner is not None and winner.protocol_changed
    return MetadataChangeFacts(
        version=winner.version if winner is not None else txns[0].version,
        operation=winner.operation if winner is not None else None,
        change="protocol" if protocol else "metadata",
        in_flight=[t.version for t in txns],
        data_changing=any(t.data_change for t in txns),
        confirmed=all(t.facts.get("read_version") == ReadVersionFact.RECORDED for t in txns),
    )


def metadata_change_finding(winner: CommitSummary | None, txns: list[CommitSummary]) -> Finding:
    facts = metadata_change_facts(winner, txns)
    return metadata_change_text(facts).finding(
        FindingKind.CONCURRENT_METADATA_CHANGE,
        sev.metadata_change_severity(facts.data_changing),
        facts.version,
        sorted(facts.in_flight),
        confirmed=facts.confirmed,
        details={"change": facts.change, "data_changing": facts.data_changing},
    )
