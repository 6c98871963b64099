"""A table's pages: the header every tab shares, the timeline tab and its status poll."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse

from audit.core.storage import errors as storage_errors
from audit.core.storage.config import describe_storage
from audit.models import Table
from audit.reads import cache, queries
from audit.reads.pages import OPEN_FINDINGS_PER_PAGE, ROW_VALUES, OpenFindings, table_incidents
from audit.reads.visible import WITH_HEALTH, visible_table_or_404
from frontend.templatetags.findings_rows import FindingRow
from frontend.views.overview import risk_level, show_attention


def health_config(table: Table, has_health: bool) -> dict[str, Any]:
    """What health.js needs (URLs only; data comes from the API, as text)."""
    return {
        "table": table.id,
        "latestVersion": table.last_seen_version,
        "hasHealth": has_health,
        "healthUrl": f"/api/tables/{table.id}/health/",
        "historyUrl": f"/api/tables/{table.id}/health/history/",
        "changesUrl": f"/api/tables/{table.id}/changes/",
        "diffUrl": reverse("frontend:diff", args=[table.id]),
        "commitBase": f"/tables/{table.id}/commits/",
    }


# The header's Backfill stat: JSON key -> Table attribute.
BACKFILL_FIELDS = {
    "fraction": "backfill_fraction",
    "done": "backfill_done",
    "remaining": "backfill_remaining",
    "commits_per_second": "backfill_rate",
    "eta_seconds": "backfill_eta_seconds",
}


def table_header(table: Table) -> dict[str, Any]:
    """The context of _table_head.html: counts, lag, risk, settings and storage."""
    counts = queries.finding_counts(table.id)
    show_attention(table, counts["attention"])
    lag = None
    if table.latest_version_in_log is not None and table.last_seen_version is not None:
        lag = max(table.latest_version_in_log - table.last_seen_version, 0)
    return {
        "table": table,
        "counts": counts["attention"],
        "open_counts": counts["open"],
        "lag": lag,
        "risk_level": risk_level(table),
        "snapshot": table.settings_snapshot or {},
        # Redacted: the root prefix and the credential's name (env:NAME), never its value.
        "storage": describe_storage(table.uri),
        "error_cause": storage_errors.label(table.error_cause),
    }


@login_required
def table_detail(request: HttpRequest, table_id: int) -> HttpResponse:
    table = _table_or_404(request, table_id)
    has_health = bool(table.has_health)
    # The content is the same for every reader: cached (audit/reads/cache.py).
    content = cache.fragment(
        lambda: cache.table_page_generation(table, has_health),
        request,
        lambda: _table_content(table, has_health, request.GET),
    )
    return render(request, "frontend/table.html", {"table": table, "content": content})


def _table_content(table: Table, has_health: bool, query: Any) -> str:
    """The table page's content block: header, incidents (their findings folded under each),
    timeline, open findings (worst first, paginated, "N of M"), health panel. `query`: the
    request's GET (`incidents`, `page`: the two lists' page numbers)."""
    incidents = table_incidents(table.pk, query.get("incidents"))
    for incident in incidents.object_list:
        incident["folded"] = [FindingRow(row) for row in incident["folded"]]
    header = table_header(table)
    listed = OpenFindings(table.pk, ROW_VALUES, header["counts"])
    findings = Paginator(listed, OPEN_FINDINGS_PER_PAGE)
    findings = findings.get_page(query.get("page"))
    findings.object_list = [FindingRow(row) for row in findings.object_list]
    first = table.first_available_version if table.first_available_version is not None else 0
    config = {
        "table": table.id,
        "timelineUrl": f"/api/tables/{table.id}/timeline/",
        "statusUrl": reverse("frontend:table_status", args=[table.id]),
        "commitBase": f"/tables/{table.id}/commits/",
        "findingBase": "/findings/",
        "firstVersion": first,
        "latestVersion": table.last_seen_version,
        "refreshSeconds": settings.FRONTEND_REFRESH_SECONDS,
    }
    ctx = {
        **header,
        "incidents": incidents,
        "findings": findings,
        "config": config,
        "tab": "timeline",
    }
    ctx["health_config"] = health_config(table, has_health)  # the health panel (views/health.py)
    return render_to_string("frontend/_table_content.html", ctx)


@login_required
def table_status(request: HttpRequest, table_id: int) -> HttpResponse:
    """The header numbers as JSON, polled by table.js while the tab is visible.

    `open` counts open findings (acknowledged or not, as the API's `open_findings`);
    `attention` the open ones nobody acknowledged (the header's badges)."""
    table = _table_or_404(request, table_id)
    header = table_header(table)
    return JsonResponse(
        {
            "status": table.status,
            "last_error": table.last_error,
            "error_cause": table.error_cause,
            "last_seen_version": table.last_seen_version,
            "latest_version_in_log": table.latest_version_in_log,
            "lag": header["lag"],
            "open": header["open_counts"],
            "attention": header["counts"],
            "backfill_fraction": table.backfill_fraction,
            "backfill": backfill_status(table),
        }
    )


def _table_or_404(request: HttpRequest, table_id: int) -> Table:
    """The table with `has_health`, read by one query compiled once (each page load and poll);
    404 for another project's table, as for none."""
    return visible_table_or_404(request, table_id, columns=WITH_HEALTH)


def backfill_status(table: Table) -> dict[str, Any] | None:
    """Progress, rate and time left of a running backfill (what the header's Backfill stat shows)."""
    if table.backfill_target_version is None:
        return None
    status = {key: getattr(table, attribute) for key, attribute in BACKFILL_FIELDS.items()}
    status["text"] = render_to_string("frontend/_backfill.html", {"table": table}).strip()
    return status
