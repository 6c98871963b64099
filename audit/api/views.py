"""The REST API: one router, read-only viewsets with @action sub-resources.

Permissions (permissions.py, audit/trust/access.py): anonymous requests are refused everywhere
(401); a user reads the tables of their projects (any other table answers 404); members of a
table's project acknowledge / re-open its findings; owners of a project (and administrators)
register tables into it (POST /api/tables/) and remove its tables (DELETE /api/tables/{id}/).
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.api import serializers as s
from audit.api.exceptions import BadRequest, Conflict, readable_log
from audit.api.health_views import TableHealthActions
from audit.api.incidents import TableIncidentActions
from audit.api.pagination import CommitCursorPagination, FindingCursorPagination, TablePagination
from audit.api.permissions import ProjectRoles, TableRoutes
from audit.api.renderers import ORJSONRenderer
from audit.api.schema import list_parameters
from audit.api.table_rows import table_rows
from audit.api.throttles import ExpensiveRateThrottle, FullZoomTimelineThrottle
from audit.core.conflicts.matrix import conflict_matrix, normalize_isolation_level
from audit.core.data.keys import valid_key_columns
from audit.core.explain import explain_conflict
from audit.core.jsonsafe import json_safe
from audit.ingest.tables import register_table
from audit.models import DEFAULT_PROJECT, Finding, Project
from audit.reads import cache, queries, visible
from audit.reads.analysis import table_analysis, table_history
from audit.reads.declared import lists, routes
from audit.tail.orphan_scans import orphan_report
from audit.trust import access
from audit.trust.limits import limit_text
from audit.trust.paths import UriNotAllowed, check_allowed

ERROR_RESPONSE = OpenApiResponse(
    response=OpenApiTypes.OBJECT, description='`{"error": "<message>", "detail": ...}`'
)
COMMON_ERRORS = {400: ERROR_RESPONSE, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE}
THROTTLED = {
    429: OpenApiResponse(
        response=OpenApiTypes.OBJECT,
        description="Too many expensive requests from this user or token "
        "(AUDIT_API_EXPENSIVE_RATE); retry after the `Retry-After` header's seconds.",
    )
}
TOO_LARGE = {
    413: OpenApiResponse(
        response=OpenApiTypes.OBJECT,
        description="The request body is over the limit (DATA_UPLOAD_MAX_MEMORY_SIZE, "
        "2.5 MiB by default; AUDIT_MAX_BODY_BYTES).",
    )
}
DETAIL_ERRORS = {**COMMON_ERRORS, 404: ERROR_RESPONSE}
VERSION_PARAMETER = OpenApiParameter(
    "version", OpenApiTypes.INT64, OpenApiParameter.PATH, description="commit version"
)
# The declared reads these views answer (audit/reads/declared/routes.py).
LIST_TABLES, LIST_FINDINGS = routes.read("tables/"), routes.read("findings/")
LIST_COMMITS = routes.read("tables/{id}/commits/")
COMMIT_DETAIL = routes.read("tables/{id}/commits/{version}/")
ID_PATTERN = routes.ID  # ids and versions fit int64; longer ones are 404s, not overflows


def _expensive_analysis(serializer: type, description: str, **action_kwargs: Any):
    """A throttled analysis sub-resource of a table (409 when its log cannot be read)."""
    schema = extend_schema(
        responses={200: serializer, 409: ERROR_RESPONSE, **THROTTLED}, description=description
    )
    route = action(
        detail=True,
        filterset_class=None,
        serializer_class=serializer,
        throttle_classes=[ExpensiveRateThrottle],
        **action_kwargs,
    )
    return lambda method: schema(route(method))


def _refuse_as_outside_the_roots(uri: str) -> NoReturn:
    """Refuse `uri` exactly as a URI under no allowed root is refused (the same 400, byte for
    byte): for a table registered in a project the user does not see, whose existence is not
    told. A table is registered once; its owners can add the user to its project instead."""
    check_allowed(uri, roots=[])  # raises UriNotAllowed: no root lets anything in
    raise UriNotAllowed("table URI refused")  # not reached


@extend_schema(responses=DETAIL_ERRORS)
class TableViewSet(
    TableRoutes,
    TableHealthActions,
    TableIncidentActions,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Registered tables, with their commits, timeline and analyses as sub-resources. Every
    route under /api/tables/{id}/ passes the one gate first (TableRoutes)."""

    permission_classes = [ProjectRoles]
    pagination_class = TablePagination
    filterset_class = None
    lookup_value_regex = ID_PATTERN

    def get_queryset(self):
        return visible.visible_tables(self.request)

    @extend_schema(parameters=list_parameters(lists.TABLES))
    def list(self, request, *args, **kwargs):
        def page() -> bytes:
            context = {**self.get_serializer_context(), "seconds_since": cache.marked_since}
            shape = lists.default_shape(request.query_params)
            if shape is not None:  # a list of a common shape: its SQL compiled once
                size = self.paginator.page_size
                narrow = lists.narrowing(*shape)
                rows = lists.default_tables_page.page(ids, size, shape, narrow)
                if rows is not None:  # the whole list: DRF's body for one page
                    data = table_rows(rows, context)
                    body = {"count": len(rows), "next": None, "previous": None, "results": data}
                    return ORJSONRenderer().render(body)
            # Rows of values, not model instances: the serializer's fields read them the
            # same way (table_rows; tests/app/test_table_rows_equal_drf.py).
            ordering = (request.query_params.get("ordering") or "").strip()
            try:
                listed = lists.table_rows(ids, ordering, request.query_params)
            except lists.BadOrdering as err:
                raise BadRequest(str(err)) from None
            data = table_rows(self.paginate_queryset(listed), context)
            return ORJSONRenderer().render(self.get_paginated_response(data).data)

        ids = access.projects(request)  # the key's scope and the page's rows
        body = cache.tables_list_body(request, LIST_TABLES, page, access.scope_of(ids))
        return HttpResponse(body, content_type="application/json")

    def retrieve(self, request, *args, **kwargs):
        # The gate passed (TableRoutes): the table exists and the reader sees it.
        return Response(s.TableDetailSerializer(lists.table_detail(self.kwargs["pk"])).data)

    def get_serializer_class(self):
        if self.action == "list":
            return s.TableSerializer
        if self.action == "create":
            return s.TableCreateSerializer
        return s.TableDetailSerializer

    def commit_rows(self, table_id: int):
        """The rows of the table's commits the filters select (a 400 for a bad filter), by
        the declared list's SQL (tests/app/api/list_reference.py holds the FilterSet + ORM
        reference)."""
        return lists.COMMITS.rows(self.request.query_params, table_id=table_id)

    @extend_schema(
        request=s.TableCreateSerializer,
        responses={201: s.TableCreatedSerializer, 409: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Register a table into a project (its owners and administrators; "
        "others get 403, and 404 for a project they are not a member of). The URI must lie "
        "under AUDIT_ALLOWED_ROOTS and hold a readable Delta log; its first tail is queued.",
    )
    def create(self, request, *args, **kwargs):
        body = s.TableCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        uri, name = body.validated_data["uri"], body.validated_data.get("name") or None
        project = self._target_project(body.validated_data.get("project") or DEFAULT_PROJECT)
        normalised = check_allowed(uri)  # DeltaAuditError -> 400
        existing = queries.table_id_by_uri(normalised)
        if existing is not None:
            if not visible.sees_table(request, existing):
                _refuse_as_outside_the_roots(uri)
            raise Conflict(f"table already registered as id {existing}", {"id": existing})
        keys = body.validated_data.get("key_columns")
        # Opens the log (and checks the key's names): DeltaAuditError -> 400.
        table, _ = register_table(normalised, name=name, key_columns=keys, project=project)
        access.move_table(table.pk, project)
        from workers.tasks import enqueue_tail  # the Celery app only once a table is added

        queued = enqueue_tail(table.id)
        data = s.TableCreatedSerializer(lists.table_detail(table.pk)).data
        data["tail_queued"] = queued
        return Response(data, status=status.HTTP_201_CREATED)

    def _target_project(self, name: str) -> Project:
        """The project a table is registered into: 404 unless the user sees it (staff see
        every project, and may name a new one), 403 unless they own it."""
        user = self.request.user
        found = access.named_project(user, name, create=True)
        if found is None:
            raise NotFound("no such project")
        if not access.may_manage(user, found):
            raise PermissionDenied(
                "only owners of the project and administrators may register tables into it"
            )
        return found

    @extend_schema(
        request=s.TableSettingsSerializer,
        responses={200: s.TableDetailSerializer, **COMMON_ERRORS},
        description="Change a table's settings (owners of its project and administrators): "
        "its key columns. The next full audit of the table looks for duplicate keys.",
    )
    def partial_update(self, request, *args, **kwargs):
        table = self.table()  # 404 outside the user's projects
        if not access.may_manage(request.user, table.project_id):
            raise PermissionDenied(
                "only owners of the table's project and administrators may change its settings"
            )
        body = s.TableSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        table.set_key_columns(valid_key_columns(body.validated_data["key_columns"]))
        return Response(s.TableDetailSerializer(lists.table_detail(table.pk)).data)

    @extend_schema(
        description="Remove a table and everything stored about it (owners of its project "
        "and administrators)."
    )
    def destroy(self, request, *args, **kwargs):
        table = self.table()
        if not access.may_manage(request.user, table.project_id):
            raise PermissionDenied(
                "only owners of the table's project and administrators may remove it"
            )
        self.perform_destroy(table)  # the gate's row: DestroyModelMixin's delete
        return Response(status=status.HTTP_204_NO_CONTENT)

    # ------------------------------------------------------------------- commits

    @extend_schema(
        parameters=list_parameters(lists.COMMITS),
        responses={200: s.CommitListSerializer(many=True)},
        description="The table's commits, newest first (`order=asc` for oldest first), "
        "cursor-paginated; follow `next`.",
    )
    @action(
        detail=True,
        pagination_class=CommitCursorPagination,
        filterset_class=None,
        serializer_class=s.CommitListSerializer,
    )
    def commits(self, request, pk=None):
        table = self.table()

        def page() -> bytes:
            rows = self.paginate_queryset(self.commit_rows(table.id))
            # Rows are already in their JSON shape: no per-field serializer work here.
            return ORJSONRenderer().render(self.get_paginated_response(rows).data)

        # Stored commits never change: a page is exact until the table's stored version moves.
        body = cache.cached_json(
            cache.generation(LIST_COMMITS, table),
            request.build_absolute_uri(),
            page,
            settings.AUDIT_API_LIST_CACHE_SECONDS,
        )
        return HttpResponse(body, content_type="application/json")

    @extend_schema(
        parameters=[VERSION_PARAMETER],
        responses={200: s.CommitDetailSerializer},
        description="One commit: facts (recorded or derived), predicate (raw and parsed), "
        "partitions, re-check verdicts per concurrent version, and the findings it is part of.",
    )
    @action(
        detail=True,
        url_path=rf"commits/(?P<version>{ID_PATTERN})",
        serializer_class=s.CommitDetailSerializer,
        filterset_class=None,
    )
    def commit_detail(self, request, pk=None, version=None):
        def detail() -> bytes:
            table = self.table()
            commit = queries.commit_at(table.id, int(version))
            if commit is None:
                raise Http404("No Commit matches the given query.")
            findings = queries.findings_involving(
                table.id, commit.version, fields=tuple(s.FindingRefSerializer.Meta.fields)
            )
            data = s.CommitDetailSerializer(commit, context={"findings": findings}).data
            return ORJSONRenderer().render(data)

        # "Findings involving" scans the table's findings (json_each on SQLite): worth a cache.
        body = cache.findings_body(request, COMMIT_DETAIL, detail, int(self.kwargs["pk"]))
        return HttpResponse(body, content_type="application/json")

    # ------------------------------------------------------------------- timeline

    @extend_schema(
        parameters=[s.TimelineQuerySerializer],
        responses={200: s.TimelineSerializer, **THROTTLED},
        description="Commit intervals of a version window for charts: `rows` when the window "
        "holds at most max_points commits, else `buckets` aggregated in SQL. read_version null "
        "means unknown. `findings` are the open findings of the window. Whole-history windows (no "
        "from/to, or wider than AUDIT_API_TIMELINE_CHEAP_SPAN versions) are throttled per user.",
    )
    @action(
        detail=True,
        filterset_class=None,
        serializer_class=s.TimelineSerializer,
        throttle_classes=[FullZoomTimelineThrottle],
    )
    def timeline(self, request, pk=None):
        window = routes.timeline_params(request.query_params)
        if window is None:  # anything but plain ints in bounds: DRF validates and words it
            query = s.TimelineQuerySerializer(data=request.query_params)
            query.is_valid(raise_exception=True)
            params = query.validated_data
            window = params.get("from_version"), params.get("to_version"), params["max_points"]
        # The columns the timeline's key reads, by the fast path's own query.
        table = self.table_key()
        body = queries.timeline_window(table, *window)
        # Already JSON (cached as bytes): no second rendering.
        return HttpResponse(body, content_type="application/json")

    # ------------------------------------------------------------------- analyses

    def _analysis(self) -> dict[str, Any]:
        table = self.table()
        with readable_log():
            return table_analysis(table)

    @_expensive_analysis(
        s.HotspotsSerializer, "Partitions and operation pairs where concurrent commits overlap."
    )
    def hotspots(self, request, pk=None):
        analysis = self._analysis()
        return Response(_pick(analysis, "hotspots"))

    @extend_schema(
        responses={200: s.OrphansSerializer},
        description="Orphan data files from the periodic, bounded, read-only listing of the "
        "table's data folders: the latest scan, counts and bytes over time, and per orphan hour "
        "the commits (and concurrent commits) of the same hour.",
    )
    @action(detail=True, filterset_class=None, serializer_class=s.OrphansSerializer)
    def orphans(self, request, pk=None):
        return Response(orphan_report(self.table()))

    @extend_schema(
        responses={200: s.WritersSerializer, 409: ERROR_RESPONSE},
        description="Contention per writer (engineInfo, user, job/notebook/cluster, txn appIds): "
        "commits, read-version distance distribution, recorded retries, concurrent commits per "
        "writer pair, and idempotent txn versions that repeat or go backwards.",
    )
    @action(
        detail=True,
        filterset_class=None,
        serializer_class=s.WritersSerializer,
        throttle_classes=[ExpensiveRateThrottle],
    )
    def writers(self, request, pk=None):
        return Response(_pick(self._analysis(), "writers"))

    @_expensive_analysis(
        s.IsolationSettingsSerializer,
        "Isolation settings with the conflict matrix resolved for this table and "
        "the observed concurrent pairs per cell.",
        url_path="settings",
    )
    def isolation(self, request, pk=None):
        return Response(_pick(self._analysis(), "isolation_settings"))

    @_expensive_analysis(
        s.RecommendationsSerializer,
        "Partitioning recommendations from the predicates of concurrent commits.",
    )
    def recommendations(self, request, pk=None):
        return Response(_pick(self._analysis(), "recommendations"))


def _pick(analysis: dict[str, Any], key: str) -> dict[str, Any]:
    return {
        "table": analysis["table"],
        "version": analysis["version"],
        "computed_at": analysis["computed_at"],
        key: analysis[key],
    }


@extend_schema(responses=DETAIL_ERRORS)
class FindingViewSet(viewsets.ReadOnlyModelViewSet):
    """Findings of the user's projects' tables, newest first; members of a table's project
    acknowledge / re-open them."""

    filterset_class = None
    pagination_class = FindingCursorPagination
    lookup_value_regex = ID_PATTERN

    permission_classes = [ProjectRoles]

    def check_permissions(self, request):
        # Another project's finding is a 404 on every route under /api/findings/{id}/, before
        # any role check or method dispatch (as a table's, above).
        visible.check_finding(request, self.kwargs.get("pk"))
        super().check_permissions(request)

    def get_queryset(self):
        return queries.findings_with_acknowledger(access.projects(self.request))

    def get_serializer_class(self):
        return s.FindingSerializer if self.action == "list" else s.FindingDetailSerializer

    @extend_schema(parameters=list_parameters(lists.FINDINGS))
    def list(self, request, *args, **kwargs):
        # `?table=` naming another project's table: 404, as for a table that does not exist
        # (read as the filter reads it, so both list paths answer alike).
        named = lists.FINDINGS.clean(request.query_params).get("table")
        if named is not None:
            visible.visible_table_or_404(request, named, columns=visible.ID)
        table_id = cache.table_param(request)
        projects = access.projects(request)  # once: the check, the rows, the key

        def page() -> bytes:
            # Only when the page is not cached; `?table=` checked above needs no other bound.
            checked = table_id is not None and table_id == named
            tables = None if checked else visible.table_ids_in(projects)
            rows = self.paginate_queryset(self.finding_rows(tables))
            # The same JSON as FindingSerializer, built from plain rows (no model instances).
            data = self.get_paginated_response([s.finding_list_row(row) for row in rows]).data
            return ORJSONRenderer().render(data)

        # One table's list is the same for everyone who sees the table (checked above); a list
        # of several tables depends on the reader's projects.
        scope = "" if table_id is not None else access.scope_of(projects)
        body = cache.findings_body(request, LIST_FINDINGS, page, table_id, scope)
        return HttpResponse(body, content_type="application/json")

    def finding_rows(self, tables: list[int] | None):
        """The rows of the findings of the tables `tables` (ids; None: every table) the
        filters select (a 400 for a bad filter), by the declared list's SQL
        (tests/app/api/list_reference.py holds the FilterSet + ORM reference)."""
        return lists.FINDINGS.rows(self.request.query_params, visible=tables)

    @extend_schema(
        request=None,
        responses={200: s.FindingDetailSerializer},
        description="Acknowledge the finding (members and owners of its table's project, and "
        "administrators; viewers get 403, other users 404). Idempotent: the first "
        "acknowledgement is kept. The finding stays open (the audit resolves it) but no longer "
        "needs attention.",
    )
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None):
        finding = self._changeable()
        queries.acknowledge(finding, request.user)
        return Response(s.FindingDetailSerializer(finding).data)

    @extend_schema(
        request=None,
        responses={200: s.FindingDetailSerializer},
        description="Undo an acknowledgement (members and owners of its table's project, and "
        "administrators). Whether a finding is open or resolved is decided by the audit, not "
        "by this action.",
    )
    @action(detail=True, methods=["post"])
    def reopen(self, request, pk=None):
        finding = self._changeable()
        queries.unacknowledge(finding)
        return Response(s.FindingDetailSerializer(finding).data)

    def _changeable(self) -> Finding:
        finding = self.get_object()  # 404 for another project's finding
        if not access.may_acknowledge(self.request.user, finding.table):
            raise PermissionDenied("only members of the table's project may do this")
        return finding


class ConflictMatrixView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[s.ConflictMatrixQuerySerializer],
        responses={200: s.ConflictMatrixSerializer, **COMMON_ERRORS},
        description="The reference page's conflict matrix for one configuration, as "
        "`manage.py conflict_matrix --json` prints it.",
    )
    def get(self, request):
        query = s.ConflictMatrixQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        try:
            level = normalize_isolation_level(params["isolation_level"])
        except ValueError as err:
            raise BadRequest(str(err), {"isolation_level": [str(err)]}) from None
        cells = conflict_matrix(
            level, params["row_level_concurrency"], params["deletion_vectors"], params["zorder"]
        )
        return Response({"cells": [cell.as_dict() for cell in cells]})


class ExplainView(APIView):
    permission_classes = [IsAuthenticated]
    throttle_classes = [ExpensiveRateThrottle]

    @extend_schema(
        request=s.ExplainRequestSerializer,
        responses={
            200: s.ExplainResponseSerializer,
            409: ERROR_RESPONSE,
            **COMMON_ERRORS,
            **TOO_LARGE,
            **THROTTLED,
        },
        description="Explain a conflict exception text; with `table`, locate the conflicting "
        "commit in that table's history and tailor the fixes to it. Limits: "
        f"{limit_text()}; longer texts are refused (400, or 413 for the whole body). "
        "Throttled per user or token (AUDIT_API_EXPENSIVE_RATE).",
    )
    def post(self, request):
        body = s.ExplainRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        history = None
        table_id = body.validated_data.get("table")
        if table_id is not None:
            try:
                table = visible.visible_table_or_404(request, table_id)
            except Http404:
                raise BadRequest(
                    f"no table with id {table_id}", {"table": ["unknown table"]}
                ) from None
            with readable_log():
                history = table_history(table)
        return Response(json_safe(explain_conflict(body.validated_data["text"], history)))
