"""The history window the tail must load so its audit of new commits equals the one-shot audit.

The tail audits versions [start, end] of a log it has partly stored already. Loading the whole
history every step would make a live tail O(n) per commit, so it loads a window [lo, end] (the
state before `lo` comes from the checkpoint). The audit's result for a commit v depends only on:

* the summaries of its concurrent versions (read_version, v), where the read version is the
  recorded one, clipped by the audit to `MAX_CONCURRENT_WINDOW` versions, so the window must
  start at or before max(read + 1, v - MAX_CONCURRENT_WINDOW - 1) (one more, so the audit sees
  that it clipped);
* for a destructive commit that records no read version (a delta-rs overwrite), the read version
  the audit derives from the files that survive it: just before the commit that added the oldest
  surviving file in its scope. Which commit added a file live before `lo` is not in the
  checkpoint, so the window is widened (doubling) until no file live before `lo` survives the
  commit. Then every survivor, and the derived read version, lies inside the window.

Nothing here is a guess that could change a result: `lo` only moves back until both conditions
hold (or it reaches the first version the log still has, where the CLI starts too). The first
load starts `GUESS` versions before `start` only to avoid a reload in the common case.

A new commit can also reveal a finding placed at an EARLIER version: a metadata change at v is
reported once a commit that ran across it lands (the finding names every in-flight commit), and
an overwrite without a read version can place its derived read version before older commits.
The findings stored at such a version were worked out without the new commit, so
`audit_tail_chunk` audits again from the earliest version a new commit's findings lie at, and
the caller replaces the stored findings from that version on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from audit.core.audit import AuditResult
from audit.core.conflicts.scope import is_destructive
from audit.core.conflicts.window import MAX_CONCURRENT_WINDOW
from audit.core.history.summary import History, history_from_log
from audit.core.log import DeltaLog
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import TABLE_LEVEL_KINDS

T = TypeVar("T")

# Versions loaded before the new commits on the first try: most commits read a recent version
# (a streaming writer the one before). A new commit that read further back makes the window
# reload once from what it needs. 64 cost a tail step that stores one commit 65 summaries
# (~40% of its audit's CPU on a small table, bench/bench_api.py --writer); the tests run with 0.
GUESS = 8
# The least a widening moves the window back (it doubles from there).
MIN_WIDENING = 16


def load_tail_history(log: DeltaLog, start: int, end: int) -> History:
    """The history [lo, end] that audits versions [start, end] exactly like the whole log does."""
    versions = log.listing.commit_versions
    first = versions[0] if versions else start
    widened = widen_window(
        log, start, first, lambda lo: (history_from_log(log, start=lo, end=end), None)
    )
    assert widened is not None  # this load always answers
    return widened[0]


def audit_tail_chunk(
    log: DeltaLog,
    start: int,
    end: int,
    run: Callable[[History, tuple[int, int]], AuditResult],
) -> tuple[History, AuditResult, int]:
    """The history and audit that decide the findings of new commits [start, end], and the
    first version `lo` whose findings they may change (`lo` <= start).

    `run(history, versions)` is the windowed audit. When a new commit reveals a finding at a
    version before `start`, [lo, end] is audited again over its own window: every commit that
    can produce a finding at a version from `lo` on is then in the audit (a commit's findings lie
    at or before its own version), so the findings of [lo, end] are the one-shot audit's and
    may replace the stored ones. The older commits audited again
    cannot change findings before `lo`: those were stored when the older commits landed."""
    history = load_tail_history(log, start, end)
    result = run(history, (start, end))
    lo = first_revealed(result.findings, start)
    if lo < start:
        history = load_tail_history(log, lo, end)
        result = run(history, (lo, end))
    return history, result, lo


def first_revealed(findings: list[Finding], start: int) -> int:
    """The earliest version a commit-level finding of an audit of [start, ...] lies at (start
    if none lies before it). Only the new commits were audited, so they revealed them all."""
    return min(
        (f.version for f in findings if f.kind not in TABLE_LEVEL_KINDS and f.version < start),
        default=start,
    )


def widen_window(
    log: DeltaLog, start: int, first: int, load: Callable[[int], tuple[History, T] | None]
) -> tuple[History, T] | None:
    """`load(lo)`'s window, with `lo` moved back from a first guess until it holds everything
    the audit of versions [start, ...] needs (the rules above). `load` may decline a window
    (None): then so does this (the split Spark job reads such a range with the first one)."""
    lo = max(start - GUESS, first)
    while True:
        loaded = load(lo)
        if loaded is None:
            return None
        history = loaded[0]
        needed = max(min(recorded_read_starts(history.summaries, start), default=lo), first)
        if needed < lo:
            lo = needed
        elif lo > first and survivors_from_before(log, history, lo, start):
            lo = max(first, start - 2 * max(start - lo, MIN_WIDENING))
        else:
            return loaded


def recorded_read_starts(summaries: list[CommitSummary], start: int) -> list[int]:
    """The first version each new commit's concurrent window (as the audit clips it) needs."""
    return [
        max(s.read_version + 1, s.version - MAX_CONCURRENT_WINDOW - 1)
        for s in summaries
        if s.version >= start and s.read_version is not None and -1 <= s.read_version < s.version
    ]


def stale_targets(summaries: list[CommitSummary], start: int) -> list[CommitSummary]:
    """New commits whose read version the audit derives from surviving files."""
    return [
        s
        for s in summaries
        if s.version >= start and s.read_version is None and s.data_change and is_destructive(s)
    ]


def survivors_from_before(log: DeltaLog, history: History, lo: int, start: int) -> bool:
    """Does a file live before `lo` survive one of the new destructive commits without a read
    version? (Then the commit that added it, and so the derived read version, lies before lo.)"""
    targets = stale_targets(history.summaries, start)
    if not targets:
        return False
    live_before = set(log.snapshot(lo - 1).files)
    if not live_before:
        return False
    pending = iter(sorted(targets, key=lambda s: s.version))
    target = next(pending)
    for s in history.summaries:  # version order
        # A file removed or re-added inside the window is no longer "from before": the window
        # holds what happened to it.
        live_before -= s.removed_paths_all
        live_before -= s.added_paths
        live_before -= s.compacted_paths
        if s.version == target.version:
            if live_before:
                return True
            target = next(pending, None)
            if target is None:
                return False
    return False
