"""The facts of time travel (health/timetravel.py finds them; wording/timetravel.py words the
`missing_data_file` and `vacuum_broke_snapshot` findings): VACUUMs as the log records them,
the data files a retained version references that storage no longer has, the readable range."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Vacuum:
    """A VACUUM as the log records it (delta-rs and Spark write START and END commits)."""

    start: int  # version of VACUUM START (or of a lone VACUUM END)
    end: int | None
    timestamp: int | None
    specified_retention_ms: int | None
    retention_check: bool | None  # False: run with the retention check off


@dataclass
class MissingFile:
    path: str
    # (first version it was live, version that removed it or None: live at the latest)
    lives: list[tuple[int, int | None]]
    removed_at: int | None  # ms, time of the removing commit of the last life
    vacuum: Vacuum | None  # the VACUUM that most likely deleted it; None: deleted outside Delta
    legal: bool  # deleted after its retention expired: Delta's own cleanup, not a fault


@dataclass
class Reachability:
    judged: bool
    reason: str | None = None  # why nothing was judged
    first_available_version: int = 0
    latest_version: int = 0
    missing: list[MissingFile] = field(default_factory=list)
    broken: list[tuple[int, int]] = field(default_factory=list)  # inclusive version ranges
    earliest_readable_version: int | None = None
    earliest_readable_timestamp: int | None = None


@dataclass
class MissingGroup:
    """Missing files deleted the same way: by one VACUUM, or outside Delta (vacuum None)."""

    files: list[MissingFile]
    vacuum: Vacuum | None
    latest_broken: bool  # the latest version references one of them
    broken: list[tuple[int, int]]  # the version ranges these files break
    retention_ms: int


@dataclass
class BrokenSnapshot:
    """A VACUUM deleted files of the snapshot a transaction read before it and committed after."""

    version: int  # the transaction's commit
    read_version: int
    vacuum: Vacuum
    files: list[MissingFile]
    retention_ms: int
