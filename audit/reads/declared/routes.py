"""Every read the API answers, declared once: its route, who may read it, what its cached
body depends on and the request part of its cache key. From a declaration come the cache key
(`key`, here: view and fast path compute the same one), the fast path's route (`pattern`,
`audit.api.fast_path`), the access gate (`scope`: `audit.api.gates`) and, for a list, its
filters, SQL and OpenAPI parameters (`audit.reads.declared.lists`).

`tests/app/test_endpoint_recipe.py` holds the router against these: every API route has a
declaration, its schema and its gate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from audit.reads.cache import FINDINGS_LISTED, FINDINGS_OF_TABLE, SCAN, STORED, TABLES_LISTED
from audit.reads.declared.lists import (
    COMMITS,
    FINDINGS,
    INCIDENTS,
    TABLE_LIST_COLUMNS,
    TABLES,
    ListRead,
)
from audit.reads.timeline import window as timeline

# Who may read it: the readers of the table the URL names (any other user gets the 404 of
# no such table); the reader's own projects (a list of several tables: the key holds the
# reader's project set); the readers of the finding the URL names; any signed-in user.
TABLE, PROJECTS, FINDING, USER = "table", "projects", "finding", "user"
INCIDENT = "incident"  # the readers of the incident the URL names
# What a cached body depends on: `audit.reads.cache`'s STORED, FINDINGS_OF_TABLE, SCAN,
# FINDINGS_LISTED, TABLES_LISTED (the parts of its generation, `cache.generation`).
URL = "url"  # the request part of a key: the full URL (every filter, cursor and page)
ID = r"[0-9]{1,18}"  # ids and versions fit int64; longer ones are 404s, not overflows
ROUTE_ONLY = "GET, HEAD, OPTIONS"


def _plain(raw: str) -> int | None:
    """A parameter written as a plain decimal int64, else None."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or (raw[0] == "0" and raw != "0"):
        return None
    value = int(raw)
    return value if value <= 2**63 - 1 else None


def one_int(params: Mapping, name: str, default: int | None = None) -> tuple[bool, int | None]:
    """(understood, value) of an optional plain-int parameter given at most once."""
    if name not in params:
        return True, default
    values = params.getlist(name)
    value = _plain(values[0]) if len(values) == 1 else None
    return value is not None, value


@dataclass(frozen=True)
class Read:
    """`name`: the view's action (the router's) or view; `route`: its path under /api/, with
    `{id}` and `{version}`; `scope`: who may read it (above); `depends`: what its cached body
    depends on (empty: not cached); `key(params)`: the request part of its cache key from the
    query string, or URL (None: a request the view would not cache under it, or one DRF might
    read differently: the fast path leaves it to DRF); `allow`: DRF's `Allow` header."""

    name: str
    route: str
    scope: str
    depends: tuple[str, ...] = ()
    key: Callable[[Mapping], str | None] | str = URL
    allow: str = ROUTE_ONLY
    list: ListRead | None = None
    columns: tuple[str, ...] = ()  # TABLES_LISTED: what the list shows of each table

    @property
    def cached(self) -> bool:
        return bool(self.depends)

    def pattern(self) -> re.Pattern:
        """The route as the fast path matches `request.path_info` (ids as the router's)."""
        path = re.escape(f"/api/{self.route}")
        path = path.replace(re.escape("{id}"), f"({ID})").replace(re.escape("{version}"), f"({ID})")
        return re.compile(path + r"\Z")

    def request_key(self, params: Mapping, url: str) -> str | None:
        """The request part of the key (None: not one the view would have cached)."""
        return url if self.key == URL else self.key(params)


def _health_key(params: Mapping) -> str | None:
    # A past version's health is throttled (DRF counts it); the latest's key is "None".
    return None if "version" in params else "None"


HISTORY_POINTS = 400  # the health history's default max_points
TIMELINE_POINTS = timeline.POINTS  # the timeline's default max_points


def _history_key(params: Mapping) -> str | None:
    understood, points = one_int(params, "max_points", HISTORY_POINTS)
    return str(points) if understood else None


TIMELINE_MAX_POINTS = (2, 10_000)  # TimelineQuerySerializer's max_points bounds


def timeline_params(params: Mapping) -> tuple[int | None, int | None, int] | None:
    """(from_version, to_version, max_points) of a timeline request whose parameters are each
    a plain int given at most once, within the serializer's bounds and in order: what
    `TimelineQuerySerializer` validates them to, without its ~0.1 ms of fields built per
    request. None for anything else (the serializer validates it and words the error)."""
    parts = [one_int(params, "from_version"), one_int(params, "to_version")]
    parts.append(one_int(params, "max_points", TIMELINE_POINTS))
    if not all(understood for understood, _ in parts):
        return None
    (_, lo), (_, hi), (_, points) = parts
    low, high = TIMELINE_MAX_POINTS
    if not low <= points <= high or (lo is not None and hi is not None and lo > hi):
        return None
    return lo, hi, points


def _timeline_key(params: Mapping) -> str | None:
    parts = [one_int(params, "from_version"), one_int(params, "to_version")]
    parts.append(one_int(params, "max_points", TIMELINE_POINTS))
    if not all(understood for understood, _ in parts) or None in (parts[0][1], parts[1][1]):
        return None  # anything DRF might read differently: let DRF validate it
    return timeline.timeline_key(*(value for _, value in parts))


_TABLE_ROUTES = (
    Read("retrieve", "tables/{id}/", TABLE, allow="GET, PATCH, DELETE, HEAD, OPTIONS"),
    Read("commits", "tables/{id}/commits/", TABLE, (STORED,), list=COMMITS),
    Read("commit_detail", "tables/{id}/commits/{version}/", TABLE, (FINDINGS_LISTED,)),
    Read("timeline", "tables/{id}/timeline/", TABLE, timeline.DEPENDS, _timeline_key),
    Read("health", "tables/{id}/health/", TABLE, (STORED, SCAN), _health_key),
    Read("health_history", "tables/{id}/health/history/", TABLE, (STORED,), _history_key),
    Read("changes", "tables/{id}/changes/", TABLE, (STORED, FINDINGS_OF_TABLE), lambda _: ""),
    Read("diff", "tables/{id}/diff/", TABLE),
    Read("hotspots", "tables/{id}/hotspots/", TABLE),
    Read("orphans", "tables/{id}/orphans/", TABLE),
    Read("writers", "tables/{id}/writers/", TABLE),
    Read("isolation", "tables/{id}/settings/", TABLE),
    Read("recommendations", "tables/{id}/recommendations/", TABLE),
    Read("incidents", "tables/{id}/incidents/", TABLE, list=INCIDENTS),
)
READS = (
    Read("list", "tables/", PROJECTS, (TABLES_LISTED,), allow="GET, POST, HEAD, OPTIONS",
         list=TABLES, columns=TABLE_LIST_COLUMNS),
    *_TABLE_ROUTES,
    Read("findings", "findings/", PROJECTS, (FINDINGS_LISTED,), list=FINDINGS),
    Read("finding", "findings/{id}/", FINDING),
    Read("acknowledge", "findings/{id}/acknowledge/", FINDING, allow="POST, OPTIONS"),
    Read("reopen", "findings/{id}/reopen/", FINDING, allow="POST, OPTIONS"),
    Read("incidents", "incidents/", PROJECTS, list=INCIDENTS),
    Read("incident", "incidents/{id}/", INCIDENT),
    Read("acknowledge", "incidents/{id}/acknowledge/", INCIDENT, allow="POST, OPTIONS"),
    Read("conflict-matrix", "conflict-matrix/", USER),
    Read("explain", "explain/", USER, allow="POST, OPTIONS"),
)  # fmt: skip
BY_ROUTE = {read.route: read for read in READS}


def read(route: str) -> Read:
    """The declaration of the read at `route` (a KeyError names an undeclared one)."""
    return BY_ROUTE[route]
