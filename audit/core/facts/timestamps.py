"""The facts of commit times (health/timestamps.py finds them; wording/timetravel.py words the
`timestamps_out_of_order` finding): each version's recorded and file times, and the intervals
a `TIMESTAMP AS OF` resolves to another version than the history's order says."""

from __future__ import annotations

from dataclasses import dataclass, field

# A misresolved interval shorter than this changes nothing a user would do: concurrent writers
# record times a few ms before the previous commit's file time. Such gaps are a health fact,
# not a finding (the app passes AUDIT_TIMESTAMP_MIN_INTERVAL_MS).
MIN_INTERVAL_MS = 1_000


@dataclass(frozen=True, slots=True)
class CommitTime:
    version: int
    recorded: int | None  # the in-commit timestamp, else commitInfo.timestamp
    file_time: int | None  # the commit file's modification time, from the listing
    in_commit: bool  # the table has in-commit timestamps at this version

    @property
    def true_time(self) -> int | None:
        """When the commit happened: what the writer recorded, else the file's time."""
        return self.recorded if self.recorded is not None else self.file_time


@dataclass
class TimestampFacts:
    times: list[CommitTime]
    enablement_version: int | None
    backwards: list[int] = field(default_factory=list)  # versions older than the one before
    skewed: list[int] = field(default_factory=list)  # file time far from the recorded time
    max_skew_ms: int = 0
    # [from ms, to ms), the version the history's order says, the version it resolves to:
    # the ones the finding reports (at most MAX_INTERVALS).
    intervals: list[tuple[int, int, int | None, int | None]] = field(default_factory=list)
    # Misresolved intervals shorter than the declared minimum, not reported as a finding.
    short_intervals: int = 0
    longest_short_ms: int = 0
    min_interval_ms: int = MIN_INTERVAL_MS

    @property
    def out_of_order(self) -> bool:
        return bool(self.intervals)
