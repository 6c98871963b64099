"""Engine profiles: whose conflict rules a commit was judged by, as data.

The re-check (rules.py) runs Delta's reference rules (Spark's ConflictChecker, the reference
page's matrix). Writers do not all enforce them: a profile says, per engine and version, where
the writer's own checker departs from the reference, so the isolation page can count the
concurrent pairs the reference calls conflicts that this writer lets through.

- Databricks with row-level concurrency (Runtime 14.2+, deletion vectors on an unpartitioned
  or liquid-clustered table): two DML commits conflict only on the same rows; OPTIMIZE
  conflicts with DML only under ZORDER BY.
- Spark (Delta OSS) and Databricks without it: the reference.
- delta-rs: removes with `dataChange=false` (a compaction) do not conflict with a concurrent
  writer (delta-rs#3982); a MERGE without a predicate reads the whole table (delta-rs#2291,
  as the reference's inferred scope does).
- Delta Kernel before the delete-vs-delete fix (delta#7163): only protocol, metadata, domain
  metadata and row ids were checked, no file-level check; KERNEL_DELETE_FIX is the first
  release with the fix when known, else every Kernel writer is "possibly before the fix".
- Trino and other engines: judged by the reference.

A profile is chosen from `engineInfo` (which delta-rs repeats in `clientVersion`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from audit.core.conflicts.verdict import Recheck
from audit.core.model import CommitSummary
from audit.core.vocab import Engine

# The first Delta Kernel release whose checker has the delete-vs-delete check; None: unknown
# here, so Kernel writers are judged "possibly before the fix".
KERNEL_DELETE_FIX: tuple[int, int, int] | None = None
Tri = Literal["yes", "no", "possibly"]
_FILE_RULES = frozenset({"append", "delete_read", "delete_delete"})
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class EngineProfile:
    name: str
    description: str
    file_checks: Tri = "yes"  # appends, delete-read, delete-delete checked at all
    non_data_change_removes_conflict: bool = True
    row_level_concurrency: bool = False
    source: str = ""


REFERENCE = EngineProfile("spark", "Delta Lake on Spark: the reference rules")
PROFILES: dict[str, EngineProfile] = {
    p.name: p
    for p in (
        REFERENCE,
        EngineProfile("databricks", "Databricks without row-level concurrency"),
        EngineProfile(
            "databricks-rlc",
            "Databricks with row-level concurrency: DML pairs conflict only on the same rows",
            row_level_concurrency=True,
            source="Databricks isolation levels reference",
        ),
        EngineProfile(
            "delta-rs",
            "delta-rs: removes with dataChange=false do not conflict",
            non_data_change_removes_conflict=False,
            source="delta-rs#3982, delta-rs#2291",
        ),
        EngineProfile(
            "kernel-before-fix",
            "Delta Kernel before the delete-vs-delete fix: no file-level checks",
            file_checks="no",
            source="delta#7163",
        ),
        EngineProfile("kernel", "Delta Kernel with the delete-vs-delete check"),
        EngineProfile(
            "kernel-unknown",
            "Delta Kernel of a release not known to have the delete-vs-delete check",
            file_checks="possibly",
            source="delta#7163",
        ),
        EngineProfile("trino", "Trino: judged by the reference rules"),
        EngineProfile("other", "another engine: judged by the reference rules"),
    )
}


def _version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.search(text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


@lru_cache(maxsize=256)
def _profile_name(engine: str, engine_info: str, rlc: bool) -> str:
    lowered = engine_info.lower()
    if engine == Engine.DATABRICKS:
        # `rlc` already requires the runtime (TableContext.row_level_concurrency).
        return "databricks-rlc" if rlc else "databricks"
    if engine == Engine.DELTA_RS:
        return "delta-rs"
    if "kernel" in lowered:
        found = _version(lowered.split("kernel", 1)[1])
        if KERNEL_DELETE_FIX is None or found is None:
            return "kernel-unknown"
        return "kernel" if found >= KERNEL_DELETE_FIX else "kernel-before-fix"
    if engine == Engine.SPARK:
        return "spark"
    if "trino" in lowered:
        return "trino"
    return "other"


def profile_for(txn: CommitSummary, rlc: bool) -> EngineProfile:
    """The profile of the commit's writer; `rlc`: row-level concurrency applies to it."""
    return PROFILES[_profile_name(str(txn.engine), txn.engine_info or "", rlc)]


def departure(profile: EngineProfile, verdict: Recheck, winner: CommitSummary) -> str | None:
    """Why this writer's own rules would let through a pair the reference rejects; None when
    they agree (or the reference lets it through too)."""
    if not verdict.any:
        return None
    if verdict.rule in _FILE_RULES and profile.file_checks != "yes":
        return (
            "no file-level checks"
            if profile.file_checks == "no"
            else "possibly no file-level checks"
        )
    if (
        not profile.non_data_change_removes_conflict
        and verdict.rule in ("delete_read", "delete_delete")
        and winner.removed_paths_all
        and not winner.files_removed
        # delta-rs still counts a compaction's added files as new data (its append check
        # fires), so only a winner that added nothing gets through.
        and not winner.added_paths
        and not winner.compacted_paths
    ):
        return "removes with dataChange=false let through"
    if profile.row_level_concurrency and verdict.same_row_only:
        return "row-level: only the same rows conflict"
    return None
