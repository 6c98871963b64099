"""Words for the writer-behaviour findings (facts: writers.py)."""

from __future__ import annotations

from audit.core.wording import FindingText


def retry_storm_text(
    writer: str,
    operation: str,
    where: str,
    commits: int,
    seconds: float,
    contended: int,
    retries: int,
) -> FindingText:
    """`where`: the partitions as rendered; `contended`: the commits that raced others;
    `retries`: the conflict retries the writer itself recorded."""
    return FindingText(
        f"{writer} committed {commits} {operation} commits on {where} within "
        f"{seconds:.0f} s, {contended} of them racing other commits",
        f"One writer ({writer}) committed {operation} on the same partitions ({where}) "
        f"{commits} times in {seconds:.0f} seconds, and {contended} of those commits "
        "ran while other commits landed"
        + (f"; the writer itself recorded {retries} conflict retries" if retries else "")
        + ". That is the shape of a job whose attempts keep losing write conflicts and "
        "running again: each lost attempt costs a full rewrite and leaves orphan data files. "
        "Partition the table by the column these commits filter on, or serialize the writers.",
    )
