"""Security headers for the dashboard pages.

Log strings are rendered on these pages; autoescaping keeps them inert, and the
Content-Security-Policy is the second wall: no inline script or style can run even if a string
ever reached the page unescaped.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def content_security_policy(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        policy = getattr(settings, "FRONTEND_CSP", "")
        exempt = tuple(getattr(settings, "FRONTEND_CSP_EXEMPT_PREFIXES", ()))
        if policy and not request.path.startswith(exempt):
            response.headers.setdefault("Content-Security-Policy", policy)
        return response

    return middleware
