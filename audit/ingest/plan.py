"""What one tail step stores next (ChunkPlan), and what it did (TailResult)."""

from __future__ import annotations

from dataclasses import dataclass, field

from audit.core import model
from audit.core.errors import DeltaAuditError
from audit.ingest.health_store import HealthOutcome


@dataclass(frozen=True)
class ChunkPlan:
    start: int  # first version to store
    end: int  # last version to store
    more: bool  # versions after `end` remain (backfill continues)
    latest: int


@dataclass
class TailResult:
    table_id: int
    status: str
    stored: int = 0
    opened: int = 0
    resolved: int = 0
    more: bool = False
    last_seen_version: int | None = None
    message: str = ""
    # What the stored chunk's health showed; the caller alerts on it after the commit.
    health: HealthOutcome | None = field(default=None, repr=False, compare=False)

    def line(self) -> str:
        """The one-line summary a task returns."""
        if self.message:
            return f"table {self.table_id}: {self.status}: {self.message}"
        return (
            f"table {self.table_id}: {self.status}, stored {self.stored} commits up to "
            f"v{self.last_seen_version}, findings +{self.opened} resolved {self.resolved}"
            + (", more to backfill" if self.more else "")
        )

    def add(self, earlier: TailResult) -> TailResult:
        """This result with the counts of an earlier chunk of the same step added."""
        self.stored += earlier.stored
        self.opened += earlier.opened
        self.resolved += earlier.resolved
        return self


def plan_next_chunk(
    listing: model.LogListing, last_seen: int | None, chunk: int
) -> ChunkPlan | None:
    """The next versions to store after `last_seen`, or None when up to date.

    Raises DeltaAuditError when the log no longer continues the stored history: it shrank
    (the table was replaced) or versions we never stored were removed by log cleanup.
    """
    latest = listing.latest_version
    if last_seen is not None and latest < last_seen:
        raise DeltaAuditError(
            f"the log shrank: its latest version is {latest} but version {last_seen} was already "
            "ingested (table deleted and recreated, or its log rewritten)"
        )
    versions = listing.commit_versions
    pending = versions if last_seen is None else [v for v in versions if v > last_seen]
    expected = None if last_seen is None else last_seen + 1
    if expected is not None and expected <= latest and (not pending or pending[0] != expected):
        first = pending[0] if pending else latest + 1
        raise DeltaAuditError(
            f"versions {expected}..{first - 1} were removed from the log (log cleanup) before "
            "they were ingested; the stored history has a gap"
        )
    if not pending:
        return None
    batch = pending[: max(chunk, 1)]
    return ChunkPlan(start=batch[0], end=batch[-1], more=len(pending) > len(batch), latest=latest)
