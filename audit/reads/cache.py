"""Every cache key of the reads, the cached JSON bodies and the cached page fragments.

A cached answer is stored under a *generation*: a key part read from the database (one cheap
query) or from the row at hand, that changes whenever the answer could. So a hit is what a
fresh computation would answer, and entries are never invalidated by hand: acknowledging,
resolving or raising a finding moves its table's `findings_generation` in the same transaction,
a new stored version moves `last_seen_version`, a new data scan moves the health body's key
(`latest_scan_id`: the health shows the scan's readable range).

- JSON bodies (`cached_json`, `cached_only`: the API's views and its fast path). The findings
  lists and the tables list also hold the full request URL (every filter, cursor and page).
  Lists of several tables (the tables list, the findings list without `?table=`) hold only the
  tables of the reader's projects: their keys hold the reader's project set
  (`audit.trust.access.scope_of`), so a body is never served to a reader of other projects. A
  body of one table is the same for everyone who may see the table (the views and the fast
  path check that first), so no project set is in its key.
- The tables list shows `lag.seconds_since_last_commit`, which changes with the clock: the
  cached body holds a mark with the commit time in its place, replaced by the seconds on every
  request.
- Page fragments (`fragment`: the dashboard). The user-independent part of a findings, table
  or overview page (its `content` block: no CSRF token, no user name, no messages) is cached
  as text. Findings pages show every table's name and URI and their findings: the generation
  is a digest of every table's id, name, URI, project and findings generation. A table page
  shows its table row (every column goes into the key) and whether its health is stored.
  Pages listing several tables hold the reader's project set in their `variant`. Cached for
  at most `AUDIT_PAGE_CACHE_SECONDS` (0: never, every page renders).
- The analyses and health documents computed from a table's log are cached per stored
  version (`analysis_cache_key`, `health_cache_key`): the log below it never changes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest
from django.urls import get_script_prefix
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from django.utils.translation import get_language
from rest_framework.request import Request

from audit.models import OrphanScan, Table
from audit.reads.prepared import Prepared, fetch_sql

ANALYSIS_PREFIX = "audit:analysis:v2"  # v2: + "writers"
HEALTH_PREFIX = "audit:health:v1"


def table_key(table: Table) -> str:
    # The URI too: a table removed and registered again may get the same id (SQLite).
    return f"{table.id}:{hashlib.sha1(table.uri.encode()).hexdigest()[:12]}"


# --------------------------------------------------------------------------- JSON bodies


def cached_json(
    generation: str | Callable[[], str], request: str, compute: Callable[[], bytes], seconds: int
) -> bytes:
    """A response body cached as bytes under (what the data depends on, what was asked).

    `generation` must change whenever the answer could (e.g. the table's stored version), so a
    hit is what `compute()` would return now; `seconds` bounds how long an entry lives. A
    generation that costs a query is passed as a function: with the caches off it is not asked.
    """
    if not seconds:
        return compute()
    key = _json_key(generation if isinstance(generation, str) else generation(), request)
    body = cache.get(key)
    if body is None:
        body = compute()
        cache.set(key, body, seconds)
    return body


def cached_only(generation: str, request: str) -> bytes | None:
    """What `cached_json` holds for (generation, request), or None: never computes (the API's
    fast path answers hits only and leaves misses to the view that fills the cache)."""
    return cache.get(_json_key(generation, request))


def _json_key(generation: str, request: str) -> str:
    return f"audit:json:v1:{generation}:{hashlib.sha1(request.encode()).hexdigest()}"


# --------------------------------------------------------------------------- API generations

# What a declared read's cached body depends on (`audit.reads.declared.routes`), the parts of its
# generation: the table's stored version, its findings generation, its latest data scan; the
# findings of the tables read (one table's, or every table's); every listed table's shown
# columns (the read's `columns`).
STORED, FINDINGS_OF_TABLE, SCAN = "stored", "findings", "scan"
FINDINGS_LISTED, TABLES_LISTED = "findings_listed", "tables_listed"


def generation(
    read: Any, table: Table | None = None, table_id: int | None = None, scope: str = ""
) -> str:
    """The generation of a declared read's cached bodies (`audit.reads.declared.Read`), from
    what it declares it depends on: the view and the fast path both ask here. `table`: the row
    of a table's read (id, uri, last_seen_version, findings_generation: `table_key_row`);
    `table_id`: the table of a findings body (None: every table's); `scope`: the reader's
    project set, for a body listing several tables."""
    depends = read.depends
    if depends == (FINDINGS_LISTED,):
        return f"findings:{scope}:{findings_list_generation(table_id)}"
    if depends == (TABLES_LISTED,):
        return f"tables:{scope}:{tables_list_generation((*read.columns, 'project_id'))}"
    assert table is not None, read
    return table_generation(read.name, depends, table)


def table_generation(name: str, depends: tuple[str, ...], table: Table) -> str:
    """The generation of the cached bodies of a table's read `name` that depend on `depends`
    (STORED first)."""
    assert depends and depends[0] == STORED, name
    parts = [name, table_key(table), str(table.last_seen_version)]
    for part in depends[1:]:
        if part == FINDINGS_OF_TABLE:
            parts.append(str(table.findings_generation))
        else:
            assert part == SCAN, name
            parts.append(str(latest_scan_id(table.id)))
    return ":".join(parts)


def latest_scan_id(table_id: int) -> int | None:
    """The latest successful data scan of a table (`audit.reads.health.latest_time_travel`
    reads the same row); None before the first."""
    found = _latest_scan(table_id)
    return found[0].id if found else None


# Compiled once per process: a read of the health asks it once or twice (key and body).
_latest_scan = Prepared(lambda pk: OrphanScan.newest_first(pk).only("id", "time_travel")[:1])


def latest_time_travel(table_id: int) -> dict[str, Any] | None:
    """`time_travel` of the latest successful data scan (the row `latest_scan_id` names)."""
    found = _latest_scan(table_id)
    return found[0].time_travel if found else None


# --------------------------------------------------------------------------- database parts


def findings_list_generation(table_id: int | None) -> str:
    """A cache-key part that changes whenever a findings list could (cached bodies).

    Filtered to one table: that table's findings generation (moved with every change of its
    Finding rows), identity and stored version. Otherwise every table's: their count, newest
    id and creation time name the set of tables (a table is only ever added after the newest
    one, or removed), and the sum of their generations, each only ever growing, moves with any
    change. One aggregate over Table either way, not a scan of the findings. Plain SQL
    compiled once per process (these run on every cached read: the ORM's compilation of them
    cost more than the rest of the answer); values as the driver returns them, which only
    ever go into a key.
    """
    if table_id is not None:
        row = table_key_columns(table_id)
        if row is None:
            return f"table:{table_id}:none"
        found, uri, created, generation, last_seen = row
        created = _key_text(created)
        return f"table:{table_key(Table.of_columns(id=found, uri=uri))}:{created}:{generation}:{last_seen}"
    ((n, top, created, generation),) = fetch_sql("all_tables", _all_tables_sql, [])
    return f"all:{n}:{top}:{_key_text(created)}:{generation}"


def _key_text(value: Any) -> str:
    # A time as the driver returns it, without the space cache backends refuse in keys.
    return str(value).replace(" ", "T")


def tables_list_generation(columns: tuple[str, ...]) -> str:
    """A cache-key part for lists of tables: a digest of every table's `columns` (what the
    list shows, health__* included) and findings generation (its open counts)."""

    def sql() -> str:
        rows = Table.objects.order_by("id").values_list("id", "findings_generation", *columns)
        query, params = rows.query.sql_with_params()
        assert not params, "only parameterless queries are compiled once"
        return query

    rows = fetch_sql(("tables_list", columns), sql, [])
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def table_key_columns(table_id: int) -> tuple | None:
    """(id, uri, created_at, findings_generation, last_seen_version) of a table, None if gone:
    what the cache keys of its lists read, by one plain query."""
    rows = fetch_sql("one_table", _one_table_sql, [table_id])
    return rows[0] if rows else None


def table_key_row(table_id: int) -> Table | None:
    """The columns the commits and timeline keys read, as a Table, by the same plain query:
    compiling it through the ORM cost more than the rest of a cached answer."""
    row = table_key_columns(table_id)
    if row is None:
        return None
    found, uri, _, generation, last_seen = row
    return Table.of_columns(
        id=found, uri=uri, last_seen_version=last_seen, findings_generation=generation
    )


def _one_table_sql() -> str:
    columns = _columns("id", "uri", "created_at", "findings_generation", "last_seen_version")
    return f"SELECT {', '.join(columns)} FROM {Table._meta.db_table} WHERE {columns[0]} = %s"


def _all_tables_sql() -> str:
    pk, created, generation = _columns("id", "created_at", "findings_generation")
    return (
        f"SELECT COUNT({pk}), MAX({pk}), MAX({created}), SUM({generation}) "
        f"FROM {Table._meta.db_table}"
    )


def _columns(*fields: str) -> list[str]:
    quote = connection.ops.quote_name
    return [quote(Table._meta.get_field(field).column) for field in fields]


# --------------------------------------------------------------------------- the API's lists

# A NUL cannot reach a table's name or URI (DRF refuses it), so no stored text renders as this.
_MARK = "\x00since\x00"
_MARKED = re.compile(rb'"\\u0000since\\u0000([^"]+)"')


def table_param(request: Request | HttpRequest) -> int | None:
    """The `?table=` of a findings list when it is one plain id (else every table's key)."""
    raw = request.GET.get("table", "")  # a DRF Request or a plain HttpRequest
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None


def findings_body(
    request: Request,
    read: Any,
    compute: Callable[[], bytes],
    table_id: int | None,
    scope: str = "",
) -> bytes:
    """A response showing findings of one table (or of any the reader sees, `table_id` None)
    as JSON bytes, cached until a finding it could show changes: `GET /api/findings/?...` and
    a commit's detail (its commit never changes once stored; its "findings involving" do).
    `scope`: the reader's project set, for a body that depends on it."""
    return _cached(request, compute, lambda: generation(read, table_id=table_id, scope=scope))


def seconds_since(when: datetime) -> float:
    """`lag.seconds_since_last_commit`: how long ago `when` was, now (the serializer's, and
    what a cached body's marks become)."""
    return round((timezone.now() - when).total_seconds(), 3)


def marked_since(when: datetime) -> str:
    """The serializer's `seconds_since` for a cached body: the time, to fill in later."""
    return _MARK + when.isoformat()


def tables_list_body(
    request: Request, read: Any, compute: Callable[[], bytes], scope: str
) -> bytes:
    """`GET /api/tables/?...` as JSON bytes. `compute` renders the list with `marked_since`
    in the serializer's context; the marks become seconds since, as of this request."""
    return with_seconds(_cached(request, compute, lambda: generation(read, scope=scope)))


def with_seconds(body: bytes) -> bytes:
    """A cached tables list with its marks replaced by the seconds since, as of now."""
    return _MARKED.sub(_seconds, body)


def _cached(request: Request, compute: Callable[[], bytes], generation: Callable[[], str]) -> bytes:
    """`cached_json` under the generation `generation()` names; it is only asked (a query) when
    the list caches are on."""
    seconds = settings.AUDIT_API_LIST_CACHE_SECONDS
    if not seconds:  # caches off: not even the key query
        return compute()
    return cached_json(generation(), request.build_absolute_uri(), compute, seconds)


def _seconds(match: re.Match) -> bytes:
    when = datetime.fromisoformat(match.group(1).decode())
    return orjson.dumps(seconds_since(when))


# --------------------------------------------------------------------------- pages

# Places filled in per request. Forms and the API refuse NUL, but an ingestion error's text
# comes from a log: the marks also carry a tag derived from the secret key, so no stored text
# can forge one (and a mark's time that does not parse shows as timesince shows junk: "").
_TAG = hashlib.sha256(f"page-marks:{settings.SECRET_KEY}".encode()).hexdigest()[:16]
REGISTER_MARK = f"\x00{_TAG}:register\x00"
_SINCE = re.compile(f"\x00{_TAG}:since:([0-9T:+.-]+)\x00")


def fragment(
    generation: Callable[[], str],
    request: HttpRequest,
    render: Callable[[], str],
    variant: str = "",
) -> SafeString:
    """The HTML `render()` gives, cached under (`generation()`, the request's full path,
    `variant`: what else of the reader the content shows)."""
    seconds = settings.AUDIT_PAGE_CACHE_SECONDS
    if not seconds:  # off: not even the generation query
        return mark_safe(render())  # noqa: S308 - rendered by the template engine (escaped)
    path = hashlib.sha1(f"{variant}:{request.get_full_path()}".encode()).hexdigest()
    key = f"audit:page:v1:{generation()}:{path}"
    html = cache.get(key)
    if html is None:
        html = str(render())
        cache.set(key, html, seconds)
    return SafeString(html)


def page_generation(page: Any) -> str:
    """What a page listing tables depends on (`audit.reads.pages.PageRead`): what it shows of
    every table (`page.columns`; every table's id and findings generation are always in it)."""
    return f"{page.name}:" + tables_list_generation(page.columns)


def table_page_generation(table: Table, has_health: bool) -> str:
    """What a table page depends on: every column of its row (its findings generation
    included) and whether its health is stored."""
    values = [getattr(table, f.attname) for f in Table._meta.concrete_fields]
    digest = hashlib.sha1(repr((values, has_health)).encode()).hexdigest()
    return f"table:{table.pk}:{digest}"


# Rendered rows of a page, per process, under everything each row shows (`row_fragments`).
_ROWS: dict[tuple, SafeString] = {}
ROW_FRAGMENTS = 4096  # ~2 KB each: a fleet page of 100 rows many times over


def row_fragments(
    template: str, rows: list[tuple[tuple, Any]], render: Callable[[Any], str]
) -> list[SafeString]:
    """`render(item)` for each (shown values, item) of `rows`, remembered under the values,
    `template`, the language, the time zone and the URL prefix: a cold page renders again only the rows whose
    table changed (a page's template loop was most of its CPU). Never stale, even with the page
    caches off: the key is all the row shows (its times as marks, filled in per request)."""
    context = (template, get_language(), timezone.get_current_timezone_name(), get_script_prefix())
    out = []
    for values, item in rows:
        key = (context, values)
        found = _ROWS.get(key)
        if found is None:
            if len(_ROWS) >= ROW_FRAGMENTS:
                _ROWS.clear()  # a bound, not a policy: rebuilding a page's rows is cheap
            found = _ROWS[key] = SafeString(render(item))
        out.append(found)
    return out


def since_mark(value: object) -> str:
    """The place of `value|timesince` in a cached page ("" where timesince gives "")."""
    return f"\x00{_TAG}:since:{value.isoformat()}\x00" if isinstance(value, datetime) else ""


def with_times(html: str) -> SafeString:
    """A cached page with its `since_mark`s replaced by the time since, as of now."""
    return SafeString(_SINCE.sub(_since, html))


def _since(match: re.Match) -> str:
    try:
        return timesince(datetime.fromisoformat(match[1]))
    except (ValueError, TypeError):
        return ""


# --------------------------------------------------------------------------- computed from logs


def analysis_cache_key(table: Table) -> str:
    """A table's analyses (`audit.reads.analysis`), per stored version."""
    return f"{ANALYSIS_PREFIX}:{table_key(table)}:{table.last_seen_version}"


def health_cache_key(table: Table, *parts: Any) -> str:
    """A health document or diff computed from the log (`audit.reads.health`), per
    version(s) in `parts`."""
    return ":".join([HEALTH_PREFIX, table_key(table), *map(str, parts)])
