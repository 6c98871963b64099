"""Request size limits: oversized bodies answer 413 with a message a user can act on; and
the limits of what a log can make an audit decode (deletion vectors, `dv_limits`).

Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE by raising RequestDataTooBig wherever
the body is first read; in a DRF view that surfaced as a 500 and on a form as a bare 400. This
middleware answers before any of that from the declared Content-Length, and turns the
exception (a chunked body with no length) into the same 413 when a view meets it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from audit.core.data.dv import DvLimits
from audit.core.incidents.status import StatusRules

# A pasted exception text (API `text`, the explain page's textarea): a longer paste is a log
# dump, and the exception sits near its top.
MAX_EXCEPTION_CHARS = 1_000_000


def max_body_bytes() -> int:
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def limit_text() -> str:
    """The limits in words, as the API schema and the explain page state them."""
    return (
        f"request bodies up to {_size(max_body_bytes())}; pasted exception texts up to "
        f"{MAX_EXCEPTION_CHARS:,} characters"
    )


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB ({n:,} bytes)" if n else "no limit"


def too_large(request: HttpRequest, length: int | None) -> HttpResponse:
    limit = max_body_bytes()
    told = f"{length:,} bytes" if length is not None else "the request body"
    message = f"request body too large: {told}, the limit is {limit:,} bytes ({limit_text()})"
    if request.path.startswith("/api/"):
        detail = {"limit_bytes": limit, "max_exception_chars": MAX_EXCEPTION_CHARS}
        return JsonResponse({"error": message, "detail": detail}, status=413)
    page = render_to_string(
        "frontend/too_large.html", {"message": message, "back": request.path}, request=None
    )
    return HttpResponse(page, status=413)


def request_size_limit(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        limit = max_body_bytes()
        length = _content_length(request)
        if limit and length is not None and length > limit:
            return too_large(request, length)
        return get_response(request)

    def process_exception(request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):
            return too_large(request, _content_length(request))
        return None

    middleware.process_exception = process_exception  # type: ignore[attr-defined]
    return middleware


def _content_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def dv_limits() -> DvLimits:
    """What one audit pass may spend on deletion vectors, from the AUDIT_DV_* settings: a log
    chooses every vector's size, offset and positions, so these bound what it can make the
    audit allocate (a negative value counts as 0: nothing of that kind is decoded)."""
    return DvLimits(
        vector_bytes=max(int(settings.AUDIT_DV_MAX_VECTOR_BYTES), 0),
        positions=max(int(settings.AUDIT_DV_MAX_POSITIONS), 0),
        pass_bytes=max(int(settings.AUDIT_DV_MAX_PASS_BYTES), 0),
    )


def incident_rules() -> StatusRules:
    """The incident status periods from the AUDIT_INCIDENT_* settings, for every path that
    groups incidents (the tail, the one-shot command, Spark through the tail's options): the
    same settings give the same statuses. Here beside dv_limits because the one-shot command
    runs without Django's apps (no models may be imported). A negative setting counts as 0."""
    return StatusRules(
        quiet_versions=max(int(settings.AUDIT_INCIDENT_QUIET_VERSIONS), 0),
        quiet_ms=max(int(settings.AUDIT_INCIDENT_QUIET_SECONDS), 0) * 1000,
        resolve_ms=max(int(settings.AUDIT_INCIDENT_RESOLVE_SECONDS), 0) * 1000,
    )
