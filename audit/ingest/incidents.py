"""Incident rows: a table's incidents, as the core groups its open findings, upserted by id.

The tail (audit/tail/incidents.py) decides when to recompute; this module reads what the
computation needs of the stored rows (the open findings as core findings, the acknowledgement
facts) and writes the answer: one Incident row per cause key (`incident_id`, stable across
runs, so a recompute updates the row it wrote before), every open finding linked to its one
incident, and the stored incidents no open finding belongs to any more marked resolved.

A row's `last_seen` moves only when one of its stored facts changed: alerting reads the rows
changed since its last pass (audit/alerting/incidents.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from audit.core import model
from audit.core.incidents.build import incident_entry
from audit.core.incidents.model import Acknowledgement, Incident, occurrences
from audit.core.jsonsafe import clean_text, json_safe
from audit.core.vocab import SEVERITY_RANK, IncidentStatus, Severity
from audit.incidents.models import FINDINGS_RESOLVED
from audit.incidents.models import Incident as IncidentRow
from audit.ingest.columns import fit_columns
from audit.ingest.findings import FINDING_FIELDS
from audit.models import Finding, Table

RESOLVED = IncidentStatus.RESOLVED.value

# The stored facts of an incident; a change in any of them moves `last_seen`.
FACTS = (
    "cause",
    "headline",
    "severity",
    "severity_rank",
    "status",
    "first_version",
    "last_version",
    "occurrences",
    "finding_count",
    "writer",
    "operation",
    "scope",
    "damage",
    "repair",
    "inspect",
    "prevent",
    "quiet_since",
    "resolved_because",
    "explanation",
    "recheck_at",
)


@dataclass(slots=True)
class OpenFindings:
    """A table's open findings as the core takes them, with the id of each one's row."""

    findings: list[model.Finding]
    row_ids: list[int]

    def row_of(self) -> dict[int, int]:
        """Row id by the core finding's identity (the incidents hold the same objects)."""
        return {id(f): pk for f, pk in zip(self.findings, self.row_ids, strict=True)}


@dataclass(slots=True)
class StoredIncidents:
    created: int = 0
    changed: int = 0
    resolved: int = 0  # stored incidents no open finding belongs to any more


def open_findings(table_id: int) -> OpenFindings:
    """Every open finding of the table, as the core's Finding."""
    rows = Finding.objects.filter(table_id=table_id, status=Finding.Status.OPEN).values_list(
        "id", *FINDING_FIELDS
    )
    findings, ids = [], []
    for pk, kind, severity, version, related, confirmed, summary, text, witness, details in rows:
        findings.append(
            model.Finding(
                kind=kind,
                severity=severity,
                version=version,
                related_versions=[int(v) for v in related or []],
                confirmed=confirmed,
                summary=summary,
                explanation=text,
                witness=witness,
                details=details if isinstance(details, dict) else {},
            )
        )
        ids.append(pk)
    return OpenFindings(findings, ids)


def acknowledgements(table_id: int) -> dict[str, Acknowledgement]:
    """What the app knows of each incident's acknowledgement (the core's growing status)."""
    rows = IncidentRow.objects.filter(table_id=table_id, acknowledged_version__isnull=False)
    return {
        incident_id: Acknowledgement(version=version)
        for incident_id, version in rows.values_list("incident_id", "acknowledged_version")
    }


def unresolved_incidents(table_id: int) -> bool:
    return IncidentRow.objects.filter(table_id=table_id).exclude(status=RESOLVED).exists()


def recheck_due(table_id: int, now: datetime) -> bool:
    """Has the time come when one of the table's incidents changes status by time alone?"""
    return IncidentRow.objects.filter(table_id=table_id, recheck_at__lte=now).exists()


def incident_values(incident: Incident) -> dict[str, Any]:
    """An incident's stored facts (the API's fields, as `audit --json` gives them)."""
    entry = json_safe(incident_entry(incident))
    severity = entry["severity"] if entry["severity"] in SEVERITY_RANK else Severity.INFO
    values = {
        "cause": entry["cause"],
        "headline": clean_text(entry["headline"]),
        "severity": severity,
        "severity_rank": SEVERITY_RANK[severity],
        "status": entry["status"],
        "first_version": entry["first_version"],
        "last_version": entry["last_version"],
        "occurrences": len(occurrences(incident)),
        "finding_count": len(incident.findings),
        "writer": entry["writer"],
        "operation": clean_text(entry["operation"])[:200],
        "scope": clean_text(entry["scope"]),
        "damage": entry["damage"],
        "repair": entry["repair"],
        "inspect": entry["inspect"],
        "prevent": entry["prevent"],
        "quiet_since": entry["quiet_since"],
        "resolved_because": clean_text(entry["resolved_because"]),
        "explanation": clean_text(entry["explanation"]),
    }
    return fit_columns(IncidentRow, values)


def store_incidents(
    table_id: int,
    incidents: Sequence[Incident],
    found: OpenFindings,
    *,
    now: datetime,
    recheck_at: Mapping[str, datetime | None] | None = None,
) -> StoredIncidents:
    """Upsert the table's incidents and link each open finding to its incident. Call inside
    a transaction (it also moves the table's findings generation when anything changed)."""
    out = StoredIncidents()
    existing = {row.incident_id: row for row in IncidentRow.objects.filter(table_id=table_id)}
    new_rows, changed = [], []
    for incident in incidents:
        values = incident_values(incident)
        values["recheck_at"] = (recheck_at or {}).get(incident.id)
        row = existing.pop(incident.id, None)
        if row is None:
            new_rows.append(
                IncidentRow(
                    table_id=table_id,
                    incident_id=incident.id,
                    first_seen=now,
                    last_seen=now,
                    **values,
                )
            )
        elif any(getattr(row, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(row, name, value)
            row.last_seen = now
            changed.append(row)
    for row in existing.values():  # no open finding is theirs any more
        if row.status != RESOLVED or row.finding_count or row.recheck_at is not None:
            row.status, row.resolved_because = RESOLVED, FINDINGS_RESOLVED
            row.finding_count, row.recheck_at, row.last_seen = 0, None, now
            changed.append(row)
            out.resolved += 1
    created = _write(table_id, new_rows, changed)
    out.created, out.changed = len(created), len(changed) - out.resolved
    linked = _link(table_id, incidents, found, {r.incident_id: r.pk for r in created})
    if created or changed or linked:
        Table.bump_findings(table_id)
    return out


def _write(table_id: int, new_rows: list[IncidentRow], changed: list[IncidentRow]) -> list:
    created = IncidentRow.objects.bulk_create(new_rows, batch_size=200)
    if any(row.pk is None for row in created):  # backends that do not return ids
        ids = [row.incident_id for row in created]
        created = list(IncidentRow.objects.filter(table_id=table_id, incident_id__in=ids))
    IncidentRow.objects.bulk_update(changed, [*FACTS, "last_seen"], batch_size=200)
    return created


def _link(
    table_id: int, incidents: Sequence[Incident], found: OpenFindings, created: dict[str, int]
) -> int:
    """Point each open finding at its incident's row (only the rows that point elsewhere)."""
    pks = (
        dict(IncidentRow.objects.filter(table_id=table_id).values_list("incident_id", "pk"))
        | created
    )
    row_of = found.row_of()
    linked = 0
    for incident in incidents:
        pk = pks[incident.id]
        ids = [row_of[id(f)] for f in incident.findings if id(f) in row_of]
        for start in range(0, len(ids), 500):
            rows = Finding.objects.filter(pk__in=ids[start : start + 500])
            linked += rows.filter(~Q(incident_id=pk) | Q(incident_id__isnull=True)).update(
                incident_id=pk
            )
    return linked
