"""The `unpublished` section of a report: staged commits audited like published ones.

For a catalog-managed or coordinated-commits table whose log has staged commits beyond the
published version (log/staged.py), the commits that can be read unambiguously are audited
through a log that presents them as published, and their commits and findings are reported
apart from the published ones, each marked `"unpublished": true`. The publish lag (versions
and seconds the oldest staged commit has waited) goes with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from audit.core.audit import AuditResult
from audit.core.history.summary import History, history_from_log
from audit.core.log import DeltaLog
from audit.core.log.staged import StagedStore, Unpublished, find_unpublished
from audit.core.model import Protocol
from audit.core.report import commit_entry, finding_entry


def publish_lag(found: Unpublished, history: History | None, now_ms: int) -> dict[str, Any]:
    """How far the published log trails the staged commits: versions, and seconds since the
    first unpublished commit was written (its commit timestamp when read, else its file's)."""
    first = found.published + 1
    oldest: int | None = None
    summary = history.summary(first) if history is not None else None
    if summary is not None and summary.timestamp is not None:
        oldest = summary.timestamp
    elif found.readable and found.readable[0].version == first:
        oldest = found.readable[0].modification_time
    return {
        "published_version": found.published,
        "latest_staged_version": found.staged_versions[-1] if found.staged_versions else None,
        "versions": found.lag_versions,
        "seconds": round(max(0, now_ms - oldest) / 1000, 3) if oldest is not None else None,
    }


COORDINATED_FEATURES = ("catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview")


def table_publish_lag(log: DeltaLog, protocol: Protocol | None, now_ms: int) -> dict | None:
    """The publish lag of a catalog-managed or coordinated-commits table (None for others:
    their commits are published as they are made). One listing of the staged folders."""
    features = (
        {*(protocol.reader_features or []), *(protocol.writer_features or [])}
        if protocol
        else set()
    )
    if not features.intersection(COORDINATED_FEATURES):
        return None
    return publish_lag(find_unpublished(log.store, log.listing.latest_version), None, now_ms)


def audit_unpublished(
    log: DeltaLog, audit: Callable[[History], AuditResult], *, now_ms: int
) -> dict[str, Any] | None:
    """The section, or None when nothing is staged beyond the published log. `audit` runs
    the published log's audit on the staged commits' history (the same options: read roots,
    key, deletion-vector limits; runs/table.py `AuditedTable.unpublished`)."""
    published = log.listing.latest_version
    found = find_unpublished(log.store, published)
    if not found.staged_versions and not found.refused:
        return None
    section: dict[str, Any] = {
        "published_version": published,
        "staged_versions": found.staged_versions,
        "audited_versions": [s.version for s in found.readable],
        "ambiguous_versions": found.ambiguous,
        "sources": sorted({s.source for s in found.readable}),
        "commits": [],
        "findings": [],
    }
    if found.refused:
        section["refused"] = found.refused  # links leading outside the table: not read
    history = None
    if found.readable:
        history = history_from_log(DeltaLog(StagedStore(log.store, found.readable)))
        result = audit(history)
        section["commits"] = [
            {**commit_entry(s, result.commits.get(s.version)), "unpublished": True}
            for s in history.summaries
            if s.version > published
        ]
        section["findings"] = [
            {**finding_entry(f), "unpublished": True}
            for f in result.findings
            # A finding at a published version can be about a staged commit (a metadata
            # change it committed across names it among its related versions).
            if f.version > published or any(v > published for v in f.related_versions)
        ]
    section["lag"] = publish_lag(found, history, now_ms)
    return section
