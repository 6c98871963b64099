"""duplicate_key findings: keys.py's scan, each group attributed to its commits and, for
concurrent ones, the rw/ww cycle that is its witness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from audit.core import severity as sev
from audit.core.cycles import Cycle, Edge, anti_dependency, classify, write_dependency
from audit.core.data.dv import Loader
from audit.core.data.keys import KeyGroup, KeyScan, added_versions, concurrency, scan_keys
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import FindingKind, IsolationLevel, ReadVersionFact
from audit.core.wording.cycles import witness_fields
from audit.core.wording.keys import duplicate_key_text

if TYPE_CHECKING:
    from audit.core.conflicts.context import TableContext
    from audit.core.conflicts.verdict import CommitAudit
    from audit.core.history.summary import History

# How a finding's commits relate, strongest claim first.
_ORDER = ("concurrent", "unknown", "sequential", "same_commit")


class _KeyScope:
    """What a writer that checked "the key is absent" read: the key itself."""

    kind = "key"

    def __init__(self, text: str):
        self.text = text

    def contains(self, key: object) -> bool:
        return True

    def describe(self) -> str:
        return self.text


def duplicate_key_findings(
    history: History,
    ctx: TableContext,
    commits: dict[int, CommitAudit],
    keys: list[str],
    roots: Sequence[str] | None = None,
    vectors: Loader | None = None,
) -> list[Finding]:
    """Duplicated keys among the live rows; deletion vectors decoded through `vectors` (the
    pass's loader; None: the scan's own)."""
    live = set(history.state.files)
    added_by = added_versions(history, live)
    scan = scan_keys(history, keys, added_by=added_by, roots=roots, vectors=vectors)
    return [_finding(group, scan, ctx, commits) for group in scan.groups]


def _finding(
    group: KeyGroup, scan: KeyScan, ctx: TableContext, commits: dict[int, CommitAudit]
) -> Finding:
    later = ctx.summary(group.version)
    audit = commits.get(group.version)
    read_version = audit.read_version if audit is not None else None
    for earlier in sorted(group.earlier):
        group.concurrency[earlier] = concurrency(earlier, later, read_version)
    hows = set(group.concurrency.values()) or {"same_commit"}
    how = next(h for h in _ORDER if h in hows)
    earlier = sorted(group.earlier)
    witness = {
        "key_columns": scan.key_columns,
        "duplicate_keys": group.keys,
        "extra_rows": group.extra_rows,
        "sample_keys": group.samples,
        "files": sorted(group.files)[:20],
        "concurrency": {str(v): h for v, h in sorted(group.concurrency.items())},
        "method": "data",
        "candidate_files": scan.candidates,
        "files_read": scan.files_read,
        "truncated": scan.truncated,
    }
    if scan.problems:
        witness["note"] = "; ".join(scan.problems[:3])
    cycle = _cycle(group, ctx, audit, later)
    if cycle is not None:
        witness.update(witness_fields(cycle))
    text = duplicate_key_text(
        group.version, earlier, group.keys, group.extra_rows, group.samples, how, scan.key_columns
    )
    return text.finding(
        FindingKind.DUPLICATE_KEY,
        sev.duplicate_key_severity(),
        group.version,
        earlier,
        witness=witness,
        details={"concurrency": how},
    )


def _cycle(
    group: KeyGroup, ctx: TableContext, audit: CommitAudit | None, later: CommitSummary | None
) -> Cycle | None:
    concurrent = [v for v, how in group.concurrency.items() if how == "concurrent"]
    if later is None or audit is None or not concurrent:
        return None
    sample = group.samples[0]["key"] if group.samples else {}
    item = "key " + ", ".join(f"{k}={v}" for k, v in sample.items())
    scope = _KeyScope(f"the rows of {item}")
    fact = audit.read_version_fact or ReadVersionFact.RECORDED
    edges: list[Edge] = []
    for version in sorted(concurrent):
        winner = ctx.summary(version)
        if winner is None:
            continue
        rw = anti_dependency(later, audit.read_version, fact, scope, winner)
        ww = write_dependency(winner, later)
        rw.item = ww.item = item
        edges += [rw, ww]
    if not edges:
        return None
    anomaly, adya = classify(edges[:2])
    # No isolation level of Delta's stops it (blind appends never conflict); Serializable
    # executions of "check absent, then insert" would.
    return Cycle(edges, anomaly, adya, IsolationLevel.SERIALIZABLE)
