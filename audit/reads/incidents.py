"""The reads of stored incidents (audit/incidents/models.py): the API's and the dashboard's.

Who sees an incident is who sees its table (`access`); another project's incident is a 404,
as a missing one. An incident's `findings` are its open findings (what the one-shot audit
groups), or, once none is open, the findings it had. Paths leave here through `shown_path`
(the core stores them so already; shown again in case a row came from elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import Http404

from audit.core.storage.roots import shown_path
from audit.core.vocab import SEVERITY_RANK, IncidentStatus
from audit.models import Finding, Incident, Table
from audit.reads.declared.lists import INCIDENT_FIELDS
from audit.trust import access

TABLE_PAGE = 50  # incidents per page of a table's list (the dashboard's)


def visible_incidents(who: Any) -> QuerySet[Incident]:
    """The incidents of the tables the reader sees (`who`: a request, a user, project ids)."""
    return access.restrict(Incident.objects.all(), who, "table__project_id")


def check_incident(who: Any, pk: Any) -> None:
    """Another project's incident is a 404 on every route under /api/incidents/{id}/."""
    access.object_or_404(who, pk, visible_incidents, "Incident")


def incident_for_user_or_404(who: Any, pk: int | str) -> Incident:
    """An incident of a table the reader sees, with its table and acknowledger, else 404."""
    try:
        number = int(pk)
    except (TypeError, ValueError):
        raise Http404("No Incident matches the given query.") from None
    rows = visible_incidents(who).select_related("table", "acknowledged_by")
    found = rows.filter(pk=number).first()
    if found is None:
        raise Http404("No Incident matches the given query.")
    return found


def _worst_first(rows: QuerySet[Incident]) -> QuerySet[Incident]:
    """Unresolved before resolved, then worst first (severity, first version, id)."""
    resolved = Case(
        When(status=IncidentStatus.RESOLVED, then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )
    return rows.annotate(resolved_last=resolved).order_by(
        "resolved_last", "-severity_rank", "first_version", "incident_id"
    )


def incidents_for_table(
    table: Table | int, page: int | str = 1, *, per_page: int = TABLE_PAGE
) -> Page:
    """One page of a table's incidents, unresolved first and worst first, each with its
    findings folded under it (`incident.folded`: open findings by severity, then version;
    the findings it had once none is open). `page.paginator.count` is the M of "N of M"."""
    table_id = table if isinstance(table, int) else table.pk
    rows = _worst_first(Incident.objects.filter(table_id=table_id)).select_related(
        "acknowledged_by"
    )
    found = Paginator(rows, per_page).get_page(page)
    fold(found.object_list)
    return found


def fold(incidents: Iterable[Incident]) -> None:
    """Set `incident.folded` on each: its findings as the lists show them (one query)."""
    incidents = list(incidents)
    by_incident: dict[int, list[Finding]] = {i.pk: [] for i in incidents}
    rows = Finding.objects.filter(incident_id__in=list(by_incident)).select_related(
        "acknowledged_by"
    )
    for finding in rows.order_by("-version", "kind", "id"):
        by_incident[finding.incident_id].append(finding)
    for incident in incidents:
        members = by_incident[incident.pk]
        open_ones = [f for f in members if f.status == Finding.Status.OPEN]
        shown = open_ones or members
        shown.sort(key=lambda f: (-_rank(f.severity), -f.version, f.kind))
        incident.folded = shown


def _rank(severity: str) -> int:
    return SEVERITY_RANK.get(severity, 0)


def findings_of_incidents(pks: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """Each incident's findings as the contract gives them (`{"kind", "version"}`, in version
    order): its open ones, or the ones it had once none is open."""
    pks = list(pks)
    members: dict[int, list[tuple[str, int, str]]] = {pk: [] for pk in pks}
    rows = Finding.objects.filter(incident_id__in=pks).order_by("version", "kind", "id")
    for incident_id, kind, version, status in rows.values_list(
        "incident_id", "kind", "version", "status"
    ):
        members[incident_id].append((kind, version, status))
    out = {}
    for pk, found in members.items():
        open_ones = [f for f in found if f[2] == Finding.Status.OPEN]
        out[pk] = [{"kind": k, "version": v} for k, v, _ in open_ones or found]
    return out


def shown_damage(damage: Any) -> dict[str, Any]:
    """The stored damage with every path as shown (credentials left out)."""
    if not isinstance(damage, dict):
        return {}
    files = damage.get("files")
    if isinstance(files, list):
        damage = {**damage, "files": [shown_path(str(p)) for p in files]}
    return damage


def incident_row(incident: Incident) -> dict[str, Any]:
    """One incident as the declared list's `.values()` row (the API's one shape)."""
    row = {}
    for name in INCIDENT_FIELDS:
        if name == "acknowledged_by__username":
            user = incident.acknowledged_by
            row[name] = user.get_username() if user is not None else None
        else:
            row[name] = getattr(incident, name)
    return row


def acknowledge_incident(incident: Incident, user: Any) -> bool:
    """Acknowledge the incident and its open findings for `user` (callers check that the
    user may: `access.may_acknowledge`)."""
    return incident.acknowledge(user)


def worst_open_incidents(table_ids: Iterable[int]) -> dict[int, Incident]:
    """Per table, its worst incident not resolved (severity, then first version, then id):
    the overview's "why" column. Tables without one are left out."""
    rows = Incident.objects.filter(table_id__in=list(table_ids)).exclude(
        status=IncidentStatus.RESOLVED
    )
    worst: dict[int, Incident] = {}
    for incident in rows.order_by("table_id", "-severity_rank", "first_version", "incident_id"):
        worst.setdefault(incident.table_id, incident)
    return worst
