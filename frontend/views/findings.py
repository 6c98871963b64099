"""The findings pages: the filtered list, one finding, acknowledging and re-opening it."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from audit.core.vocab import FindingKind
from audit.reads import cache, pages, queries
from audit.reads.pages import incident_of_finding
from audit.reads.visible import ID, visible_table_or_404
from audit.trust import access
from frontend.forms import FindingFilterForm
from frontend.templatetags.findings_rows import FindingRow
from frontend.views.common import pretty

_EDGE_TYPES = frozenset({"ww", "wr", "rw"})
MAX_CYCLE_EDGES = 40
MAX_RELATED_SHOWN = 200


def _filtered(form: FindingFilterForm, request: HttpRequest) -> tuple[Any, str]:
    """The findings the list's filters select of the reader's tables, newest first, and the
    status tab ("open" by default)."""
    status, filters = "open", {}
    if form.is_valid():
        data = form.cleaned_data
        status = data.get("status") or "open"
        filters = {field: data[field] for field in ("table", "kind", "severity") if data.get(field)}
    return pages.findings_rows(access.projects(request), status, filters), status


def kind_choices() -> list[str]:
    """The kind dropdown: the vocabulary's kinds, and the health rules' kinds seen so far."""
    return sorted({str(k) for k in FindingKind} | queries.health_kinds_seen())


@login_required
def findings_list(request: HttpRequest) -> HttpResponse:
    raw = request.GET.get("table", "")
    if raw.isascii() and raw.isdigit() and len(raw) <= 18:
        visible_table_or_404(request, raw, columns=ID)  # another project's table: 404
    # The page's content is the same for every reader of the same projects: cached under
    # their project set (audit/reads/cache.py).
    content = cache.fragment(
        lambda: cache.page_generation(pages.FINDINGS_PAGE),
        request,
        lambda: _findings_content(request),
        access.scope_of(access.projects(request)),
    )
    return render(request, "frontend/findings.html", {"content": content})


def _findings_content(request: HttpRequest) -> str:
    """The findings page's content block: filters, rows and pager."""
    # The table dropdown and a chosen table show only names and URIs (str(table)).
    tables = queries.table_choices(access.projects(request))
    form = FindingFilterForm(request.GET or None, tables=tables)
    rows, status = _filtered(form, request)
    table = form.cleaned_data.get("table") if form.is_valid() else None
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    page.object_list = [FindingRow(values) for values in page.object_list]
    for finding in page.object_list if table else ():
        finding.table = table
    query = request.GET.copy()
    query.pop("page", None)
    filters = query.copy()
    filters.pop("status", None)
    ctx = {
        "form": form,
        "page": page,
        "kinds": kind_choices(),
        "status": status,
        "querystring": query.urlencode(),
        "filter_qs": filters.urlencode(),
    }
    return render_to_string("frontend/_findings_content.html", ctx)


def cycle_edges(witness: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The dependency cycle of an anomaly finding, checked field by field (it is stored JSON)."""
    edges = (witness or {}).get("cycle")
    if not isinstance(edges, list):
        return []
    out = []
    for e in edges[:MAX_CYCLE_EDGES]:
        if not isinstance(e, dict) or e.get("type") not in _EDGE_TYPES:
            continue
        if not all(isinstance(e.get(k), int) for k in ("from", "to")):
            continue
        out.append(
            {"from": e["from"], "to": e["to"], "type": e["type"], "why": str(e.get("why", ""))}
        )
    return out


def witness_table(witness: dict[str, Any] | None) -> dict[str, Any]:
    """Sample rows as a header and row lists (columns in first-seen order)."""
    samples = (witness or {}).get("sample_rows") or []
    columns: list[str] = []
    for row in samples:
        if isinstance(row, dict):
            columns += [str(k) for k in row if str(k) not in columns]
    body = [
        [row.get(c) if isinstance(row, dict) else None for c in columns]
        for row in samples
        if isinstance(row, dict)
    ]
    return {"columns": columns, "rows": body}


@login_required
def finding_detail(request: HttpRequest, finding_id: int) -> HttpResponse:
    finding, flips = pages.finding_shown(request, finding_id, 20)
    related = finding.related_versions[:MAX_RELATED_SHOWN]
    commits = queries.commits_by_version(
        finding.table_id,
        [finding.version, *related],
        ("operation", "user_name", "timestamp", "read_version"),
    )
    witness = finding.witness if isinstance(finding.witness, dict) else None
    ctx = {
        "finding": finding,
        "table": finding.table,
        "commit": commits.get(finding.version),
        "related": [{"version": v, "commit": commits.get(v)} for v in related],
        "related_total": len(finding.related_versions),
        "witness": witness,
        "has_witness_rows": witness is not None and ("row_count" in witness or "files" in witness),
        "witness_files": witness_files(witness),
        "cycle": cycle_edges(witness),
        "witness_table": witness_table(witness),
        "details": pretty(finding.details) if finding.details else "",
        "flips": flips,
        "may_acknowledge": access.may_acknowledge(request.user, finding.table),
        "incident": incident_of_finding(finding),
    }
    return render(request, "frontend/finding.html", ctx)


def witness_files(witness: dict | None) -> list[str]:
    """The files a witness names: its `files` list, or an orphan scan's `sample` (whose
    `files` is a count)."""
    files = (witness or {}).get("files")
    if not isinstance(files, list):
        files = (witness or {}).get("sample")
    return [str(f) for f in files] if isinstance(files, list) else []


def _set_acknowledged(request: HttpRequest, finding_id: int, *, acknowledged: bool):
    """Acknowledge or re-open for the user (members of the table's project, administrators),
    then back to the finding. Another project's finding is a 404, a viewer gets 403."""
    finding = pages.finding_to_change(request, finding_id)
    if not access.may_acknowledge(request.user, finding.table):
        doing = "acknowledge findings" if acknowledged else "re-open findings"
        raise PermissionDenied(f"only members of the table's project {doing}")
    if not acknowledged:
        queries.unacknowledge(finding)
        messages.success(request, "Finding re-opened.")
    elif queries.acknowledge(finding, request.user):
        messages.success(request, "Finding acknowledged.")
    else:  # the first acknowledgement is kept, as in the API
        messages.info(request, "This finding was already acknowledged.")
    return redirect("frontend:finding", finding_id=finding.id)


@login_required
@require_POST
def finding_acknowledge(request: HttpRequest, finding_id: int) -> HttpResponse:
    return _set_acknowledged(request, finding_id, acknowledged=True)


@login_required
@require_POST
def finding_reopen(request: HttpRequest, finding_id: int) -> HttpResponse:
    return _set_acknowledged(request, finding_id, acknowledged=False)
