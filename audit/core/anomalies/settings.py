"""What the audit could not take at face value: an isolation setting writers ignore, and
commits that recorded no read version."""

from __future__ import annotations

from collections.abc import Iterator

from audit.core import severity as sev
from audit.core.conflicts.audits import read_version_facts
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.scope import is_blind
from audit.core.conflicts.verdict import CommitAudit
from audit.core.facts.anomalies import (
    IsolationSettingFacts,
    MissingReadVersionFacts,
    commits_span,
)
from audit.core.model import Finding
from audit.core.vocab import Engine, FindingKind, IsolationLevel, ReadVersionFact
from audit.core.wording.table import isolation_setting_text, missing_read_version_text

_DELTA_RS_LEVELS = frozenset({"serializable", "writeSerializable", "snapshotIsolation"})
_SPARK_LEVELS = frozenset({"serializable", "writeserializable", "snapshotisolation"})


def setting_understood(engine: str, value: str) -> bool:
    """Does this engine parse this `delta.isolationLevel` value? (delta-rs: camelCase only.)"""
    if engine == Engine.DELTA_RS:
        return value in _DELTA_RS_LEVELS
    if engine in (Engine.SPARK, Engine.DATABRICKS):
        return value.strip().lower() in _SPARK_LEVELS
    return True


def isolation_setting_facts(
    ctx: TableContext, commits: dict[int, CommitAudit]
) -> Iterator[IsolationSettingFacts]:
    """Per (engine, spelling) the table was written with but the engine does not parse."""
    seen: dict[tuple[str, str], list[int]] = {}
    understood: dict[tuple[str, str], bool] = {}  # a table has few (engine, spelling) pairs
    for version in commits:
        txn = ctx.summary(version)
        if txn is None or not txn.data_change:
            continue
        value = ctx.properties_at(version - 1 if version > 0 else 0).get("delta.isolationLevel")
        if value is None:
            continue
        pair = (txn.engine, str(value))
        known = understood.get(pair)
        if known is None:
            known = understood[pair] = setting_understood(*pair)
        if known:
            continue
        seen.setdefault((txn.engine, str(value)), []).append(version)
    for (engine, value), versions in sorted(seen.items(), key=lambda kv: kv[1][0]):
        used = IsolationLevel.SERIALIZABLE if engine == Engine.DELTA_RS else "its default level"
        yield IsolationSettingFacts(engine, value, used, versions)


def isolation_setting_findings(
    ctx: TableContext, commits: dict[int, CommitAudit]
) -> Iterator[Finding]:
    for facts in isolation_setting_facts(ctx, commits):
        yield isolation_setting_text(facts).finding(
            FindingKind.ISOLATION_SETTING_IGNORED,
            sev.isolation_setting_ignored_severity(),
            facts.versions[0],
            [],
            details={
                "engine": facts.engine,
                "value": facts.value,
                **commits_span(facts.versions),
            },
        )


def missing_read_version_facts(
    ctx: TableContext, commits: dict[int, CommitAudit]
) -> MissingReadVersionFacts | None:
    unknown: list[int] = []
    derived: list[int] = []
    # From the audit's columns: no per-commit view is built (most commits have none).
    for v, fact in read_version_facts(commits):
        if fact == ReadVersionFact.UNKNOWN:
            # Version 0 creates the table: there was nothing to read.
            if v > 0 and (s := ctx.summary(v)) is not None and s.data_change and not is_blind(s):
                unknown.append(v)
        elif fact == ReadVersionFact.DERIVED:
            derived.append(v)
    derived.sort()
    if not unknown and not derived:
        return None
    return MissingReadVersionFacts(unknown, derived)


def missing_read_version_finding(
    ctx: TableContext, commits: dict[int, CommitAudit]
) -> Finding | None:
    facts = missing_read_version_facts(ctx, commits)
    if facts is None:
        return None
    return missing_read_version_text(facts).finding(
        FindingKind.MISSING_READ_VERSION,
        sev.derived_fact_severity(),
        min(facts.unknown + facts.derived),
        [],
        details={"unknown": len(facts.unknown), "derived": facts.derived[:100]},
    )
