"""Commit times, kept apart: in-commit timestamps, recorded timestamps, file modification times.

`TIMESTAMP AS OF` resolves a time to a version with the in-commit timestamp on the versions
where the table has them enabled (`delta.enableInCommitTimestamps`, from
`delta.inCommitTimestampEnablementVersion` on) and with the commit file's modification time
before that (made increasing: a time not after the previous one counts as the previous + 1 ms).
A table copied or restored gets new modification times, so the same time resolves to another
version than the history's order says. This module finds those intervals.

Facts only (their dataclasses: facts/timestamps.py); the words are in `wording/timetravel.py`.

Limits: when every version's file time disagrees with its recorded time (a whole table
copied, as test fixtures are) the resolution fails before the copy rather than picking
another version: that is reported in health (`timestamps.file_times`), not as a finding.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from audit.core.facts.timestamps import MIN_INTERVAL_MS, CommitTime, TimestampFacts
from audit.core.numbers import log_int
from audit.core.vocab import ReadVersionFact

ICT_PROPERTY = "delta.enableInCommitTimestamps"
ICT_VERSION_PROPERTY = "delta.inCommitTimestampEnablementVersion"
ICT_TIMESTAMP_PROPERTY = "delta.inCommitTimestampEnablementTimestamp"
SKEW_MS = 3_600_000  # file time and recorded time further apart than this disagree
MAX_INTERVALS = 20


def enablement_version(properties: dict[str, str]) -> int | None:
    if str(properties.get(ICT_PROPERTY, "")).strip().lower() != "true":
        return None
    text = str(properties.get(ICT_VERSION_PROPERTY, "0")).strip()
    version = log_int(text)
    return 0 if version is None else version


def commit_times(history: Any, mtimes: dict[int, int] | None = None) -> list[CommitTime]:
    """Each commit's times; `mtimes` (version -> ms) adds to the file times the listing had."""
    enabled = enablement_version(history.state.properties)
    mtimes = {**history.listing.file_modification_times, **(mtimes or {})}
    out = []
    for s in history.summaries:
        recorded = s.timestamp if s.facts.get("timestamp") == ReadVersionFact.RECORDED else None
        in_commit = enabled is not None and s.version >= enabled
        out.append(CommitTime(s.version, recorded, mtimes.get(s.version), in_commit))
    return out


def resolution_times(times: list[CommitTime]) -> list[int | None]:
    """The time `TIMESTAMP AS OF` gives each version (None: none known)."""
    out: list[int | None] = []
    previous: int | None = None
    for t in times:
        value = t.recorded if t.in_commit else t.file_time
        if value is not None and not t.in_commit and previous is not None and value <= previous:
            value = previous + 1  # Delta makes file times increasing
        out.append(value)
        previous = value if value is not None else previous
    return out


def timestamp_facts(
    history: Any,
    mtimes: dict[int, int] | None = None,
    skew_ms: int = SKEW_MS,
    min_interval_ms: int = MIN_INTERVAL_MS,
) -> TimestampFacts:
    """The commit times and what they misresolve. A time resolving to another version counts
    when it does so over at least `min_interval_ms`, or when file times are skewed (a copy:
    every lookup is off by the skew, longer than any interval a short history spans)."""
    times = commit_times(history, mtimes)
    facts = TimestampFacts(times, enablement_version(history.state.properties))
    facts.min_interval_ms = min_interval_ms
    previous: int | None = None
    agreeing = 0
    for t in times:
        # Recorded times only: a file time is what a copy may have changed.
        recorded = t.recorded
        if recorded is not None and previous is not None and recorded < previous:
            facts.backwards.append(t.version)
        previous = recorded if recorded is not None else previous
        if t.in_commit:
            agreeing += 1  # looked up by its recorded time: right whatever its file says
            continue
        if t.recorded is None or t.file_time is None:
            continue
        skew = abs(t.file_time - t.recorded)
        if skew > skew_ms:
            facts.skewed.append(t.version)
            facts.max_skew_ms = max(facts.max_skew_ms, skew)
        else:
            agreeing += 1
    # A whole copy fails before the copy instead of resolving elsewhere: see the limits above.
    judge_file_times = bool(facts.skewed) and agreeing > 0
    if facts.backwards or judge_file_times:
        # Only versions whose lookup time is known (a long local log has the newest timed).
        pairs = [(t, r) for t, r in zip(times, resolution_times(times), strict=True) if r]
        found = _intervals([t for t, _ in pairs], [r for _, r in pairs])
        long = [i for i in found if i[1] - i[0] >= min_interval_ms]
        facts.intervals = (found if judge_file_times else long)[:MAX_INTERVALS]
        if not judge_file_times:
            short = [b - a for a, b, _, _ in found if b - a < min_interval_ms]
            facts.short_intervals, facts.longest_short_ms = len(short), max(short, default=0)
    return facts


def _intervals(
    times: list[CommitTime], resolved: list[int | None]
) -> list[tuple[int, int, int | None, int | None]]:
    """The time intervals, within the history's span, that resolve to another version."""
    truth = [(t.true_time, t.version) for t in times if t.true_time is not None]
    if not truth:
        return []
    by_time = sorted(truth)
    keys = [time for time, _ in by_time]
    best: list[int] = []  # the latest version committed at or before each time
    for _, version in by_time:
        best.append(max(version, best[-1]) if best else version)
    lookup = _Lookup(times, resolved)
    span_end = keys[-1]
    points = sorted({*keys, *(r for r in resolved if r is not None and keys[0] <= r <= span_end)})
    out: list[tuple[int, int, int | None, int | None]] = []
    for start, end in zip(points, [*points[1:], span_end + 1], strict=True):
        i = bisect_right(keys, start) - 1
        says = best[i] if i >= 0 else None
        resolves = lookup.version_at(start)
        if says == resolves:
            continue
        if out and out[-1][1] == start and out[-1][2:] == (says, resolves):
            out[-1] = (out[-1][0], end, says, resolves)
        else:
            out.append((start, end, says, resolves))
    return out


class _Lookup:
    """`TIMESTAMP AS OF` as Delta answers it: a binary search over the in-commit timestamps
    for times from the enablement on, over the (increasing) file times before it. A binary
    search over times that go backwards answers what it answers: bisect does the same."""

    def __init__(self, times: list[CommitTime], resolved: list[int | None]) -> None:
        pairs = [(r, t) for r, t in zip(resolved, times, strict=True) if r is not None]
        self.before = [(r, t.version) for r, t in pairs if not t.in_commit]
        self.after = [(r, t.version) for r, t in pairs if t.in_commit]
        self.before_keys = [r for r, _ in self.before]
        self.after_keys = [r for r, _ in self.after]

    def version_at(self, moment: int) -> int | None:
        if self.after and moment >= self.after_keys[0]:
            return self.after[bisect_right(self.after_keys, moment) - 1][1]
        j = bisect_right(self.before_keys, moment) - 1
        return self.before[j][1] if j >= 0 else None


def timestamps_section(facts: TimestampFacts) -> dict[str, Any]:
    """The report's `health.timestamps`: which time each lookup uses, and what disagrees."""
    times = facts.times
    return {
        "in_commit_timestamps_from": facts.enablement_version,
        "versions_with_file_time": sum(1 for t in times if t.file_time is not None),
        "backwards": facts.backwards[:100],
        "file_times_skewed": len(facts.skewed),
        "file_times": (
            "all far from the recorded times (a copied table): TIMESTAMP AS OF before the copy fails"
            if facts.skewed
            and len(facts.skewed)
            == sum(
                1
                for t in times
                if not t.in_commit and t.recorded is not None and t.file_time is not None
            )
            else "agree"
            if not facts.skewed
            else "partly far from the recorded times"
        ),
        # No magnitude here: it is the copy's own time, not the table's (a copy of a copy
        # differs); the finding's witness has it.
        "misresolved_intervals": [
            {"from": a, "to": b, "history_says": s, "resolves_to": r}
            for a, b, s, r in facts.intervals
        ],
        **_short(facts),
    }


def _short(facts: TimestampFacts) -> dict[str, Any]:
    """Misresolved intervals too short to be a finding, as a fact (only when there are some)."""
    if not facts.short_intervals:
        return {}
    return {
        "short_misresolved": {
            "intervals": facts.short_intervals,
            "longest_ms": facts.longest_short_ms,
            "below_ms": facts.min_interval_ms,
        }
    }
