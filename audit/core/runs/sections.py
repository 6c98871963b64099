"""The `"health"` and `"changes"` sections of `manage.py audit --json`."""

from __future__ import annotations

import time
from typing import Any

from audit.core.errors import DeltaAuditError, one_line
from audit.core.facts.timestamps import MIN_INTERVAL_MS
from audit.core.health.changes import changes_from_history, link_findings
from audit.core.health.compute import health_of_history
from audit.core.health.scan import scan_data
from audit.core.health.timestamps import timestamps_section
from audit.core.health.timetravel import reachability, time_travel_section
from audit.core.history.summary import History
from audit.core.model import Finding
from audit.core.report import finding_entry
from audit.core.storage.stores import local_path_of, open_store


def add_health_and_changes(report: dict[str, Any], history: History) -> None:
    """Add both sections in place; a health that cannot be computed says why, the rest stays."""
    try:
        report["health"] = health_of_history(history)
    except DeltaAuditError as err:
        report["health"] = {"error": one_line(err, limit=2000)}
    report["changes"] = changes_from_history(history)
    link_findings(report["findings"], report["changes"])


def add_data_scan(
    report: dict[str, Any],
    history: History,
    uri: str,
    *,
    scan: bool,
    min_interval_ms: int = MIN_INTERVAL_MS,
) -> list[Finding]:
    """List the data folders once: orphan and missing files join the findings, the readable
    range joins the health (`time_travel`). Without `scan`, the range says it was not judged.
    Returns the findings added (the `--fail-on` gate counts them)."""
    now_ms = int(time.time() * 1000)
    reason = None
    added: list[Finding] = []
    try:
        if scan:
            found = scan_data(
                open_store(uri),
                history,
                local_path_of(uri) or uri,
                now_ms=now_ms,
                min_interval_ms=min_interval_ms,
            )
            added = found.findings
            report["findings"].extend(finding_entry(f) for f in added)
            reach = found.reach
            if found.timestamps is not None and isinstance(report.get("health"), dict):
                report["health"]["timestamps"] = timestamps_section(found.timestamps)
        else:
            reach = reachability(history, None, lambda p: p, now_ms=now_ms)
    except DeltaAuditError as err:
        reason = one_line(err, limit=2000)
        reach = reachability(history, None, lambda p: p, now_ms=now_ms)
    section = time_travel_section(reach, history)
    if reason is not None:
        section["reason"] = reason
    health = report.get("health")
    if isinstance(health, dict):
        health["time_travel"] = section
    return added
