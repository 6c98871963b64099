"""Words for the table-level findings of the audit (facts: facts/anomalies.py)."""

from __future__ import annotations

from audit.core.facts.anomalies import IdentityFacts, IsolationSettingFacts, MissingReadVersionFacts
from audit.core.vocab import Engine
from audit.core.wording import FindingText


def isolation_setting_text(facts: IsolationSettingFacts) -> FindingText:
    engine, value, used, versions = facts.engine, facts.value, facts.used, facts.versions
    accepted = (
        " (delta-rs accepts only 'serializable', 'writeSerializable' and 'snapshotIsolation')."
        if engine == Engine.DELTA_RS
        else "."
    )
    return FindingText(
        f"{engine} writers do not understand delta.isolationLevel = {value[:60]!r} and use {used}",
        f"The table property delta.isolationLevel is {value[:200]!r}. {engine} does not parse "
        f"this spelling and silently uses {used} instead"
        + accepted
        + f" {len(versions)} data-changing commit(s) from v{versions[0]} to v{versions[-1]} were written this way.",
    )


def identity_text(facts: IdentityFacts) -> FindingText:
    concurrent = facts.concurrent
    return FindingText(
        f"identity column(s) {', '.join(facts.columns)} on a table with {len(concurrent)} concurrent commit(s)",
        "Tables with identity columns do not support concurrent transactions. "
        f"{len(concurrent)} data-changing commit(s) (first v{concurrent[0]}, last v{concurrent[-1]}) "
        "committed while others were in flight; serialize the writers of this table.",
    )


def missing_read_version_text(facts: MissingReadVersionFacts) -> FindingText:
    unknown, derived = len(facts.unknown), len(facts.derived)
    return FindingText(
        f"{unknown + derived} non-append commit(s) recorded no readVersion; "
        f"{derived} derived from the data, {unknown} left unknown",
        "Without readVersion the audit cannot tell which commits ran concurrently with a commit "
        "that read the table. For stale overwrites and deletes it derives the read version from the "
        "files they left alive (marked 'derived'); other commits are not re-checked.",
    )
