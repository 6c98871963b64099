"""The incident page: one root cause of a table's findings, its occurrences, the damage it
left, the statements that repair, inspect and prevent it (each with a copy button), the
witness of its head finding and its findings; and acknowledging it (members and owners).

Its URL is under its table's (`/tables/<id>/incidents/<pk>/`): the table passes the one 404
gate (`visible_table_or_404`) first, then the incident is looked up inside that table.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from audit.core.vocab import IncidentStatus
from audit.models import Incident, Table
from audit.reads.incidents import acknowledge_incident, shown_damage
from audit.reads.pages import head_finding, incident_of_table_or_404, occurrence_versions
from audit.reads.visible import visible_table_or_404
from audit.trust import access
from frontend.views.findings import witness_files, witness_table

FINDINGS_PER_PAGE = 50
MAX_FILES_SHOWN = 50
MAX_VERSIONS_LISTED = 40
STRIP_WIDTH = 1000  # the occurrence strip's viewBox width (it scales to the card)
# The statement lists in the order a responder needs them.
STATEMENT_GROUPS = (
    ("repair", "Repair", "the steps to run, in order"),
    ("inspect", "Inspect", "queries that show the damage"),
    ("prevent", "Prevent", "what removes the cause"),
)


def status_reason(incident: Incident) -> str:
    """Why the incident has its status, in words."""
    if incident.status == IncidentStatus.RESOLVED:
        return f"Resolved: {incident.resolved_because or 'the cause is gone'}."
    if incident.status == IncidentStatus.QUIET:
        since = incident.quiet_since if incident.quiet_since is not None else incident.last_version
        return f"Quiet: no recurrence since v{since}."
    if incident.status == IncidentStatus.GROWING:
        return (
            f"Growing: it occurred again after it was acknowledged at "
            f"v{incident.acknowledged_version}; last at v{incident.last_version}."
        )
    return f"Open: last occurred at v{incident.last_version}."


def occurrence_strip(versions: list[int], table: Table) -> dict[str, Any]:
    """The marks of the occurrence strip: each version's place on the table's stored range."""
    low = table.first_available_version if table.first_available_version is not None else 0
    high = table.last_seen_version if table.last_seen_version is not None else low
    low = min([low, *versions]) if versions else low
    high = max([high, *versions]) if versions else high
    span = max(high - low, 1)
    width = max(STRIP_WIDTH / (span + 1), 3.0)
    marks = [
        {"version": v, "x": round((v - low) / span * (STRIP_WIDTH - width), 2)} for v in versions
    ]
    return {"low": low, "high": high, "marks": marks, "width": round(width, 2)}


def statement_groups(incident: Incident) -> list[dict[str, Any]]:
    """Each statement list with an id per statement (its copy button's target)."""
    groups = []
    for name, title, hint in STATEMENT_GROUPS:
        stored = getattr(incident, name) or []
        statements = [
            {**s, "id": f"stmt-{name}-{n}"}
            for n, s in enumerate(stored)
            if isinstance(s, dict) and isinstance(s.get("code"), str)
        ]
        groups.append({"name": name, "title": title, "hint": hint, "statements": statements})
    return groups


@login_required
def incident_detail(request: HttpRequest, table_id: int, incident_id: int) -> HttpResponse:
    table = visible_table_or_404(request, table_id)
    incident = incident_of_table_or_404(table.pk, incident_id)
    head = head_finding(incident)
    witness = head.witness if head is not None and isinstance(head.witness, dict) else None
    versions = occurrence_versions(incident)
    damage = shown_damage(incident.damage)
    files = damage.get("files") if isinstance(damage.get("files"), list) else []
    findings = Paginator(incident.folded, FINDINGS_PER_PAGE).get_page(request.GET.get("page"))
    ctx = {
        "table": table,
        "incident": incident,
        "status_reason": status_reason(incident),
        "strip": occurrence_strip(versions, table),
        "versions": versions[:MAX_VERSIONS_LISTED],
        "n_versions": len(versions),
        "damage": damage,
        "files": files[:MAX_FILES_SHOWN],
        "n_files": len(files),
        "partitions": damage.get("partitions") or [],
        "groups": statement_groups(incident),
        "head": head,
        "witness": witness,
        "has_witness_rows": witness is not None and ("row_count" in witness or "files" in witness),
        "witness_table": witness_table(witness),
        "witness_files": witness_files(witness)[:MAX_FILES_SHOWN],
        "findings": findings,
        "may_acknowledge": access.may_acknowledge(request.user, table),
    }
    return render(request, "frontend/incident.html", ctx)


@login_required
@require_POST
def incident_acknowledge(request: HttpRequest, table_id: int, incident_id: int) -> HttpResponse:
    """Acknowledge the incident and its open findings: members and owners of the table's
    project; a viewer gets 403, another project's table or incident 404 (the gate first)."""
    table = visible_table_or_404(request, table_id)
    incident = incident_of_table_or_404(table.pk, incident_id)
    if not access.may_acknowledge(request.user, table):
        raise PermissionDenied("only members of the table's project acknowledge incidents")
    if acknowledge_incident(incident, request.user):
        messages.success(request, "Incident acknowledged, with its open findings.")
    else:
        messages.info(request, "This incident was already acknowledged.")
    return redirect("frontend:incident", table_id=table.pk, incident_id=incident.pk)
