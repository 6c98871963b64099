"""The pages a reader meets when something is not there, not theirs or broken, and the
favicon (frontend/quietlog.py keeps a client's 403 and 404 out of the log's tracebacks).

The 403 and 404 pages keep the dashboard's navigation and say why; under /api/ the same
errors answer JSON, as the API's own do (audit/api/exceptions.py). A 404 names no table: a
table of another project answers exactly as a table that does not exist.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import path, re_path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from audit.api.urls import not_found as api_not_found
from audit.core.errors import one_line

API_PREFIX = "/api/"

# Reasons of our own PermissionDenied (require_admin, alerting's _managed, ...) are sentences
# written for the reader; Django's bare PermissionDenied() has none.
DEFAULT_FORBIDDEN = "your role in this table's project does not allow it"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    reason = one_line(exception, empty=DEFAULT_FORBIDDEN) if exception else DEFAULT_FORBIDDEN
    if _is_api(request):
        return JsonResponse({"error": reason, "detail": None}, status=403)
    context = {"code": 403, "title": "Not allowed", "reason": reason}
    return render(request, "error.html", context, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form posted without its CSRF token (expired page, another site): Django's reason is
    for developers; the reader is told what to do."""
    context = {
        "code": 403,
        "title": "Form expired",
        "reason": "this form was sent without a valid security token (the page was open too "
        "long, or the form came from another site): reload the page and send it again",
    }
    return render(request, "error.html", context, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"error": "no such API endpoint", "detail": None}, status=404)
    context = {
        "code": 404,
        "title": "Not found",
        "reason": "nothing is at this address, or it belongs to a project you are not a member of",
        "path": request.path,
    }
    return render(request, "error.html", context, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """No database, session or context processor: whatever broke may be one of them."""
    if _is_api(request):
        return JsonResponse({"error": "internal server error", "detail": None}, status=500)
    return HttpResponse(loader.get_template("500.html").render(), status=500)


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """A liveness answer without the database, and the run id scripts/run.sh gave this server
    (AUDIT_RUN_ID): the script announces its URL only when the id it set comes back."""
    return JsonResponse({"ok": True, "run": settings.AUDIT_RUN_ID})


@cache
def _favicon() -> bytes:
    with open(finders.find("frontend/favicon.svg"), "rb") as f:
        return f.read()


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask /favicon.ico of every page whatever the page links: the same SVG."""
    return HttpResponse(_favicon(), content_type="image/svg+xml")


# Served after every page (config/urls.py includes this module last).
urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("healthz", healthz, name="healthz"),
    # Whatever else is under /api/ (after the alerting app's /api/alerts/): a JSON 404.
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
]
