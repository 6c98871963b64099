"""The explainer page: a pasted conflict exception, explained (against a table's history)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from audit.core.errors import DeltaAuditError, one_line
from audit.models import Table
from audit.reads import queries
from audit.reads.visible import visible_tables
from frontend.forms import ExplainForm
from frontend.views.common import pretty

MAX_COMMITS_LINKED = 500


def _history(table: Table | None) -> tuple[Any, str]:
    """The table's history to explain against, or None and why it could not be read."""
    if table is None:
        return None, ""
    from audit.reads.analysis import table_history

    try:
        return table_history(table), ""
    except DeltaAuditError as err:
        return None, one_line(err, empty="unreadable table")


def _commits_named(table: Table, result: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The commits the explanation names, for links: conflicting, likely peers, candidates."""
    wanted = [result.get("conflicting_version"), *result.get("likely_peer_versions", [])]
    wanted += result.get("candidate_versions", [])
    wanted = [v for v in wanted if isinstance(v, int)]
    fields = ("operation", "user_name", "timestamp")
    return queries.commits_by_version(table.id, wanted[:MAX_COMMITS_LINKED], fields)


@login_required
@require_http_methods(["GET", "POST"])
def explain(request: HttpRequest) -> HttpResponse:
    from audit.core.explain import explain_conflict
    from audit.trust.limits import limit_text

    form = ExplainForm(
        request.POST or None,
        initial={"table": request.GET.get("table")},
        tables=visible_tables(request),
    )
    result, history_error, table = None, "", None
    commits: dict[int, dict[str, Any]] = {}
    if request.method == "POST" and form.is_valid():
        table = form.cleaned_data.get("table")
        history, history_error = _history(table)
        result = explain_conflict(form.cleaned_data["text"], history)
        if table is not None:
            commits = _commits_named(table, result)
    conflicting = result.get("conflicting_commit") if result else None
    ctx = {
        "limits": limit_text(),
        "form": form,
        "result": result,
        "table": table,
        "commits": commits,
        "history_error": history_error,
        "conflicting_commit": pretty(conflicting) if conflicting else "",
    }
    return render(request, "frontend/explain.html", ctx)
