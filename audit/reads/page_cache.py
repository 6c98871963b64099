"""Cached page fragments of the dashboard (aim: every page under 50 ms p95).

A findings page or a table page spent ~6-7 ms of CPU building the same HTML for every reader:
the ORM queries, the filter form's widgets and the rows. The user-independent part of such a
page (its `content` block: no CSRF token, no user name, no messages) is cached here as text
under a generation that one query reads from the database on every request, like the API's
list cache (`audit.reads.list_cache`): a hit is what a fresh rendering would give.

- Findings pages show every table's name and URI (the rows' table column, the filter's
  dropdown) and their findings: the generation is a digest of every table's id, name, URI and
  findings generation (moved in the transaction of every change to its Finding rows), so a new
  finding, an acknowledgement or a rename shows on the very next load.
- A table page shows its table row (every column goes into the key), its findings (the row's
  findings generation) and whether its health is stored.
Pages listing several tables (the overview, the findings pages) show only the reader's
projects' tables: their `variant` holds the reader's project set (`audit.trust.access.scope_key`), so
a fragment is never served to a reader of other projects; a table page is the same for every
reader allowed to see it (the view checks that first).
The key also holds the full path (every filter, sort and page). Cached for at most
`AUDIT_PAGE_CACHE_SECONDS` (0: never, every page renders).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from audit.models import Table
from audit.reads import queries

# Places filled in per request. Forms and the API refuse NUL, but an ingestion error's text
# comes from a log: the marks also carry a tag derived from the secret key, so no stored text
# can forge one (and a mark's time that does not parse shows as timesince shows junk: "").
_TAG = hashlib.sha256(f"page-marks:{settings.SECRET_KEY}".encode()).hexdigest()[:16]
REGISTER_MARK = f"\x00{_TAG}:register\x00"
_SINCE = re.compile(f"\x00{_TAG}:since:([0-9T:+.-]+)\x00")

# What the overview shows of a table (its id and findings generation are always in the key:
# the open counts and the totals).
OVERVIEW_COLUMNS = (
    "name", "uri", "status", "last_error", "risk", "last_seen_version",
    "latest_version_in_log", "first_available_version", "last_commit_at", "last_tail_at",
    "backfill_target_version", "backfill_done", "health__id", "health__small_files",
    "health__vacuumable_bytes", "health__checkpoint_lag",
)  # fmt: skip


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


def findings_generation() -> str:
    """What a findings page depends on: every table's identity, name and findings."""
    return "findings:" + queries.tables_list_generation(("name", "uri", "project_id"))


def table_generation(table: Table, has_health: bool) -> str:
    """What a table page depends on: every column of its row (its findings generation
    included) and whether its health is stored."""
    values = [getattr(table, f.attname) for f in Table._meta.concrete_fields]
    digest = hashlib.sha1(repr((values, has_health)).encode()).hexdigest()
    return f"table:{table.pk}:{digest}"


def overview_generation() -> str:
    """What the overview depends on: every table's shown columns, health and findings."""
    return "overview:" + queries.tables_list_generation((*OVERVIEW_COLUMNS, "project_id"))


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
