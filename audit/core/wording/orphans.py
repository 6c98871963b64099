"""Words for the storage-scan findings (facts: data/orphans.py)."""

from __future__ import annotations

from audit.core.numbers import ms_datetime
from audit.core.wording import FindingText


def hour_iso(ms: int) -> str:
    """The hour a time falls in, as the finding and its witness name it ("unknown" for a
    time outside the calendar: a file's modification time is storage's word, not ours)."""
    moment = ms_datetime(ms)
    return moment.strftime("%Y-%m-%dT%H:00Z") if moment is not None else "unknown"


def size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def orphan_files_text(
    files: int, size: int, oldest: int | None, newest: int | None, truncated: bool
) -> FindingText:
    span = f"{hour_iso(oldest or 0)} to {hour_iso(newest or 0)}"
    bound = " (a lower bound: the listing hit its limits)" if truncated else ""
    return FindingText(
        f"{files} orphan data file(s), {size_text(size)}, written {span}{bound}",
        f"{files} file(s) ({size_text(size)}) in the table's data folders are "
        "referenced by no add or remove in the available history and are older than the "
        "longest a commit of this table was seen in flight: commits that never landed "
        "(failed or conflicting transactions, killed jobs) or an engine that leaks files "
        "wrote them. They cost storage until VACUUM removes them; this audit never deletes "
        "anything. Compare their hours with the conflict hotspots of the same hours.",
    )
