"""Versions a tail never read because log cleanup removed them first: the `history_gap` finding.

A tailed table that falls behind (worker down, table paused, a long backfill elsewhere) can
find that `delta.logRetentionDuration` cleanup deleted commits it had not ingested yet. Their
effect survives in a checkpoint, but the commits themselves (operation, predicate, read
version) are gone, so no audit can look at them. Rather than staying in error until the table
is re-registered, the tail records which versions were lost and resumes with the first commit
still in the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.core.model import Finding, LogListing
from audit.core.severity import history_gap_severity
from audit.core.vocab import FindingKind
from audit.core.wording.log import history_gap_text

HISTORY_GAP = FindingKind.HISTORY_GAP


@dataclass(frozen=True, slots=True)
class HistoryGap:
    lost_from: int  # first version whose commit was removed before it was read
    lost_to: int  # last such version
    resume_at: int  # first commit still in the log (latest_version + 1 when none)
    checkpoint: int | None  # the checkpoint the log's state restarts from


def find_history_gap(listing: LogListing, last_seen: int | None) -> HistoryGap | None:
    """The versions after `last_seen` that cleanup removed before they were read, if any."""
    if last_seen is None:
        return None  # a first ingest starts where the log starts: nothing was lost to us
    expected = last_seen + 1
    if expected > listing.latest_version:
        return None
    versions = listing.commit_versions
    if versions and versions[0] <= expected:
        return None  # the log still holds the next commit (holes elsewhere are errors)
    if listing.first_available_version <= last_seen:
        return None
    resume_at = versions[0] if versions else listing.latest_version + 1
    lost_to = resume_at - 1
    # The log's state restarts at its first available version: a checkpoint holding the
    # lost versions' effect on the table (their files), though not their commits.
    first = listing.first_available_version
    checkpoint = first if first in listing.checkpoints else None
    return HistoryGap(expected, lost_to, resume_at, checkpoint)


def history_gap_finding(gap: HistoryGap) -> Finding:
    text = history_gap_text(gap.lost_from, gap.lost_to, gap.resume_at, gap.checkpoint)
    return text.finding(
        HISTORY_GAP,
        history_gap_severity(),
        gap.lost_from,
        [gap.lost_to],
        confirmed=True,
        details={
            "lost_from": gap.lost_from,
            "lost_to": gap.lost_to,
            "lost_count": gap.lost_to - gap.lost_from + 1,
            "resumed_at": gap.resume_at,
            "checkpoint": gap.checkpoint,
        },
    )
