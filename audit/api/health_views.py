"""Table health sub-resources of a table: health, health history, changes and version diff.

A mixin of `TableViewSet`, so they share its router, permissions and table lookup.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from audit.api.exceptions import BadRequest, readable_log
from audit.api.renderers import ORJSONRenderer
from audit.api.serializers import AsciiIntegerField
from audit.api.throttles import ExpensiveRateThrottle, LogReadThrottle
from audit.core.numbers import INT64_MAX
from audit.models import Table
from audit.reads import cache
from audit.reads.declared import routes
from audit.reads.health import health_history, table_changes, table_diff, table_health

ERROR = OpenApiResponse(response=OpenApiTypes.OBJECT, description='`{"error": "<message>"}`')
JSON = OpenApiResponse(response=OpenApiTypes.OBJECT)


class HealthQuery(serializers.Serializer):
    version = AsciiIntegerField(required=False, min_value=0, max_value=INT64_MAX)


class DiffQuery(serializers.Serializer):
    # `from` is a Python keyword: the fields are renamed in `validate`.
    from_ = AsciiIntegerField(min_value=0, max_value=INT64_MAX)
    to = AsciiIntegerField(min_value=0, max_value=INT64_MAX)

    def to_internal_value(self, data):
        data = {"from_": data.get("from"), "to": data.get("to")}
        return super().to_internal_value(data)

    def validate(self, attrs):
        if attrs["from_"] >= attrs["to"]:
            raise serializers.ValidationError("'from' must be lower than 'to'")
        return attrs


class HistoryQuery(serializers.Serializer):
    max_points = AsciiIntegerField(
        required=False, min_value=2, max_value=5000, default=routes.HISTORY_POINTS
    )


def _parse(serializer: serializers.Serializer) -> dict[str, Any]:
    if not serializer.is_valid():
        errors = serializer.errors
        first = next(iter(errors.values()))
        text = first[0] if isinstance(first, list) and first else str(first)
        raise BadRequest(str(text).replace("from_", "from"), detail=errors)
    return serializer.validated_data


def _in_range(table: Table, version: int, name: str) -> None:
    last = table.last_seen_version
    if last is None or version > last:
        raise BadRequest(f"{name} {version} is not stored (the latest stored version is {last})")


def _sub_resource(
    description: str,
    errors: dict[int, OpenApiResponse] | None = None,
    parameters: list[OpenApiParameter] | None = None,
    **action_kwargs: Any,
):
    """A JSON sub-resource of a table (`GET /api/tables/{id}/<name>/`), unpaginated."""
    schema = extend_schema(
        parameters=parameters, responses={200: JSON, **(errors or {})}, description=description
    )
    route = action(detail=True, filterset_class=None, pagination_class=None, **action_kwargs)
    return lambda method: schema(route(method))


class TableHealthActions:
    """Mixed into TableViewSet (which provides `table()`)."""

    @_sub_resource(
        "Health of a version, from the log alone: files, sizes, small files, "
        "partitions, tombstones, checkpoint, log, deletion vectors, recommendations. With "
        "`version` (a past version, read from the log) throttled per user.",
        {400: ERROR, 409: ERROR},
        [OpenApiParameter("version", OpenApiTypes.INT64, description="default latest")],
        throttle_classes=[LogReadThrottle],
    )
    def health(self, request, pk=None):
        table = self.table()
        version = _parse(HealthQuery(data=request.query_params)).get("version")
        if version is not None:
            _in_range(table, version, "version")
        # The stored health changes only when new commits are stored: its JSON is cached as
        # bytes under the table's stored version.
        with readable_log():
            body = cache.cached_json(
                lambda: cache.generation(
                    routes.read("tables/{id}/health/"), table
                ),  # a query: asked when caching only
                str(version),
                lambda: ORJSONRenderer().render(table_health(table, version)),
                settings.AUDIT_API_LIST_CACHE_SECONDS,
            )
        return HttpResponse(body, content_type="application/json")

    @_sub_resource(
        "num_files, total_bytes and small_files per version (stored as the tail "
        "ingests; thinned to max_points).",
        {400: ERROR},
        [OpenApiParameter("max_points", OpenApiTypes.INT, description="2..5000")],
        url_path="health/history",
    )
    def health_history(self, request, pk=None):
        table = self.table()
        points = _parse(HistoryQuery(data=request.query_params))["max_points"]
        # Points are stored with the commits: exact until the stored version moves.
        body = cache.cached_json(
            cache.generation(routes.read("tables/{id}/health/history/"), table),
            str(points),
            lambda: ORJSONRenderer().render(
                {"table": table.id, "points": health_history(table, points)}
            ),
            settings.AUDIT_API_LIST_CACHE_SECONDS,
        )
        return HttpResponse(body, content_type="application/json")

    @_sub_resource(
        "Every version that changed the schema, protocol, properties or "
        "partitioning: version, timestamp, kind, before, after, summary (and findings: ids of "
        "concurrent_metadata_change findings at that version)."
    )
    def changes(self, request, pk=None):
        table = self.table()
        # Changes are stored with the commits, their findings move the findings generation.
        body = cache.cached_json(
            cache.generation(routes.read("tables/{id}/changes/"), table),
            "",
            lambda: ORJSONRenderer().render({"table": table.id, "changes": table_changes(table)}),
            settings.AUDIT_API_LIST_CACHE_SECONDS,
        )
        return HttpResponse(body, content_type="application/json")

    @_sub_resource(
        "Files added/removed, rows, schema and property changes and the commits "
        "between two versions (read from the log: throttled per user).",
        {400: ERROR, 409: ERROR},
        [
            OpenApiParameter("from", OpenApiTypes.INT64, required=True),
            OpenApiParameter("to", OpenApiTypes.INT64, required=True),
        ],
        throttle_classes=[ExpensiveRateThrottle],
    )
    def diff(self, request, pk=None):
        table = self.table()
        params = _parse(DiffQuery(data=request.query_params))
        _in_range(table, params["to"], "to")
        with readable_log():
            return Response(table_diff(table, params["from_"], params["to"]))
