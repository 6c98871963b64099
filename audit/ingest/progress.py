"""Backfill progress for the page and the API: what is stored, how fast, how long until done.

The rate is the backfill's average since it began (stored with each chunk, in the chunk's
transaction), so it survives worker restarts and includes their downtime: an estimate a user can
hold us to, not the speed of the last chunk alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from audit.core import model
from audit.models import Table


def stored_count(listing: model.LogListing, last_version: int | None) -> int:
    """Commits of the log stored when versions up to `last_version` are."""
    if last_version is None:
        return 0
    first = listing.commit_versions[0] if listing.commit_versions else 0
    return max(last_version - first + 1, 0)


def backfill_fields(
    table: Table,
    listing: model.LogListing,
    end: int,
    *,
    more: bool,
    now: datetime,
    step_started: datetime | None,
) -> dict[str, Any]:
    """The Table fields a chunk ending at `end` sets (progress, start, rate, target)."""
    done = stored_count(listing, end)
    if not more:
        return {
            "backfill_done": done,
            "backfill_target_version": None,
            "backfill_started_at": None,
            "backfill_start_done": 0,
            "backfill_rate": None,
        }
    started_at, start_done = table.backfill_started_at, table.backfill_start_done
    if started_at is None:  # this chunk begins a backfill
        started_at = step_started or now
        start_done = stored_count(listing, table.last_seen_version)
    elapsed = (now - started_at).total_seconds()
    rate = (done - start_done) / elapsed if elapsed > 0 and done > start_done else None
    return {
        "backfill_done": done,
        "backfill_target_version": listing.latest_version,
        "backfill_started_at": started_at,
        "backfill_start_done": start_done,
        "backfill_rate": rate,
    }
