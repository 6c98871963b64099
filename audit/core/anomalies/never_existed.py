"""Never-existed snapshots: a destructive commit left alive rows it should have changed.

Two ways to find the candidates: a concurrent commit added files into what the commit read and
they survive it (`overlap_candidate`), or a destructive commit recording no read version left
alive files added before it (`find_stale_snapshots`, which derives its read version). The
witness (witness.py) then looks for the rows in the data; the finding says what it found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from audit.core import severity as sev
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.scope import ReadScope, is_destructive, is_unconditional, read_scope
from audit.core.conflicts.verdict import CommitAudit
from audit.core.facts.anomalies import NeverExistedFacts
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import FindingKind, ReadVersionFact
from audit.core.wording.anomalies import never_existed_text

if TYPE_CHECKING:
    from audit.core.data.dv import Loader
    from audit.core.data.witness import Outcome
    from audit.core.history.summary import History


@dataclass(slots=True)
class StaleCandidate:
    """A destructive commit that left alive files it should have deleted or rewritten.

    `files` maps the version that added each surviving file to its paths; a compaction's
    (OPTIMIZE's) outputs count like data files, since they hold the rows of the files it
    compacted. `proven_by_log` is True when the log alone proves the anomaly (an unconditional
    delete / full overwrite left earlier files alive); otherwise rows matching the predicate
    must be found in the data.
    """

    txn: CommitSummary
    read_version: int | None
    read_version_fact: ReadVersionFact
    files: dict[int, list[str]]
    source: Literal["concurrent", "survivors"]
    proven_by_log: bool
    scope: ReadScope


def overlap_candidate(
    txn: CommitSummary, audit: CommitAudit, ctx: TableContext
) -> StaleCandidate | None:
    """Files that concurrent commits added into `txn`'s read scope and that are alive after it.

    A concurrent compaction counts too: its outputs hold rows `txn` read (in the files it
    compacted), so if they survive `txn`, so do those rows.
    """
    scope = audit.read_scope
    files: dict[int, list[str]] = {}
    removed_later: set[str] = set(txn.removed_paths_all)
    for w in reversed(audit.concurrent_versions):
        winner = ctx.summary(w)
        if winner is None:
            continue
        added: list[str] = []
        if winner.added_paths and scope.overlaps(winner.added_partitions):
            added += winner.added_paths
        if winner.compacted_paths and compaction_in_scope(scope, winner):
            added += winner.compacted_paths
        alive = sorted(p for p in added if p not in removed_later)
        if alive:
            files[w] = alive
        removed_later |= winner.removed_paths_all
    if not files:
        return None
    return StaleCandidate(
        txn,
        audit.read_version,
        audit.read_version_fact,
        dict(sorted(files.items())),
        "concurrent",
        is_unconditional(txn),
        scope,
    )


def find_stale_snapshots(
    history: History, ctx: TableContext, versions: tuple[int, int] | None = None
) -> list[StaleCandidate]:
    """Destructive commits without readVersion that left earlier files alive.

    A full overwrite or an unconditional delete removes every live file; if a file added by an
    earlier commit is still live right after it, the commit worked from a stale snapshot taken
    before that file was added. Its read version is derived as just before the earliest
    surviving file's commit.
    """
    targets = [
        s
        for s in history.summaries
        if s.read_version is None and s.data_change and is_destructive(s)
    ]
    if not targets:
        return []
    target_versions = {s.version for s in targets}
    last = max(target_versions)
    live: dict[str, int] = {}
    found: list[StaleCandidate] = []
    for s in history.summaries:
        if s.version > last:
            break
        if s.version in target_versions and (versions is None or s.version >= versions[0]):
            candidate = _survivor_candidate(s, live, ctx)
            if candidate is not None and (versions is None or candidate.read_version < versions[1]):
                found.append(candidate)
        for path in s.removed_paths_all:
            live.pop(path, None)
        for path in s.added_paths:
            live[path] = s.version
        for path in s.compacted_paths:  # OPTIMIZE outputs: earlier rows, in new files
            live[path] = s.version
    return found


def _survivor_candidate(
    txn: CommitSummary, live: dict[str, int], ctx: TableContext
) -> StaleCandidate | None:
    unconditional = is_unconditional(txn)
    scope = read_scope(txn, ctx, txn.version - 1)
    files: dict[int, list[str]] = defaultdict(list)
    for path, added_at in live.items():
        if path in txn.removed_paths_all or path in txn.added_paths:
            continue
        if not unconditional and not _added_into_scope(scope, ctx.summary(added_at), path):
            continue
        files[added_at].append(path)
    if not files:
        return None
    read_version = min(files) - 1
    return StaleCandidate(
        txn,
        read_version,
        ReadVersionFact.DERIVED,
        {v: sorted(p) for v, p in sorted(files.items())},
        "survivors",
        unconditional,
        scope,
    )


def _added_into_scope(scope: ReadScope, adder: CommitSummary | None, path: str) -> bool:
    """May the file `adder` added at `path` hold rows in `scope`'s partitions?"""
    if adder is None:
        return False
    if path in adder.compacted_paths:
        return compaction_in_scope(scope, adder)
    return scope.overlaps(adder.added_partitions)


def compaction_in_scope(scope: ReadScope, compaction: CommitSummary) -> bool:
    """Compaction rewrites files within their partitions, so its outputs lie in the partitions
    of the files it removed; a summary that does not say which (none removed) may overlap."""
    partitions = compaction.compacted_removed_partitions
    if not partitions:
        return scope.kind != "none"
    return scope.overlaps(partitions)


def never_existed_findings(
    history: History,
    ctx: TableContext,
    candidates: list[StaleCandidate],
    *,
    check_data: bool,
    read_roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
    vectors: Loader | None = None,
) -> list[Finding]:
    from audit.core.data import witness  # noqa: PLC0415  (pyarrow dataset only when needed)

    findings = []
    for candidate in sorted(candidates, key=lambda c: c.txn.version):
        outcome = witness.confirm_candidate(
            history,
            ctx,
            candidate,
            check_data=check_data,
            roots=read_roots,
            sample_rows=sample_rows,
            vectors=vectors,
        )
        if outcome.status == "no_rows":
            continue  # the predicate matches none of the surviving rows: nothing never-existed
        if (
            not outcome.confirmed
            and not candidate.proven_by_log
            and candidate.source == "survivors"
        ):
            continue  # a predicated stale commit is only reported when rows prove it
        findings.append(never_existed_finding(candidate, outcome))
    return findings


def never_existed_facts(candidate: StaleCandidate, outcome: Outcome) -> NeverExistedFacts:
    txn = candidate.txn
    witness = outcome.witness if outcome.confirmed else None
    return NeverExistedFacts(
        version=txn.version,
        operation=txn.operation,
        predicate=txn.predicate.raw if txn.predicate is not None else None,
        added_by=sorted(candidate.files),
        read_version=candidate.read_version,
        read_version_fact=candidate.read_version_fact,
        confirmed=outcome.confirmed,
        row_count=witness["row_count"] if witness else None,
        file_count=len(witness["files"]) if witness else None,
        note=outcome.note,
    )


def never_existed_finding(candidate: StaleCandidate, outcome: Outcome) -> Finding:
    facts = never_existed_facts(candidate, outcome)
    return never_existed_text(facts).finding(
        FindingKind.NEVER_EXISTED_SNAPSHOT,
        sev.never_existed_severity(outcome.confirmed),
        facts.version,
        facts.added_by,
        confirmed=outcome.confirmed,
        witness=outcome.witness,
        details={
            "source": candidate.source,
            "read_version": candidate.read_version,
            "read_version_fact": candidate.read_version_fact,
            "surviving_files": sum(len(p) for p in candidate.files.values()),
            "method_note": outcome.note,
        },
    )
