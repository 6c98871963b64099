"""Words for the commit-time conflicts Delta should have raised (facts: facts/conflicts.py)."""

from __future__ import annotations

from audit.core.facts.conflicts import MetadataChangeFacts, MissedConflictFacts
from audit.core.vocab import ConflictException
from audit.core.wording import FindingText, operation_name, versions_listed


def missed_conflict_text(facts: MissedConflictFacts) -> FindingText:
    op = operation_name(facts.operation)
    names = ", ".join(facts.exception_names)
    listed = versions_listed(facts.winners)
    return FindingText(
        f"{op} at v{facts.version} committed although {facts.isolation_level} should have "
        f"raised {names} against v{listed}",
        f"Version {facts.version} ({op}, engine {facts.engine}) read version {facts.read_version} "
        f"({facts.read_version_fact}) and ran under {facts.isolation_level} "
        f"({facts.isolation_level_fact}). Delta's conflict rules say it should have "
        f"failed with {names} because of version(s) {listed}, which changed what it read "
        f"({facts.read_scope}). Its writer let it commit anyway, so the table may not "
        "match any serial order of its history.",
    )


def metadata_change_text(facts: MetadataChangeFacts) -> FindingText:
    op = operation_name(facts.operation)
    change = facts.change
    listed = versions_listed(facts.in_flight)
    exception = (
        ConflictException.PROTOCOL_CHANGED
        if change == "protocol"
        else ConflictException.METADATA_CHANGED
    )
    return FindingText(
        f"{op} at v{facts.version} changed the table {change} while v{listed} were in "
        "flight, and they committed anyway",
        f"Version {facts.version} ({op}) changed the table {change}. Delta fails every "
        f"transaction that was running at that moment ({exception}). "
        f"Version(s) {listed} had read an earlier version and still committed after it, so they "
        "were written against the old schema, properties or protocol.",
    )
