"""A lean answer for cached hot reads, ahead of sessions, CSRF, routing and DRF.

A cached API read spent most of its server CPU outside the view: the middleware stack, URL
resolution, DRF's request wrapping, content negotiation and the ORM's compilation of the key
query. This middleware (placed right after the security middlewares in settings.MIDDLEWARE)
answers only what is already cached, and only when the DRF path would answer the same:

- the request is a `GET` with `Authorization: Token <key>`, checked by the same
  `CachedTokenAuthentication` (a valid key of an active user; 10 s in-process memory);
- the path is the route of a declared read that is cached (`audit.reads.routes.routes`: the routes
  come from the declarations, as the router's do), and none of them is throttled in the form
  served here (whole-history timelines and a past version's health are throttled: they go to
  DRF);
- the user passes the read's gate (`visible_table_or_404` for a table's read, as the views;
  else the view answers the 404), and the key of a list of several tables holds the user's
  project set (the same `access.scope_of` the views put in it), so no body crosses projects;
- the body is in the cache under the same generation and request key that the DRF view
  computes (`cache.generation` of the same declaration), so the bytes are those the view
  would return.

Anything else (no or a bad token, a session, a miss, caches off, other paths or methods) goes
down the normal stack unchanged, whose view fills the cache. The response carries the same
status, body and headers (`Allow` as DRF sets it; the outer middlewares add the rest).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import APIException

from audit.api.throttles import is_full_zoom
from audit.reads import cache
from audit.reads.declared import routes
from audit.reads.visible import ID, KEY, visible_table_or_404
from audit.trust import access
from audit.trust.tokens import CachedTokenAuthentication

# The routes of the cached declared reads (audit/reads/declared/routes.py), as the router's.
_ROUTES = [(read.pattern(), read) for read in routes.READS if read.cached]
_auth = CachedTokenAuthentication()
_JSON_RANGES = {"*/*", "application/*", "application/json"}  # what ORJSONRenderer matches
# A read whose throttle counts some of its requests: those are left to DRF.
_THROTTLED: dict[str, Callable[[HttpRequest], bool]] = {
    "timeline": lambda request: (
        not settings.AUDIT_API_TIMELINE_CACHE_SECONDS or is_full_zoom(request.GET)
    ),
}


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
    for pattern, read in _ROUTES:
        match = pattern.match(path)
        if match is not None:
            if read.name in _THROTTLED and _THROTTLED[read.name](request):
                return None
            try:
                return _answer(request, user, read, match.groups())
            except Http404:
                return None  # the view answers the 404
    return None


def _answer(request: HttpRequest, user, read: routes.Read, ids: tuple[str, ...]):
    """A declared read's cached body for this reader (Http404 outside its gate)."""
    wanted = read.request_key(request.GET, request.build_absolute_uri())
    if wanted is None:
        return None
    if read.scope == routes.PROJECTS:
        table_id = cache.table_param(request) if read.list is routes.FINDINGS else None
        if table_id is not None:  # one table's list: the same for everyone who sees it
            visible_table_or_404(request, table_id, columns=ID, user=user)
            scope = ""
        else:
            scope = access.scope_of(access.projects(request, user))  # as the view's key
        generation = cache.generation(read, table_id=table_id, scope=scope)
    elif read.depends == (cache.FINDINGS_LISTED,):  # a table's body keyed on its findings
        table_id = visible_table_or_404(request, ids[0], columns=ID, user=user)
        generation = cache.generation(read, table_id=table_id)
    else:
        table = visible_table_or_404(request, ids[0], columns=KEY, user=user)
        generation = cache.generation(read, table)
    body = cache.cached_only(generation, wanted)
    if body is None:
        return None
    if read.depends == (cache.TABLES_LISTED,):
        body = cache.with_seconds(body)
    return body, read.allow


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
