"""Dashboard pieces of table health: the version diff page (the health panel's config is
`table.health_config`, next to the page that embeds it); who changed the table."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from audit.core.errors import DeltaAuditError, one_line
from audit.core.numbers import log_int
from audit.models import Table
from audit.reads import cache, provenance
from audit.reads.health import table_diff, table_schemas
from audit.reads.visible import visible_table_or_404
from frontend.views.common import pretty
from frontend.views.table import health_config, table_header

__all__ = ["health_config", "table_diff_page", "table_schema_page", "table_writers_page"]


def _version(raw: str | None) -> int | None:
    # ASCII digits within 64 bits only: "①" passes str.isdigit() but not int().
    return log_int(raw) if raw is not None else None


@login_required
def table_diff_page(request: HttpRequest, table_id: int) -> HttpResponse:
    """/tables/<id>/diff/?from=A&to=B: what changed between two stored versions."""
    table = visible_table_or_404(request, table_id)
    a, b = _version(request.GET.get("from")), _version(request.GET.get("to"))
    error, diff, status = None, None, 400
    last = table.last_seen_version
    if a is None or b is None:
        error = "Give two versions: from and to (non-negative integers)."
    elif a >= b:
        error = f"'from' ({a}) must be lower than 'to' ({b})."
    elif last is None or b > last:
        error = f"Version {b} is not stored yet (the latest stored version is {last})."
    else:
        status = 200
        try:
            diff = dict(table_diff(table, a, b))
            diff["changes"] = [
                {**c, "before_text": pretty(c["before"]), "after_text": pretty(c["after"])}
                for c in diff["changes"]
            ]
        except DeltaAuditError as err:
            error = f"The table's log cannot be read: {one_line(err)}"
    ctx = {
        **table_header(table),
        "tab": "diff",
        "diff": diff,
        "error": error,
        "from_version": a,
        "to_version": b,
    }
    # A bad query is the client's: shown on the page, answered 400. A log that cannot be read
    # is shown the same way but is no fault of the request (200).
    return render(request, "frontend/diff.html", ctx, status=status)


@login_required
def table_writers_page(request: HttpRequest, table_id: int) -> HttpResponse:
    """/tables/<id>/writers/: who changed this table (per writer, from stored provenance);
    `?part=table`: its table alone, as the table page's Writers panel shows it."""
    table = visible_table_or_404(request, table_id)
    if request.GET.get("part") == "table":
        return render(request, "frontend/_writers_table.html", _writers_context(table))
    ctx = {**table_header(table), "tab": "writers", **_writers_context(table)}
    return render(request, "frontend/writers.html", ctx)


_WRITER_ROW = "frontend/_writers_row.html"


def _writers_context(table: Table) -> dict[str, Any]:
    """The writers and their rendered rows, remembered under what each shows
    (`cache.row_fragments`): rendering a hundred rows was most of the page's CPU."""
    shown = provenance.shown_writers(table, provenance.MAX_WRITERS_SHOWN)
    writers = shown.writers
    rows = cache.row_fragments(
        _WRITER_ROW,
        [(_shown(table, w), w) for w in writers],
        lambda w: render_to_string(_WRITER_ROW, {"w": w, "table": table}),
    )
    more = {"more_writers": shown.more_writers, "more_commits": shown.more_commits}
    return {"table": table, "writers": writers, "rows": rows, **more}


def _shown(table: Table, w: dict[str, Any]) -> tuple:
    """Everything frontend/_writers_row.html shows of a writer (its key among remembered rows)."""
    weeks = w["weeks"]
    return (
        table.id, w["name"], bool(w["who"]), w["engine"], tuple(w["clusters"]),
        w["history_query"], w["commits"], weeks[0]["week"] if weeks else "",
        tuple(p["commits"] for p in weeks), tuple(w["operations"][:5]),
        tuple((c["version"], c["kind"], c["summary"]) for c in w["changes"]),
        tuple(w["findings"].items()),
        tuple((f["id"], f["kind"], f["version"]) for f in w["finding_links"]),
        w["first"], w["last"],
    )  # fmt: skip


@login_required
def table_schema_page(request: HttpRequest, table_id: int) -> HttpResponse:
    """/tables/<id>/schema/?version=V&compare=W: the schema at V (default: the latest stored
    version), and what changed between W and V."""
    table = visible_table_or_404(request, table_id)
    raw_version, raw_compare = request.GET.get("version", ""), request.GET.get("compare", "")
    version = _version(raw_version) if raw_version else table.last_seen_version
    compare = _version(raw_compare) if raw_compare else None
    error, schemas, status = None, None, 200
    if (raw_version and version is None) or (raw_compare and compare is None):
        error, status = "Versions are non-negative integers.", 400
    elif version is None:
        error = "No version of this table is stored yet."
    else:
        try:
            schemas = table_schemas(table, version, compare)
        except DeltaAuditError as err:
            error, status = one_line(err), 400
    ctx = {
        **table_header(table),
        "tab": "schema",
        "schemas": schemas,
        "error": error,
        "version": version,
        "compare": compare,
    }
    return render(request, "frontend/schema.html", ctx, status=status)
