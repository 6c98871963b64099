"""Findings grouped into incidents: one per cause key, every finding in exactly one.

Deterministic: the findings are taken in (version, kind, related versions) order, an incident's
findings keep that order, and incidents are listed worst first (severity, then the first
version, then the id). A table-level cause (an ignored isolation setting, a hotspot) and its
symptoms share a key (causes.py), so the cause heads the incident of the symptoms it explains;
any finding no rule claims is an incident of its own kind and scope.
"""

from __future__ import annotations

from dataclasses import replace

from audit.core.history.summary import History
from audit.core.incidents.causes import COMMIT_KINDS, Causes, writer_parts
from audit.core.incidents.model import CauseKey, Incident
from audit.core.model import Finding
from audit.core.vocab import SEVERITY_RANK, IncidentCause, Severity


def finding_order(finding: Finding) -> tuple[int, str, tuple[int, ...]]:
    return (finding.version, str(finding.kind), tuple(finding.related_versions))


def group_findings(history: History, findings: list[Finding]) -> list[Incident]:
    """The incidents of a table's findings, worst first."""
    ordered = sorted(findings, key=finding_order)
    causes = Causes(history, ordered)
    metadata = history.state.metadata
    table = str(metadata.id or "") if metadata is not None else ""
    groups: dict[CauseKey, list[Finding]] = {}
    # Each key with the table's id, made once per key (tens of thousands of findings share
    # a few keys; `replace` per finding was a tenth of the grouping).
    tabled: dict[CauseKey, CauseKey] = {}
    for finding in ordered:
        cause = causes.key_of(finding)
        key = tabled.get(cause)
        if key is None:
            key = tabled[cause] = replace(cause, table=table[:200])
        groups.setdefault(key, []).append(finding)
    incidents = [_incident(history, key, members) for key, members in groups.items()]
    incidents.sort(key=lambda i: (-SEVERITY_RANK[i.severity], i.first_version, i.id))
    return incidents


def _incident(history: History, key: CauseKey, findings: list[Finding]) -> Incident:
    severity = max(
        (Severity(f.severity) for f in findings if f.severity in SEVERITY_RANK),
        key=SEVERITY_RANK.__getitem__,
        default=Severity.INFO,
    )
    return Incident(key, findings, writer=_writer(history, key, findings), severity=severity)


def _writer(history: History, key: CauseKey, findings: list[Finding]) -> dict[str, str]:
    """Who the incident's commits were written by: the first symptom commit's writer (they
    share it: it is part of the key); for a setting, the engine that ignores it."""
    if key.cause == IncidentCause.ISOLATION_SETTING_IGNORED:
        return {"engine": key.writer.removeprefix("engine=")}
    for finding in findings:
        if finding.kind in COMMIT_KINDS:
            return writer_parts(history.summary(finding.version))
    if key.writer:
        return writer_parts(history.summary(findings[0].version))
    return {}
