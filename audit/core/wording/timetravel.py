"""Words for time-travel findings (facts: timetravel.py, timestamps.py)."""

from __future__ import annotations

from audit.core.facts.timestamps import TimestampFacts
from audit.core.facts.timetravel import BrokenSnapshot, MissingFile, MissingGroup, Vacuum
from audit.core.numbers import ms_datetime
from audit.core.storage.roots import shown_path
from audit.core.wording import FindingText

MAX_NAMED = 5


def _ranges(ranges: list[tuple[int, int]]) -> str:
    parts = [f"v{a}" if a == b else f"v{a}-v{b}" for a, b in ranges[:10]]
    more = f" and {len(ranges) - 10} more range(s)" if len(ranges) > 10 else ""
    return ", ".join(parts) + more


def _files(files: list[MissingFile]) -> str:
    named = ", ".join(shown_path(f.path) for f in files[:MAX_NAMED])
    more = f" and {len(files) - MAX_NAMED} more" if len(files) > MAX_NAMED else ""
    return named + more


def _hours(ms: int) -> str:
    return f"{ms / 3_600_000:g} hour(s)"


def retention_words(vacuum: Vacuum, retention_ms: int) -> str:
    """Why the VACUUM could delete them: its retention, the table's, the check."""
    words = []
    if vacuum.specified_retention_ms is not None:
        shorter = vacuum.specified_retention_ms < retention_ms
        words.append(
            f"it ran with a retention of {_hours(vacuum.specified_retention_ms)}"
            + (
                f", shorter than delta.deletedFileRetentionDuration ({_hours(retention_ms)})"
                if shorter
                else ""
            )
        )
    if vacuum.retention_check is False:
        words.append("its retention check was off")
    if not words:
        words.append("it recorded no retention")
    return "; ".join(words)


def missing_data_file_text(group: MissingGroup) -> FindingText:
    files, vacuum = group.files, group.vacuum
    reach = (
        "the latest version cannot be read"
        if group.latest_broken
        else "older versions can no longer be read (time travel, CDF)"
    )
    if vacuum is not None:
        cause = f"the VACUUM at v{vacuum.start} most likely deleted them ({retention_words(vacuum, group.retention_ms)})"
    elif group.latest_broken:
        cause = (
            "they were deleted outside Delta: no commit removed them and no VACUUM is in the log"
        )
    else:
        cause = (
            "no VACUUM in the log deleted them: they were deleted outside Delta (or by a cleanup "
            "that wrote no commit) before their retention expired"
        )
    return FindingText(
        f"{len(files)} data file(s) referenced by {_ranges(group.broken)} are missing from "
        f"storage: {reach}",
        f"Storage no longer has {len(files)} data file(s) that the log says are part of "
        f"versions {_ranges(group.broken)}: {_files(files)}. Reading those versions fails; "
        f"{cause}.",
    )


def vacuum_broke_snapshot_text(fact: BrokenSnapshot) -> FindingText:
    vacuum, files = fact.vacuum, fact.files
    end = f"-v{vacuum.end}" if vacuum.end is not None and vacuum.end != vacuum.start else ""
    return FindingText(
        f"v{fact.version} read v{fact.read_version}, whose {len(files)} file(s) the VACUUM at "
        f"v{vacuum.start}{end} deleted before it committed",
        f"The transaction of v{fact.version} read the table at v{fact.read_version}; while it ran, "
        f"the VACUUM of v{vacuum.start}{end} deleted {len(files)} file(s) of that snapshot "
        f"({_files(files)}), and it committed after. What it read may have failed part way or "
        f"been computed from a snapshot no reader can rebuild; {retention_words(vacuum, fact.retention_ms)}. "
        "Keep the retention longer than the longest transaction.",
    )


def _moment(ms: int) -> str:
    """A time to the millisecond; one outside the calendar (10**17 ms) is an unknown time."""
    moment = ms_datetime(ms)
    if moment is None:
        return "an unknown time"
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _version(version: int | None) -> str:
    return "no version (before the first)" if version is None else f"v{version}"


def timestamps_out_of_order_text(facts: TimestampFacts) -> FindingText:
    causes = []
    if facts.backwards:
        causes.append(
            f"the commit time goes backwards at {len(facts.backwards)} version(s) "
            f"(first v{facts.backwards[0]})"
        )
    if facts.skewed:
        causes.append(
            f"{len(facts.skewed)} commit file(s) have modification times up to "
            f"{_hours(facts.max_skew_ms)} away from the recorded commit times (a copied or "
            "restored table)"
        )
    shown = "; ".join(
        f"{_moment(a)} to {_moment(b)}: history says {_version(s)}, resolves to {_version(r)}"
        for a, b, s, r in facts.intervals[:5]
    )
    uses = (
        f"in-commit timestamps from v{facts.enablement_version} and file modification times before"
        if facts.enablement_version is not None
        else "the commit files' modification times"
    )
    return FindingText(
        f"TIMESTAMP AS OF resolves {len(facts.intervals)} time interval(s) to another version "
        "than the history's order says",
        f"{'; '.join(causes).capitalize()}. TIMESTAMP AS OF uses {uses}, so queries by time "
        f"read another version than the one committed at that time: {shown}. Enable in-commit "
        "timestamps (delta.enableInCommitTimestamps) so lookups use the recorded time.",
    )
