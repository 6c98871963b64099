"""Cached bodies of the findings lists and the tables list (aim: p95 < 50 ms).

Both are cached as JSON bytes by `audit.reads.timeline.cached_json` under a generation read from the
database on every request (`audit.reads.queries.*_generation`, one cheap query), so a hit is what a
fresh computation would answer: acknowledging, resolving or raising a finding moves its table's
`findings_generation` in the same transaction. The key also holds the full request URL (every
filter, cursor and page). Lists of several tables (the tables list, the findings list without
`?table=`) hold only the tables of the reader's projects: their keys hold the reader's project
set (`audit.trust.access.scope_key`), so a body is never served to a reader of other projects. A
body of one table is the same for everyone who may see the table (the views and the fast path
check that first), so no project set is in its key.

The tables list shows `lag.seconds_since_last_commit`, which changes with the clock: the cached
body holds a mark with the commit time in its place, replaced by the seconds on every request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import orjson
from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request

from audit.api import serializers as s
from audit.models import Table
from audit.reads import queries
from audit.reads.timeline import cached_json, table_key

# A NUL cannot reach a table's name or URI (DRF refuses it), so no stored text renders as this.
_MARK = "\x00since\x00"
_MARKED = re.compile(rb'"\\u0000since\\u0000([^"]+)"')

# What the tables list shows of a table: its serializer's model fields, the backfill and health
# columns its computed fields read (lag reads model fields, open counts the findings generation).
_COMPUTED = {
    "version",
    "lag",
    "storage",
    "open_findings",
    "attention_findings",
    "backfill",
    "health",
}
TABLE_LIST_COLUMNS = (
    *(f for f in s.TableSerializer.Meta.fields if f not in _COMPUTED),
    "backfill_target_version", "backfill_done", "backfill_started_at", "backfill_rate",
    "health__version", "health__num_files", "health__small_files",
    "health__small_file_ratio", "health__vacuumable_bytes", "health__checkpoint_lag",
)  # fmt: skip


def table_param(request: Request | HttpRequest) -> int | None:
    """The `?table=` of a findings list when it is one plain id (else every table's key)."""
    raw = request.GET.get("table", "")  # a DRF Request or a plain HttpRequest
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None


def findings_body(
    request: Request, compute: Callable[[], bytes], table_id: int | None, scope: str = ""
) -> bytes:
    """A response showing findings of one table (or of any the reader sees, `table_id` None)
    as JSON bytes, cached until a finding it could show changes: `GET /api/findings/?...` and
    a commit's detail (its commit never changes once stored; its "findings involving" do).
    `scope`: the reader's project set, for a body that depends on it."""
    return _cached(request, compute, lambda: findings_generation(table_id, scope))


def findings_generation(table_id: int | None, scope: str = "") -> str:
    """The generation of `findings_body` (the view and the fast path share it)."""
    return f"findings:{scope}:{queries.findings_list_generation(table_id)}"


def commits_generation(table: Table) -> str:
    """The generation of a table's commit pages: stored commits never change, so a page is
    exact until the table's stored version moves (needs id, uri, last_seen_version)."""
    return f"commits:{table_key(table)}:{table.last_seen_version}"


def health_generation(table: Table) -> str:
    """A table's stored health documents: kept with the commits (`audit.health.store`)."""
    return f"health:{table_key(table)}:{table.last_seen_version}"


def health_history_generation(table: Table) -> str:
    """A table's health points: stored with the commits."""
    return f"health_history:{table_key(table)}:{table.last_seen_version}"


def changes_generation(table: Table) -> str:
    """A table's changes (stored with the commits) with their findings (needs
    findings_generation too)."""
    return f"changes:{table_key(table)}:{table.last_seen_version}:{table.findings_generation}"


def tables_generation(scope: str) -> str:
    """The generation of `tables_list_body` for readers of the project set `scope`."""
    return f"tables:{scope}:{queries.tables_list_generation((*TABLE_LIST_COLUMNS, 'project_id'))}"


def marked_since(when: datetime) -> str:
    """The serializer's `seconds_since` for a cached body: the time, to fill in later."""
    return _MARK + when.isoformat()


def tables_list_body(request: Request, compute: Callable[[], bytes], scope: str) -> bytes:
    """`GET /api/tables/?...` as JSON bytes. `compute` renders the list with `marked_since`
    in the serializer's context; the marks become seconds since, as of this request."""
    return with_seconds(_cached(request, compute, lambda: tables_generation(scope)))


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
    return orjson.dumps(s.seconds_since(when))
