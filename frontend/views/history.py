"""/tables/<id>/history/: the table's commits as `DESCRIBE HISTORY` shows them, filtered and
paginated on the server (the read: audit/reads/history.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import ValidationError

from audit.core.numbers import log_int
from audit.core.vocab import Engine
from audit.reads.history import HISTORY, MAX_PAGE, PAGE_SIZE, history_page
from audit.reads.visible import visible_table_or_404
from frontend.views.table import table_header

# The form's fields, in its order: (query parameter, label, input type, placeholder).
FILTERS = (
    ("user", "User", "text", "name or id"),
    ("operation", "Operation", "text", "WRITE,MERGE"),
    ("engine", "Engine", "select", ""),
    ("job", "Job", "text", "job id or name"),
    ("q", "Metadata", "search", "text in metadata or parameters"),
    ("since", "Since", "text", "2024-01-31 or ISO time"),
    ("until", "Until", "text", "2024-02-01T12:00"),
)


@login_required
def table_history_page(request: HttpRequest, table_id: int) -> HttpResponse:
    table = visible_table_or_404(request, table_id)
    number = log_int(request.GET.get("page", "1") or "1") or 1
    keyset = {k: log_int(request.GET.get(k) or "") for k in ("before", "after")}
    params = {name: request.GET.get(name, "") for name, *_ in FILTERS}
    errors, page, status = [], None, 200
    try:
        page = history_page(
            table.id, request.GET, min(number, MAX_PAGE), latest=table.last_seen_version, **keyset
        )
    except ValidationError as err:
        errors, status = _errors(err.detail), 400
    ctx = {
        **table_header(table),
        "tab": "history",
        "filters": [
            {"name": n, "label": label, "type": kind, "placeholder": hint, "value": params[n]}
            for n, label, kind, hint in FILTERS
        ],
        "engines": [str(e) for e in Engine],
        "errors": errors,
        "page": page,
        # Shaped and escaped by the rows' tag (frontend/templatetags/history_rows.py).
        "rows": page.rows if page else [],
        "filtered": any(params.values()),
        "page_size": PAGE_SIZE,
    }
    if page is not None and page.rows:
        # The links carry the keyset of the rows shown: the next page reads from there.
        newer = {"after": page.rows[0]["version"]} if page.number > 2 else {}
        ctx["prev_url"] = _page_url(params, page.number - 1, newer) if page.number > 1 else ""
        older = {"before": page.rows[-1]["version"]}
        ctx["next_url"] = _page_url(params, page.number + 1, older) if page.has_next else ""
    elif page is not None and page.number > 1:
        ctx["prev_url"] = _page_url(params, 1)
    return render(request, "frontend/history.html", ctx, status=status)


def _errors(detail: Any) -> list[str]:
    if isinstance(detail, dict):
        return [f"{name}: {' '.join(str(m) for m in msgs)}" for name, msgs in detail.items()]
    return [str(detail)]


def _page_url(params: dict[str, str], number: int, keyset: dict[str, int] | None = None) -> str:
    kept = {k: v for k, v in params.items() if v}
    return "?" + urlencode({**kept, "page": number, **(keyset or {})})


__all__ = ["HISTORY", "table_history_page"]
