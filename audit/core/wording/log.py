"""Words for findings about the log as found in the wild (facts: integrity/gaps.py,
integrity/catalog.py)."""

from __future__ import annotations

from audit.core.wording import FindingText


def history_gap_text(
    lost_from: int, lost_to: int, resume_at: int, checkpoint: int | None
) -> FindingText:
    span = f"version {lost_from}" if lost_from == lost_to else f"versions {lost_from}..{lost_to}"
    where = f" (their effect on the table survives in the checkpoint of version {checkpoint})"
    return FindingText(
        f"{span} were removed by log cleanup before they were audited",
        f"The commit files of {span} were deleted from _delta_log (log retention cleanup)"
        f"{where if checkpoint is not None else ''} before this table's tail read them. "
        "Their operations, predicates and read versions are lost, so conflicts involving "
        "them cannot be checked. Auditing resumed at version "
        f"{resume_at}. Tail more often, or keep the log longer "
        "(delta.logRetentionDuration), to avoid gaps.",
    )


def catalog_managed_text(feature: str, published: int, beyond: list[int]) -> FindingText:
    """`beyond`: the staged commit versions past the published log, ascending."""
    if beyond:
        span = f"{beyond[0]}..{beyond[-1]}" if len(beyond) > 1 else str(beyond[0])
        unseen = (
            f"; {len(beyond)} staged commit file(s) for version(s) {span} under "
            "_delta_log/_staged_commits are not audited (only the catalog knows which were "
            "ratified)"
        )
    else:
        unseen = "; no staged commit beyond it was found"
    return FindingText(
        f"catalog-managed table ({feature}): audited up to published version {published}{unseen}",
        f"This table uses the '{feature}' table feature: its catalog decides which commits "
        "exist, and publishes them to _delta_log/<version>.json afterwards. This audit "
        f"reads the file-system log only, which reaches version {published}. Commits the "
        "catalog ratified but has not published yet are not visible here; staged commit "
        "files are listed but not audited, because an unratified staged commit never "
        "happened. Findings cover the published versions.",
    )
