"""A lean answer for cached hot reads, ahead of sessions, CSRF, routing and DRF.

A cached API read spent most of its server CPU outside the view: the middleware stack, URL
resolution, DRF's request wrapping, content negotiation and the ORM's compilation of the key
query. This middleware (placed right after the security middlewares in settings.MIDDLEWARE)
answers only what is already cached, and only when the DRF path would answer the same:

- the request is a `GET` with `Authorization: Token <key>`, checked by the same
  `CachedTokenAuthentication` (a valid key of an active user; 10 s in-process memory);
- the user sees the table of a per-table read (`audit.trust.access`, as the views check; else the
  view answers the 404), and the key of a list of several tables holds the user's project set
  (the same `access.scope_of` the views put in it), so no body crosses projects;
- the path is one of the hot reads below, and none of them is throttled in the form served
  here (whole-history timelines and a past version's health are throttled: they go to DRF);
- the body is in the cache under the same generation and request key that the DRF view
  computes (the same helpers), so the bytes are those the view would return.

Anything else (no or a bad token, a session, a miss, caches off, other paths or methods) goes
down the normal stack unchanged, whose view fills the cache. The response carries the same
status, body and headers (`Allow` as DRF sets it; the outer middlewares add the rest).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import APIException

from audit.api.authentication import CachedTokenAuthentication
from audit.api.health_views import HistoryQuery
from audit.api.serializers import TABLE_LIST_COLUMNS, TimelineQuerySerializer
from audit.api.throttles import is_full_zoom
from audit.core.numbers import INT64_MAX
from audit.models import Table
from audit.reads import cache
from audit.trust import access

# The routes of audit/api/urls.py under config/urls.py's "api/" (ids as views.ID_PATTERN).
_TABLES = re.compile(r"/api/tables/\Z")
_TABLE_SUB = re.compile(
    r"/api/tables/([0-9]{1,18})/(commits|timeline|health|health/history|changes)/\Z"
)
_COMMIT = re.compile(r"/api/tables/([0-9]{1,18})/commits/([0-9]{1,18})/\Z")
_FINDINGS = re.compile(r"/api/findings/\Z")
# What DRF's `Allow` header says for each route (the viewset's or action's methods).
_ALLOW_TABLES = "GET, POST, HEAD, OPTIONS"
_ALLOW_ACTION = "GET, HEAD, OPTIONS"
_auth = CachedTokenAuthentication()
_JSON_RANGES = {"*/*", "application/*", "application/json"}  # what ORJSONRenderer matches
# The defaults the views' query serializers fill in (part of the keys).
_TIMELINE_POINTS = TimelineQuerySerializer._declared_fields["max_points"].default
_HISTORY_POINTS = HistoryQuery._declared_fields["max_points"].default


def hot_reads(get_response: Callable[[HttpRequest], HttpResponse]):
    def middleware(request: HttpRequest) -> HttpResponse:
        if request.method == "GET" and request.path_info.startswith("/api/"):
            found = _cached_answer(request)
            if found is not None:
                body, allow = found
                response = HttpResponse(body, content_type="application/json")
                response["Allow"] = allow
                response["Content-Length"] = str(len(body))
                return response
        return get_response(request)

    return middleware


def _cached_answer(request: HttpRequest) -> tuple[bytes, str] | None:
    """(body, Allow) of a cached hot read this request may see, else None."""
    if not (settings.AUDIT_API_LIST_CACHE_SECONDS and settings.AUDIT_API_FAST_PATH):
        return None
    request.get_host()  # DisallowedHost (400) for a Host not in ALLOWED_HOSTS, as CommonMiddleware
    user = _token_user(request) if _accepts_json(request) else None
    if user is None:
        return None
    path = request.path_info
    if _FINDINGS.match(path):
        uri = request.build_absolute_uri()
        table_id = cache.table_param(request)
        if table_id is not None and not access.request_sees_table(request, user, table_id):
            return None
        scope = (
            "" if table_id is not None else access.scope_of(access.projects_of(request, user))
        )  # as the view's key
        generation = cache.findings_body_generation(table_id, scope)
        return _hit(cache.cached_only(generation, uri), _ALLOW_ACTION)
    if _TABLES.match(path):
        generation = cache.tables_body_generation(
            access.scope_of(access.projects_of(request, user)), TABLE_LIST_COLUMNS
        )
        body = cache.cached_only(generation, request.build_absolute_uri())
        return None if body is None else (cache.with_seconds(body), _ALLOW_TABLES)
    if match := _COMMIT.match(path):
        if not access.request_sees_table(request, user, int(match[1])):
            return None
        generation = cache.findings_body_generation(int(match[1]))
        return _hit(cache.cached_only(generation, request.build_absolute_uri()), _ALLOW_ACTION)
    if match := _TABLE_SUB.match(path):
        if not access.request_sees_table(request, user, int(match[1])):
            return None
        table = cache.table_key_row(int(match[1]))
        if table is None:
            return None
        return _table_sub_resource(request, table, match[2])
    return None


def _table_sub_resource(request: HttpRequest, table: Table, name: str) -> tuple[bytes, str] | None:
    """A table's cached commits page, timeline window, health, health history or changes:
    the request part of each key as its view builds it from the validated parameters."""
    if name == "commits":
        generation = cache.commits_generation(table)
        return _hit(cache.cached_only(generation, request.build_absolute_uri()), _ALLOW_ACTION)
    if name == "timeline":
        return _timeline(request, table)
    if name == "changes":
        return _hit(cache.cached_only(cache.changes_generation(table), ""), _ALLOW_ACTION)
    if name == "health" and "version" in request.GET:
        return None  # a past version's health is throttled: DRF counts it
    generation, param, default = (
        (cache.health_generation(table), "version", None)
        if name == "health"
        else (cache.health_history_generation(table), "max_points", _HISTORY_POINTS)
    )
    value = _plain_int(request, param) if param in request.GET else default
    if value is None and param in request.GET:
        return None
    return _hit(cache.cached_only(generation, str(value)), _ALLOW_ACTION)


def _timeline(request: HttpRequest, table: Table) -> tuple[bytes, str] | None:
    """A cached timeline window, never a throttled (whole-history) one."""
    if not settings.AUDIT_API_TIMELINE_CACHE_SECONDS or is_full_zoom(request.GET):
        return None
    lo, hi = _plain_int(request, "from_version"), _plain_int(request, "to_version")
    points = _plain_int(request, "max_points") if "max_points" in request.GET else _TIMELINE_POINTS
    if lo is None or hi is None or points is None:
        return None  # anything DRF might read differently: let DRF validate it
    # The request part of views.timeline's key (TimelineQuerySerializer's validated values);
    # only validated windows are ever cached under it.
    body = cache.cached_only(cache.timeline_generation(table), f"{lo}:{hi}:{points}")
    return _hit(body, _ALLOW_ACTION)


def _plain_int(request: HttpRequest, name: str) -> int | None:
    """A parameter written as a plain decimal int64 (one value), else None."""
    values = request.GET.getlist(name)
    if len(values) != 1:
        return None
    raw = values[0]
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or (raw[0] == "0" and raw != "0"):
        return None
    value = int(raw)
    return value if value <= INT64_MAX else None


def _accepts_json(request: HttpRequest) -> bool:
    """Whether DRF's content negotiation would pick the JSON renderer: no `?format=` and an
    Accept header that is absent or names JSON or a wildcard (else DRF answers 404 or 406)."""
    if "format" in request.GET:
        return False
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return True
    ranges = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return not ranges.isdisjoint(_JSON_RANGES)


def _hit(body: bytes | None, allow: str) -> tuple[bytes, str] | None:
    return None if body is None else (body, allow)


def _token_user(request: HttpRequest):
    """The active user of a valid token the request carries (as DRF would decide), else None."""
    auth = get_authorization_header(request).split()
    if len(auth) != 2 or auth[0].lower() != b"token":
        return None
    try:
        user, _ = _auth.authenticate_credentials(auth[1].decode())
    except (UnicodeError, APIException):
        return None
    return user if user and user.is_authenticated else None
