"""The log-integrity checks of one version range, started from the snapshot before its window.

The whole-log checker (checks.IntegrityChecker) carries its state from the first commit on: the
live files with the version whose add made each live, and the version that last removed each
path. A range of a split history starts instead from the checkpointed snapshot before its
window (`lo - 1`), replays the window's commits before the range silently, and checks the
range's own. The snapshot gives the live files exactly, but not when the older ones were added
nor which paths were removed before the window. A finding that needs either is rare (a
duplicate of a file added before the window, a remove of a path neither live nor removed in the
window by a commit whose read version lies before it, a rewrite of a file whose checkpointed
add has no statistics): the range then says it is `unresolved`, and the caller checks the whole
log instead of trusting it. Anything else equals the whole-log checker's result for the range's
versions, before the per-kind cap (the caller caps the ranges' findings, taken in order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from audit.core.integrity.checks import (
    IntegrityChecker,
    IntegrityTap,
    _Commit,
    dv_identity,
)
from audit.core.integrity.refs import FileRef, IntegrityRecord, ref_of
from audit.core.log.replay import path_key
from audit.core.model import Commit, Finding, TableState

# `live` entries of files from the snapshot: when their add happened is not known here.
BEFORE_WINDOW = -2


@dataclass
class RangeIntegrity:
    """A range's integrity findings (uncapped), or `unresolved` when they need the history
    before its window; `whole_base` is False when the whole-log checker starts from no state
    (a truncated log whose first checkpoint cannot be read: only its first range knows)."""

    findings: list[Finding] = field(default_factory=list)
    unresolved: bool = False
    whole_base: bool = True


class _RangeChecker(IntegrityChecker):
    """The whole-log checker from a snapshot whose files' add versions are unknown."""

    lo: int = 0
    unresolved: bool = False
    collided: bool = False

    def start_from(self, base: TableState, lo: int) -> None:
        self.lo = lo
        self.base, self.protocol = base, base.protocol
        self.base_refs: set[int] = set()
        for path, add in base.files.items():
            ref = ref_of(add)
            self.base_refs.add(id(ref))
            self.live[path_key(path)] = (BEFORE_WINDOW, ref)
        # Two spellings of one path both live: which add the whole log keeps is not known here.
        self.collided = len(self.live) != len(base.files)
        self._keep = list(self.live.values())  # held: a freed ref's id could be reused

    def _removed_concurrently(self, key: str, read_version: int | None) -> bool:
        found = super()._removed_concurrently(key, read_version)
        # Removed before the window, maybe: that matters unless the read version lies inside
        # the window (then any earlier removal came before the read).
        if (
            not found
            and key not in self.removed_at
            and (read_version is None or read_version + 1 < self.lo)
        ):
            self.unresolved = True
        return found

    def _add_checks(self, facts: _Commit) -> list[FileRef | None]:
        for add in facts.adds:
            key = path_key(add.path)
            entry = self.live.get(key)
            if entry is None or entry[0] != BEFORE_WINDOW or key in facts.removed_keys:
                continue
            same_file = dv_identity(entry[1].deletion_vector) == dv_identity(add.deletion_vector)
            if not (same_file and not add.data_change):
                self.unresolved = True  # a duplicate whose first add is before the window
        return super()._add_checks(facts)

    def _rewrite_check(self, facts: _Commit, replaced: list[FileRef | None]) -> None:
        quiet = any(a.data_change for a in facts.adds) or any(r.data_change for r in facts.removes)
        if not quiet and any(
            r is not None and id(r) in self.base_refs and r.stats is None for r in replaced
        ):
            self.unresolved = True  # a checkpoint may keep statistics only in stats_parsed
        super()._rewrite_check(facts, replaced)


def range_integrity(
    log: Any, first: int, lo: int, start: int, records: Iterable[IntegrityRecord]
) -> RangeIntegrity:
    """The integrity findings of versions [start, ...] of `records` (the commits from `lo`,
    the window's first version, in order). `first`: the log's first commit version."""
    if lo <= first:  # the window reaches the first version: the whole-log checker itself
        tap = IntegrityTap(log, first)
        _replay(tap.observe_refs, records, start, tap.checker)
        return RangeIntegrity(tap.findings, False, tap.checker.base is not None)
    checker = _RangeChecker()
    checker.start_from(log.snapshot(lo - 1), lo)
    _replay(checker.observe_refs, records, start, checker)
    return RangeIntegrity(checker.findings, checker.unresolved or checker.collided)


Observe = Callable[[Commit, list[FileRef], list[FileRef]], None]


def _replay(
    observe: Observe, records: Iterable[IntegrityRecord], start: int, checker: IntegrityChecker
) -> None:
    """Observe every record; findings (and the per-kind counts) only from `start` on: the
    commits before it only bring the state up to the range."""
    silent = True
    for version, info, protocol, domains, adds, removes in records:
        if silent and version >= start:
            silent = False
            checker.findings.clear()
            checker._counts.clear()
            if isinstance(checker, _RangeChecker):
                checker.unresolved = False
        observe(Commit(version, info, protocol=protocol, domain_metadata=domains), adds, removes)
