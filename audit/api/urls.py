"""REST API routes under /api/: one router plus the schema, docs and two plain views."""

from __future__ import annotations

from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, path, re_path, resolve
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.routers import APIRootView, DefaultRouter

from audit.api import incidents, views
from audit.api.renderers import ORJSONRenderer

router = DefaultRouter()
router.include_root_view = False
# No `.json` suffix routes: the API speaks JSON (or `?format=`), and half the actions did not
# take DRF's `format` argument (a suffixed URL answered 500). Unknown paths answer a JSON 404.
router.include_format_suffixes = False
router.register("tables", views.TableViewSet, basename="table")
router.register("findings", views.FindingViewSet, basename="finding")
router.register("incidents", incidents.IncidentViewSet, basename="incident")

AUTHENTICATED = [IsAuthenticated]


class ApiRoot(APIRootView):
    """Delta Audit's REST API: the audited tables with their commits, timelines, health,
    changes, diffs and writers; the findings; the conflict matrix; exception explanations.
    Authenticate with your session or an Authorization: Token header; the schema and its
    documentation are linked above."""

    # The one browsable page of the API: JSON to clients that ask for it (or for anything),
    # HTML to a browser (templates/rest_framework/api.html, the dashboard's look).
    renderer_classes = [ORJSONRenderer, BrowsableAPIRenderer]


# The root's links, by name: the router's collections, then the other entry points.
ROOT_LINKS = {
    "tables": "table-list",
    "findings": "finding-list",
    "incidents": "incident-list",
    "conflict-matrix": "conflict-matrix",
    "explain": "explain",
    "alerts": "alerting:api-root",
    "schema": "api-schema",
    "docs": "api-docs",
}


def not_found(request, rest: str = ""):
    """Unknown API paths answer JSON 404s (and still honour APPEND_SLASH)."""
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not not_found:  # a real endpoint: redirect
            query = request.META.get("QUERY_STRING")
            return HttpResponsePermanentRedirect(
                request.path + "/" + (f"?{query}" if query else "")
            )
    return JsonResponse({"error": "no such API endpoint", "detail": None}, status=404)


urlpatterns = [
    path("", ApiRoot.as_view(api_root_dict=ROOT_LINKS), name="api-root"),
    *router.urls,
    path("conflict-matrix/", views.ConflictMatrixView.as_view(), name="conflict-matrix"),
    path("explain/", views.ExplainView.as_view(), name="explain"),
    path(
        "schema/",
        SpectacularAPIView.as_view(permission_classes=AUTHENTICATED),
        name="api-schema",
    ),
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", permission_classes=AUTHENTICATED
        ),
        name="api-docs",
    ),
    path(
        "redoc/",
        SpectacularRedocView.as_view(url_name="api-schema", permission_classes=AUTHENTICATED),
        name="api-redoc",
    ),
    # Only below our own prefixes: other apps (alerting) route their own /api/... paths.
    re_path(
        r"^(?P<rest>(tables|findings|conflict-matrix|explain|schema|docs|redoc)(/.*)?)$", not_found
    ),
]
