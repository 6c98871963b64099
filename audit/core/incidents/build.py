"""From a table's findings to its incidents: the one entry point (`incidents_of`) and the JSON
of an incident (`incident_entry`, the contract of `audit --json`'s `incidents`).

Pure over the findings and the history they were found in: the one-shot audit calls it with
its findings (and the data scan's), the tail can call it with the findings it stored, and both
get the same incidents, ids included (an id hashes the cause key, never a version).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.core.history.summary import History
from audit.core.incidents.damage import damage_of, removal_index
from audit.core.incidents.grouping import group_findings
from audit.core.incidents.model import Acknowledgement, Incident
from audit.core.incidents.statements import statements_of
from audit.core.incidents.status import StatusRules, WriterIndex, incident_status
from audit.core.incidents.updates import update_assignments
from audit.core.model import Finding
from audit.core.wording.incidents import explanation, headline


def incidents_of(
    history: History,
    findings: Sequence[Finding],
    *,
    check_data: bool = True,
    read_roots: Sequence[str] | None = None,
    now_ms: int | None = None,
    rules: StatusRules = StatusRules(),
    acknowledged: Mapping[str, Acknowledgement] | None = None,
) -> list[Incident]:
    """The incidents of `findings` (every finding in exactly one), worst first.

    Data files are read (inside `read_roots`) to count the damage and plan the repair unless
    `check_data` is off. `now_ms` is the moment the status is judged at (default: the latest
    commit's time, so the answer depends on the log alone); `acknowledged` maps incident ids
    to what the app knows of their acknowledgement."""
    incidents = group_findings(history, list(findings))
    if not incidents:
        return []
    now = now_ms if now_ms is not None else _latest_time(history)
    writers = WriterIndex(history)
    removals = removal_index(history, findings)
    for incident in incidents:
        stale = damage_of(
            incident, history, check_data=check_data, read_roots=read_roots, removals=removals
        )
        incident.damage = stale.damage
        versions = sorted({f.stale_version for f in stale.files})
        assignments = update_assignments(history, versions, read_roots) if check_data else {}
        statements = statements_of(incident, history, stale, assignments)
        incident.repair, incident.inspect = statements.repair, statements.inspect
        incident.prevent = statements.prevent
        status = incident_status(
            incident,
            history,
            now_ms=now,
            rules=rules,
            acknowledged=(acknowledged or {}).get(incident.id),
            writers=writers,
        )
        incident.status, incident.quiet_since = status.status, status.quiet_since
        incident.resolved_because = status.because
        facts = (incident.key, incident.findings, incident.writer, incident.damage)
        incident.headline, incident.explanation = headline(*facts), explanation(*facts)
    return incidents


def _latest_time(history: History) -> int:
    for summary in reversed(history.summaries):
        if summary.timestamp is not None:
            return summary.timestamp
    return 0


def incident_entry(incident: Incident) -> dict[str, Any]:
    """An incident as `audit --json` and the API give it."""
    key = incident.key
    return {
        "id": incident.id,
        "cause": key.cause.value,
        "headline": incident.headline,
        "severity": incident.severity,
        "status": incident.status.value,
        "first_version": incident.first_version,
        "last_version": incident.last_version,
        "findings": [{"kind": f.kind, "version": f.version} for f in incident.findings],
        "damage": incident.damage.as_dict(),
        "repair": [s.as_dict() for s in incident.repair],
        "inspect": [s.as_dict() for s in incident.inspect],
        "prevent": [s.as_dict() for s in incident.prevent],
        "writer": dict(incident.writer),
        "operation": key.operation,
        "scope": key.scope,
        "quiet_since": incident.quiet_since,
        "resolved_because": incident.resolved_because,
        "explanation": incident.explanation,
    }
