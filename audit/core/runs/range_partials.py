"""A split history's whole-history (table-level) findings, merged from its ranges' partials.

Each range of a split history (the Spark job's long tables) is audited over its own window
(`audit_history(versions=(start, end))`: exactly the whole audit's results for its commits).
The table-level kinds (vocab.TABLE_LEVEL_KINDS) tally over every commit; none needs a second
pass over the whole history, only what each range saw of its own commits, merged in version
order:

- hotspots: the per-(partition, operation pair) counts, summed (first credit from the first
  range that has one, last from the last);
- isolation setting ignored, identity-column concurrency, missing read versions: per-range
  runs of versions (count, first, last), joined;
- retry storms: the candidate commits per (writer, operation, partitions) (writers.StormMember),
  joined, and the bursts found over them as the whole audit does;
- log integrity: each range's findings from its checkpointed state (integrity.ranged), capped
  per kind in version order as the whole-log checker caps them; a range that needed the history
  before its window makes the caller check the whole log instead (`integrity_unresolved`);
- catalog-managed logs: from the final protocol alone.

The merged findings equal the whole audit's (tests/app/test_spark_split_ranges.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from audit.core import severity as sev
from audit.core.anomalies.hotspots import HotspotKey, hotspot_findings
from audit.core.anomalies.settings import isolation_setting_facts, missing_read_version_facts
from audit.core.conflicts.context import TableContext
from audit.core.facts.anomalies import (
    Hotspot,
    IdentityFacts,
    IsolationSettingFacts,
    MissingReadVersionFacts,
    commits_span,
)
from audit.core.history.summary import History
from audit.core.integrity.catalog import catalog_feature, catalog_findings
from audit.core.integrity.checks import MAX_FINDINGS_PER_KIND
from audit.core.integrity.ranged import RangeIntegrity
from audit.core.model import Finding, Protocol
from audit.core.vocab import FindingKind
from audit.core.wording.table import (
    identity_text,
    isolation_setting_text,
    missing_read_version_text,
)
from audit.core.writers import StormKey, StormMember, storm_findings, storm_members

# missing_read_version lists at most this many derived versions (as settings.py does).
DERIVED_LISTED = 100


@dataclass
class Run:
    """A run of versions as the table-level findings state it: how many, first, last (and the
    first few, where a finding lists them). Reads like the list it stands for."""

    count: int = 0
    first: int = -1
    last: int = -1
    head: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, versions: list[int], keep: int = 0) -> Run:
        if not versions:
            return cls()
        return cls(len(versions), versions[0], versions[-1], versions[:keep])

    def join(self, later: Run, keep: int = 0) -> Run:
        if not self.count:
            return later
        if not later.count:
            return self
        head = (self.head + later.head)[:keep]
        return Run(self.count + later.count, self.first, later.last, head)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> int:
        return self.first if index == 0 else self.last


@dataclass
class RangePartial:
    """What one range [start, end] contributes to its table's whole-history findings."""

    start: int
    end: int
    isolation: dict[tuple[str, str, str], Run]  # (engine, value, used) -> its commits
    unknown: Run  # commits whose read version is unknown
    derived: Run  # ... derived by the audit (sorted)
    concurrent: Run  # data-changing commits with a concurrent window
    hotspots: dict[HotspotKey, Hotspot]
    storms: dict[StormKey, list[StormMember]]
    integrity: RangeIntegrity


def range_partial(
    history: History, result: Any, start: int, end: int, integrity: RangeIntegrity
) -> RangePartial:
    """The partial of a windowed audit of [start, end] (`result`: its AuditResult)."""
    ctx = TableContext(history)
    commits = _own_audits(result.commits, start, end)
    isolation = {
        (f.engine, f.value, f.used): Run.of(f.versions)
        for f in isolation_setting_facts(ctx, commits)
    }
    missing = missing_read_version_facts(ctx, commits)
    unknown = Run.of(sorted(missing.unknown)) if missing else Run()
    derived = Run.of(missing.derived, DERIVED_LISTED) if missing else Run()
    concurrent = [
        v
        for v, a in commits.items()
        if a.concurrent_versions and (s := ctx.summary(v)) is not None and s.data_change
    ]
    own = (s for s in history.summaries if start <= s.version <= end)
    return RangePartial(
        start,
        end,
        isolation,
        unknown,
        derived,
        Run.of(concurrent),
        {(h.partition, h.operations): h for h in result.hotspots},
        dict(storm_members(own, commits)),
        integrity,
    )


@dataclass(slots=True)
class _Unchecked:
    """What a partial reads of a commit the audit never re-checked (no concurrent window)."""

    read_version_fact: str
    concurrent_versions: range = range(0)


def _own_audits(commits: Any, start: int, end: int) -> dict[int, Any]:
    """The audits of versions [start, end] as the partial reads them: the re-checked commits'
    own views, a light one for the others (building every commit's full view, read scope and
    all, was a third of a partial's cost)."""
    by_column = getattr(commits, "by_column", None)
    if by_column is None:
        return {v: a for v, a in commits.items() if start <= v <= end}
    versions, _, facts, _, checked = by_column()
    return {
        v: checked.get(v) or _Unchecked(fact)
        for v, fact in zip(versions, facts, strict=True)
        if start <= v <= end
    }


def merged_findings(
    partials: Iterable[RangePartial],
    identity_columns: list[str],
    protocol: Protocol | None,
    store: Any,
    latest_version: int,
) -> list[Finding]:
    """The table-level findings of the whole history from its ranges' partials (integrity:
    see `integrity_unresolved`). `identity_columns`, `protocol`: the latest state's."""
    parts = sorted(partials, key=lambda p: p.start)
    findings = _isolation_findings(parts) + _missing_findings(parts)
    if identity_columns:
        findings += _identity_findings(parts, identity_columns)
    findings += hotspot_findings(_merged_hotspots(parts))
    if catalog_feature(protocol) is not None:
        findings += catalog_findings(store, protocol, latest_version)
    storms: dict[StormKey, list[StormMember]] = {}
    for p in parts:
        for key, members in p.storms.items():
            storms.setdefault(key, []).extend(members)
    findings += storm_findings(storms)
    return findings + capped_integrity(parts)


def integrity_unresolved(partials: Iterable[RangePartial]) -> bool:
    """Whether the ranges' integrity findings cannot stand for the whole log's."""
    return any(p.integrity.unresolved or not p.integrity.whole_base for p in partials)


def capped_integrity(parts: list[RangePartial]) -> list[Finding]:
    """The ranges' integrity findings in version order, capped per kind as one checker caps."""
    counts: dict[str, int] = {}
    kept = []
    for p in parts:
        for f in p.integrity.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
            if counts[f.kind] <= MAX_FINDINGS_PER_KIND:
                kept.append(f)
    return kept


def _isolation_findings(parts: list[RangePartial]) -> list[Finding]:
    runs: dict[tuple[str, str, str], Run] = {}
    for p in parts:
        for key, run in p.isolation.items():
            runs[key] = runs.get(key, Run()).join(run)
    findings = []
    for (engine, value, used), run in sorted(runs.items(), key=lambda kv: kv[1].first):
        facts = IsolationSettingFacts(engine, value, used, run)  # type: ignore[arg-type]
        findings.append(
            isolation_setting_text(facts).finding(
                FindingKind.ISOLATION_SETTING_IGNORED,
                sev.isolation_setting_ignored_severity(),
                run.first,
                [],
                details={"engine": engine, "value": value, **commits_span(run)},  # type: ignore[arg-type]
            )
        )
    return findings


def _missing_findings(parts: list[RangePartial]) -> list[Finding]:
    unknown, derived = Run(), Run()
    for p in parts:
        unknown = unknown.join(p.unknown)
        derived = derived.join(p.derived, DERIVED_LISTED)
    if not unknown.count and not derived.count:
        return []
    facts = MissingReadVersionFacts(unknown, derived)  # type: ignore[arg-type]
    first = min(r.first for r in (unknown, derived) if r.count)
    return [
        missing_read_version_text(facts).finding(
            FindingKind.MISSING_READ_VERSION,
            sev.derived_fact_severity(),
            first,
            [],
            details={"unknown": unknown.count, "derived": derived.head},
        )
    ]


def _identity_findings(parts: list[RangePartial], columns: list[str]) -> list[Finding]:
    run = Run()
    for p in parts:
        run = run.join(p.concurrent)
    if not run.count:
        return []
    facts = IdentityFacts(columns, run)  # type: ignore[arg-type]
    return [
        identity_text(facts).finding(
            FindingKind.IDENTITY_COLUMN_CONCURRENCY,
            sev.identity_concurrency_severity(),
            run.first,
            [],
            details={"identity_columns": columns, **commits_span(run)},  # type: ignore[arg-type]
        )
    ]


def _merged_hotspots(parts: list[RangePartial]) -> dict[HotspotKey, Hotspot]:
    merged: dict[HotspotKey, Hotspot] = {}
    for p in parts:
        for key, spot in p.hotspots.items():
            into = merged.get(key)
            if into is None:
                merged[key] = spot
                continue
            into.pairs += spot.pairs
            for level, n in spot.conflicts.items():
                into.conflicts[level] = into.conflicts.get(level, 0) + n
            into.exceptions.update(spot.exceptions)
            into.per_day.update(spot.per_day)
            if into.first_version is None:
                into.first_version, into.first_winner = spot.first_version, spot.first_winner
            if spot.last_version is not None:
                into.last_version = spot.last_version
    return merged
