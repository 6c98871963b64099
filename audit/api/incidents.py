"""Incidents on the API: `/api/incidents/` (the reader's projects' incidents, filtered,
cursor-paginated), `/api/incidents/{id}/`, `POST /api/incidents/{id}/acknowledge/` and
`/api/tables/{id}/incidents/` (a mixin of TableViewSet, behind its gate).

An incident's JSON carries the fields of `audit --json`'s `incidents` (`id` is the core's
16-hex id, stable across runs) plus `pk` (its row, the id in the URL), `table` and what the
app knows of it (acknowledgement, counts, when it was first and last seen). Every query is
in audit/reads/ (the declared list INCIDENTS, audit/reads/incidents.py).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from audit.api.pagination import OrderedCursorPagination
from audit.api.permissions import ProjectRoles
from audit.api.schema import list_parameters
from audit.api.serializers import _when
from audit.reads import incidents as reads
from audit.reads import visible
from audit.reads.declared import lists
from audit.trust import access

INCIDENT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="An incident: id, cause, headline, severity, status, first_version, "
    "last_version, findings [{kind, version}], damage {rows_wrong_now, files, partitions, "
    "exact, ...}, repair/inspect/prevent [{engine, code, does, does_not}], writer, "
    "operation, scope, quiet_since, resolved_because, explanation; pk, table, "
    "acknowledged, acknowledged_by, acknowledged_at, acknowledged_version, occurrences, "
    "finding_count, first_seen, last_seen.",
)
LIST_DESCRIPTION = (
    "Incidents (findings grouped by root cause), newest first (`order=asc` for oldest "
    "first), cursor-paginated; follow `next`."
)


class IncidentCursorPagination(OrderedCursorPagination):
    column = "id"
    page_size = 50


def incident_json(row: dict[str, Any], findings: list[dict[str, Any]]) -> dict[str, Any]:
    """A declared list row (lists.INCIDENT_FIELDS) as the API gives an incident."""
    acknowledged_at = row["acknowledged_at"]
    return {
        "pk": row["id"],
        "id": row["incident_id"],
        "table": row["table_id"],
        "cause": row["cause"],
        "headline": row["headline"],
        "severity": row["severity"],
        "status": row["status"],
        "first_version": row["first_version"],
        "last_version": row["last_version"],
        "findings": findings,
        "damage": reads.shown_damage(row["damage"]),
        "repair": row["repair"],
        "inspect": row["inspect"],
        "prevent": row["prevent"],
        "writer": row["writer"],
        "operation": row["operation"],
        "scope": row["scope"],
        "quiet_since": row["quiet_since"],
        "resolved_because": row["resolved_because"],
        "explanation": row["explanation"],
        "occurrences": row["occurrences"],
        "finding_count": row["finding_count"],
        "acknowledged": acknowledged_at is not None,
        "acknowledged_by": row["acknowledged_by__username"],
        "acknowledged_at": _when(acknowledged_at),
        "acknowledged_version": row["acknowledged_version"],
        "first_seen": _when(row["first_seen"]),
        "last_seen": _when(row["last_seen"]),
    }


def incidents_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = reads.findings_of_incidents(row["id"] for row in rows)
    return [incident_json(row, found[row["id"]]) for row in rows]


class IncidentViewSet(viewsets.GenericViewSet):
    """Incidents of the user's projects' tables; members of a table's project acknowledge
    them (and their findings)."""

    permission_classes = [ProjectRoles]
    pagination_class = IncidentCursorPagination
    filterset_class = None
    lookup_value_regex = r"[0-9]{1,18}"

    def check_permissions(self, request):
        # Another project's incident is a 404 on every route under /api/incidents/{id}/.
        reads.check_incident(request, self.kwargs.get("pk"))
        super().check_permissions(request)

    def get_queryset(self):
        return reads.visible_incidents(self.request)

    @extend_schema(
        parameters=list_parameters(lists.INCIDENTS),
        responses={200: INCIDENT},
        description=LIST_DESCRIPTION,
    )
    def list(self, request, *args, **kwargs):
        named = lists.INCIDENTS.clean(request.query_params).get("table")
        if named is not None:  # another project's table: the 404 of no such table
            visible.visible_table_or_404(request, named, columns=visible.ID)
        tables = visible.table_ids_in(access.projects(request))
        rows = self.paginate_queryset(lists.INCIDENTS.rows(request.query_params, visible=tables))
        return self.get_paginated_response(incidents_json(rows))

    @extend_schema(responses={200: INCIDENT})
    def retrieve(self, request, pk=None):
        incident = reads.incident_for_user_or_404(request, pk)
        return Response(_detail(incident))

    @extend_schema(
        request=None,
        responses={200: INCIDENT},
        description="Acknowledge the incident and every open finding of it (members and "
        "owners of its table's project, and administrators; viewers get 403, other users "
        "404). It stays open; an occurrence after the version acknowledged makes it "
        "`growing`.",
    )
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None):
        incident = reads.incident_for_user_or_404(request, pk)
        if not access.may_acknowledge(request.user, incident.table):
            raise PermissionDenied("only members of the table's project may do this")
        reads.acknowledge_incident(incident, request.user)
        return Response(_detail(reads.incident_for_user_or_404(request, pk)))


def _detail(incident) -> dict[str, Any]:
    row = reads.incident_row(incident)
    return incident_json(row, reads.findings_of_incidents([incident.pk])[incident.pk])


class TableIncidentActions:
    """`/api/tables/{id}/incidents/`: a mixin of TableViewSet (its gate runs first)."""

    @extend_schema(
        parameters=list_parameters(lists.INCIDENTS),
        responses={200: INCIDENT},
        description="The table's incidents. " + LIST_DESCRIPTION,
    )
    @action(detail=True, pagination_class=IncidentCursorPagination, filterset_class=None)
    def incidents(self, request, pk=None):
        table_id = int(self.kwargs["pk"])  # the gate (TableRoutes) passed: the reader sees it
        rows = lists.INCIDENTS.rows(request.query_params, visible=[table_id])
        rows = self.paginate_queryset(rows)
        return self.get_paginated_response(incidents_json(rows))
