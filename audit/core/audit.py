"""The isolation audit: concurrent commits, read scopes, Delta's conflict rules re-run, findings.

For a commit T that read version r and committed at v, the commits in (r, v) committed while T
was in flight; Delta checked T against each of them (the "winners" W) before letting T commit.
We re-run those checks under both Serializable and WriteSerializable, in the order of Delta's
ConflictChecker (conflicts/rules.py), from the facts the log keeps. Files T read are not in the
log, so T's read scope is inferred from its predicate and the files it removed
(conflicts/scope.py). What the checks let through becomes findings: conflicts/findings.py for
conflicts Delta should have raised, anomalies/ for history orders no serial execution
produces; their sentences live in wording/.

This module orchestrates: one pass over the commits, and for each commit one pass over its
(r, v) window, so the work is commits × concurrency, never commits². Partition matchers are
cached per (predicate, partition columns) in the TableContext.
"""

from __future__ import annotations

import bisect
import contextlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from audit.core.anomalies.duplicate_keys import duplicate_key_findings
from audit.core.anomalies.dv_integrity import dv_integrity_findings, resurrection_finding
from audit.core.anomalies.hotspots import (
    HotspotTally,
    hotspot_findings,
)
from audit.core.anomalies.identity import identity_finding
from audit.core.anomalies.never_existed import (
    StaleCandidate,
    find_stale_snapshots,
    never_existed_findings,
    overlap_candidate,
)
from audit.core.anomalies.reorders import (
    exception_avoided,
    is_reorder,
    reorder_finding,
    upgrade_reorders,
)
from audit.core.anomalies.settings import (
    isolation_setting_findings,
    missing_read_version_finding,
)
from audit.core.conflicts.audits import NO_CONFLICTS, CommitAudits
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.dv_recheck import compare, shared_dv_rewrites
from audit.core.conflicts.findings import metadata_change_finding, missed_conflict_finding
from audit.core.conflicts.profiles import departure, profile_for
from audit.core.conflicts.rules import classify_summary, recheck
from audit.core.conflicts.scope import (
    is_destructive,
    read_scope,
)
from audit.core.conflicts.verdict import (
    CommitAudit,
    Recheck,
)
from audit.core.conflicts.window import (
    concurrent_window,
    read_version_of,
)
from audit.core.cycles import stale_commit_cycle
from audit.core.data.dv import DvLimits, Loader
from audit.core.errors import DeltaAuditError
from audit.core.facts.anomalies import Hotspot
from audit.core.history.summary import History, paused_gc
from audit.core.integrity.catalog import catalog_feature, catalog_findings
from audit.core.integrity.checks import integrity_findings
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import CYCLE_KINDS, ConflictException, OperationClass, ReadVersionFact
from audit.core.wording.cycles import witness_fields
from audit.core.writers import retry_storm_findings

__all__ = ["AuditResult", "audit_history", "key_findings"]

# Operation classes the auditor keeps before starting afresh (windows span a few versions).
_CLASSES_KEPT = 4096


@dataclass(slots=True)
class AuditResult:
    findings: list[Finding]
    commits: Mapping[int, CommitAudit]
    hotspots: list[Hotspot]


def audit_history(
    history: History,
    *,
    check_data: bool = True,
    versions: tuple[int, int] | None = None,
    read_roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
    key_columns: list[str] | tuple[str, ...] = (),
    pause_gc: bool = True,
    dv_limits: DvLimits | None = None,
) -> AuditResult:
    """Audit a history. `versions=(lo, hi)` keeps only commits whose (read, commit] interval
    overlaps [lo, hi] (the incremental re-audit of a window). Data files are read only inside
    `read_roots` (None: the table's own root only; audit/core/storage/roots.py). A witness keeps at most
    `sample_rows` matching rows (0: counts and file names only; None: the witness's default).
    `key_columns`: the table's declared key, looked for twice among the live rows (full audits
    that read data only). `pause_gc=False`: the caller runs the collector its own way
    (`young_gc`). Deletion vectors are decoded within `dv_limits` (None: the defaults), each
    once for the whole pass."""
    # The audit builds per-commit results for the whole history: see `paused_gc`.
    with paused_gc() if pause_gc else contextlib.nullcontext():
        return _audit_history(
            history, check_data, versions, read_roots, sample_rows, list(key_columns), dv_limits
        )


def _audit_history(
    history: History,
    check_data: bool,
    versions: tuple[int, int] | None,
    read_roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
    keys: list[str] | None = None,
    dv_limits: DvLimits | None = None,
) -> AuditResult:
    ctx = TableContext(history)
    stale = find_stale_snapshots(history, ctx, versions)
    derived = {c.txn.version: c.read_version for c in stale if c.read_version is not None}
    # One loader for the pass: each vector decoded once, the limits spent once.
    vectors = _vector_loader(history, read_roots, dv_limits)
    auditor = _Auditor(
        history, ctx, derived, versions, check_data=check_data, read_roots=read_roots,
        sample_rows=sample_rows, vectors=vectors,
    )  # fmt: skip
    auditor.run()
    findings = auditor.findings
    findings += never_existed_findings(
        history,
        ctx,
        stale + auditor.overlap_candidates,
        check_data=check_data,
        read_roots=read_roots,
        sample_rows=sample_rows,
        vectors=vectors,
    )
    findings += _unless_found(findings, auditor.resurrections)
    upgrade_reorders(findings)
    _attach_cycles(findings, ctx, auditor.commits)
    findings += _table_findings(history, ctx, auditor)
    if versions is None:
        # Log integrity replays every available commit's files: whole-table work, done by the
        # full audits only (the kinds are table-level, so windowed audits leave them alone).
        findings += integrity_findings(history)
        if check_data:
            findings += dv_integrity_findings(history, read_roots, vectors)
        if check_data and keys:
            findings += duplicate_key_findings(
                history, ctx, auditor.commits, keys, read_roots, vectors
            )
        findings += retry_storm_findings(history, auditor.commits)
    findings.sort(key=lambda f: (f.version, f.kind, f.related_versions))
    hotspots = auditor.tally.ordered()
    return AuditResult(findings=findings, commits=auditor.commits, hotspots=hotspots)


def key_findings(
    history: History,
    result: AuditResult,
    keys: list[str],
    read_roots: Sequence[str] | None = None,
    dv_limits: DvLimits | None = None,
) -> list[Finding]:
    """duplicate_key findings for an audit already run (the tail's table-level refresh)."""
    if not keys:
        return []
    ctx = TableContext(history)
    vectors = _vector_loader(history, read_roots, dv_limits)
    return duplicate_key_findings(history, ctx, result.commits, list(keys), read_roots, vectors)


def _vector_loader(
    history: History, read_roots: Sequence[str] | None, limits: DvLimits | None
) -> Loader:
    """The deletion-vector loader of one pass; files opened inside `read_roots` only."""
    from audit.core.data.witness import DataFiles  # noqa: PLC0415  (pyarrow when needed)

    return Loader(DataFiles(history.table_uri, read_roots), limits)


def _unless_found(findings: list[Finding], extra: list[Finding]) -> list[Finding]:
    """`extra` without the findings whose key another detector already reported."""
    keys = {f.key for f in findings}
    return [f for f in extra if f.key not in keys]


def _in_window(
    txn: CommitSummary, read_version: int | None, versions: tuple[int, int] | None
) -> bool:
    if versions is None:
        return True
    lo, hi = versions
    start = read_version + 1 if read_version is not None else txn.version
    return txn.version >= lo and start <= hi


class _Auditor:
    """One pass over the commits: re-checks each against its window, collects findings."""

    def __init__(
        self,
        history: History,
        ctx: TableContext,
        derived: dict[int, int],
        versions: tuple[int, int] | None,
        *,
        check_data: bool = True,
        read_roots: Sequence[str] | None = None,
        sample_rows: int | None = None,
        vectors: Loader,
    ):
        self.history = history
        self.check_data = check_data
        self.read_roots, self.sample_rows = read_roots, sample_rows
        self.resurrections: list[Finding] = []
        self.vectors = vectors
        self.ctx = ctx
        self.derived = derived
        self.versions = versions
        self.commits = CommitAudits(ctx.summary)
        self.findings: list[Finding] = []
        self.tally = HotspotTally(ctx)
        self.overlap_candidates: list[StaleCandidate] = []
        self.metadata_survivors: dict[int, list[CommitSummary]] = defaultdict(list)
        self.concurrent_commits: list[int] = []
        self.first = history.summaries[0].version if history.summaries else 0
        # Operation classes of recent commits: each is a winner in several windows.
        self._classes: dict[int, OperationClass | None] = {}

    def _classify(self, summary: CommitSummary) -> OperationClass | None:
        """`classify_summary`, remembered for the windows nearby (bounded: they move on)."""
        classes = self._classes
        version = summary.version
        if version in classes:
            return classes[version]
        if len(classes) >= _CLASSES_KEPT:
            classes.clear()
        found = classes[version] = classify_summary(summary)
        return found

    @property
    def hotspots(self) -> dict[tuple[str, tuple[str, str]], Hotspot]:
        return self.tally.hotspots

    def run(self) -> None:
        for txn in self.history.summaries:
            read_version, fact = read_version_of(txn, self.derived)
            if not _in_window(txn, read_version, self.versions):
                continue
            window, truncated = concurrent_window(txn, read_version, self.first)
            # Commits with no concurrent window are never re-checked; keep their scope cheap.
            if not window:
                # Held by column, rebuilt when read (audit/core/conflicts/audits.py).
                self.commits.add_unchecked(txn, read_version, fact)
                continue
            scope = read_scope(txn, self.ctx, read_version)
            audit = CommitAudit(
                txn.version,
                read_version,
                fact,
                txn.isolation_level,
                window,
                scope,
                truncated,
                NO_CONFLICTS,
            )
            self.commits.add_checked(audit)
            self.concurrent_commits.append(txn.version)
            self._check_window(txn, audit)
            # Derived read versions come from find_stale_snapshots, which made their candidates.
            if is_destructive(txn) and fact != ReadVersionFact.DERIVED:
                candidate = overlap_candidate(txn, audit, self.ctx)
                if candidate is not None:
                    self.overlap_candidates.append(candidate)
        for winner_version, txns in sorted(self.metadata_survivors.items()):
            self.findings.append(metadata_change_finding(self.ctx.summary(winner_version), txns))

    def _check_window(self, txn: CommitSummary, audit: CommitAudit) -> None:
        read_version = audit.read_version if audit.read_version is not None else txn.version - 1
        rlc = self.ctx.row_level_concurrency(txn, read_version)
        dv = self.ctx.deletion_vectors_at(read_version)
        profile = profile_for(txn, rlc)
        audit.profile = profile.name
        reorders: list[int] = []
        exceptions: dict[int, ConflictException] = {}
        missed: list[int] = []
        for w in self._winners_to_check(audit):
            winner = self.ctx.summary(w)
            if winner is None:
                continue
            verdict = recheck(
                txn,
                winner,
                audit.read_scope,
                self.ctx,
                row_level_concurrency=rlc,
                deletion_vectors=dv,
                classify=self._classify,
            )
            if self.check_data:
                verdict = self._dv_recheck(txn, winner, verdict)
            if verdict.any:
                if audit.conflicts is NO_CONFLICTS:  # most windows find none: share one
                    audit.conflicts = {}
                audit.conflicts[w] = verdict
                why = departure(profile, verdict, winner)
                if why is not None:
                    audit.departures = {**(audit.departures or {}), w: why}
            self.tally.add(txn, winner, audit.read_scope, verdict)
            if verdict.rule in ("protocol", "metadata"):
                self.metadata_survivors[w].append(txn)
                continue
            level = txn.isolation_level
            if is_reorder(level, verdict):
                reorders.append(w)
                exceptions[w] = exception_avoided(verdict)
            elif verdict.at(level) and verdict.certain and not verdict.same_row_only:
                missed.append(w)
        if reorders:
            self.findings.append(reorder_finding(txn, audit, reorders, exceptions))
        if missed:
            self.findings.append(missed_conflict_finding(txn, audit, missed))

    def _dv_recheck(self, txn: CommitSummary, winner: CommitSummary, verdict: Recheck) -> Recheck:
        """Decode the vectors of a file both commits rewrote: rows both changed make a "same
        row" verdict certain; rows the winner deleted that txn's vector lacks are resurrected."""
        paths = shared_dv_rewrites(txn, winner)
        if not paths:
            return verdict
        try:
            log = self.history.get_log()
        except DeltaAuditError:
            return verdict
        pair = compare(log, self.vectors, txn, winner, paths)
        if not pair.decided:
            return verdict
        if pair.resurrected:
            self.resurrections.append(
                resurrection_finding(
                    self.history, txn, pair, roots=self.read_roots, sample_rows=self.sample_rows
                )
            )
        if pair.overlap and verdict.same_row_only:
            return replace(verdict, same_row_only=False, certain=True)
        return verdict

    def _winners_to_check(self, audit: CommitAudit) -> Iterable[int]:
        """A commit that read nothing can only conflict with protocol, metadata, domain and
        app-transaction changes: visit just those (keeps 70%-append histories cheap)."""
        window = audit.concurrent_versions
        if audit.read_scope.kind != "none":
            return window
        specials = self.ctx.special_versions
        lo = bisect.bisect_left(specials, window.start)
        hi = bisect.bisect_left(specials, window.stop)
        return specials[lo:hi]


def _attach_cycles(
    findings: list[Finding], ctx: TableContext, commits: dict[int, CommitAudit]
) -> None:
    """Give every anomaly finding its dependency cycle (witness.cycle, anomaly class, levels)."""
    for f in findings:
        if f.kind not in CYCLE_KINDS:
            continue
        txn, audit = ctx.summary(f.version), commits.get(f.version)
        if txn is None or audit is None:
            continue
        winners = [w for v in f.related_versions if (w := ctx.summary(v)) is not None]
        cycle = stale_commit_cycle(
            txn, audit.read_version, audit.read_version_fact, audit.read_scope, winners
        )
        if cycle is not None:
            f.witness = {**(f.witness or {}), **witness_fields(cycle)}


def _table_findings(history: History, ctx: TableContext, auditor: _Auditor) -> list[Finding]:
    findings = list(isolation_setting_findings(ctx, auditor.commits))
    identity = identity_finding(history, ctx, auditor.concurrent_commits)
    if identity is not None:
        findings.append(identity)
    missing = missing_read_version_finding(ctx, auditor.commits)
    if missing is not None:
        findings.append(missing)
    findings += hotspot_findings(auditor.hotspots)
    # Catalog-managed tables: say how far the published log reaches (lists staged commits).
    if catalog_feature(history.state.protocol) is not None:
        findings += catalog_findings(
            history.get_log().store, history.state.protocol, history.latest_version
        )
    return findings
