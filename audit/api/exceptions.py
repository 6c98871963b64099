"""Every API error is JSON: `{"error": "<one line a user can act on>", "detail": ...}`.

`detail` carries DRF's structured detail (per-field messages for a bad filter or body) or null.
DeltaAuditError (the core's one error type) is a 400 with its message; anything unexpected is
logged and answered with a JSON 500 rather than Django's HTML page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from audit.core.errors import DeltaAuditError, one_line

log = logging.getLogger(__name__)


class _WithDetail(exceptions.APIException):
    """An error with a one-line message and optional structured detail (the body's `detail`)."""

    def __init__(self, message: str, detail: Any = None):
        super().__init__(message)
        self.extra = detail


class BadRequest(_WithDetail):
    """A 400 with a one-line message and optional structured detail."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "bad request"
    default_code = "bad_request"


class TableLogUnreadable(exceptions.APIException):
    """The table is registered but its log cannot be read now (moved, deleted, corrupt)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the table's log cannot be read"
    default_code = "table_log_unreadable"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "payload_too_large"


class Conflict(_WithDetail):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflict"
    default_code = "conflict"


@contextmanager
def readable_log() -> Iterator[None]:
    """Turn a DeltaAuditError raised while reading a registered table's log into a 409."""
    try:
        yield
    except DeltaAuditError as err:
        raise TableLogUnreadable(f"the table's log cannot be read: {err}") from None


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DeltaAuditError):
        exc = BadRequest(one_line(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(one_line(exc, empty="not found"))
    elif isinstance(exc, RequestDataTooBig):
        from audit.trust.limits import limit_text

        exc = PayloadTooLarge(f"request body too large ({limit_text()})")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        # Not an APIException: a bug. Answer in JSON; the traceback goes to the log.
        log.exception("unhandled API error", exc_info=exc)
        return Response(
            {"error": "internal server error", "detail": None},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    response.data = {"error": _message(exc), "detail": _detail(exc)}
    return response


def _message(exc: Exception) -> str:
    if isinstance(exc, exceptions.ValidationError):
        return "invalid request: " + _first_problem(exc.detail)
    detail = getattr(exc, "detail", None)
    if isinstance(detail, str):
        return one_line(detail, empty="")
    return one_line(str(detail), empty="") if detail else exc.__class__.__name__


def _detail(exc: Exception) -> Any:
    if hasattr(exc, "extra"):
        return exc.extra
    if isinstance(exc, exceptions.ValidationError):
        return exc.detail
    return None


def _first_problem(detail: Any, field: str | None = None) -> str:
    """`min_version: Enter a whole number.` from DRF's nested detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            prefix = key if field is None or key == "non_field_errors" else f"{field}.{key}"
            return _first_problem(value, None if key == "non_field_errors" else prefix)
        return "invalid input"
    if isinstance(detail, list):
        return _first_problem(detail[0], field) if detail else "invalid input"
    text = one_line(str(detail), empty="")
    return f"{field}: {text}" if field else text
