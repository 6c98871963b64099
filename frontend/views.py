"""Dashboard pages: plain Django function views over the models and the core analyses.

Every string that came from a Delta log (operation names, user names, predicates, parameters,
paths) is untrusted. Templates autoescape it; data for JavaScript goes through json_script and
is written into the page with textContent; the CSP (frontend.middleware) blocks inline script.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from audit.core.errors import DeltaAuditError
from audit.models import Commit, Finding, Table
from frontend.forms import ExplainForm, FindingFilterForm, RegisterTableForm

log = logging.getLogger(__name__)

SEVERITIES = ("critical", "warning", "info")
MAX_FILES_SHOWN = 500
MAX_CONCURRENT_SHOWN = 200
# How far after a commit we look for commits that were in flight when it committed.
LATER_WINDOW = 1000
TABLE_SORTS: dict[str, list[Any]] = {
    "findings": ["-n_critical", "-n_warning", "-n_info", "name", "id"],
    "name": ["name", "id"],
    "risk": [F("risk").desc(nulls_last=True), "-n_critical", "-n_warning", "name"],
    "recent": [F("last_commit_at").desc(nulls_last=True), "name"],
    "version": [F("last_seen_version").desc(nulls_last=True), "name"],
    "lag": [F("lag").desc(nulls_last=True), "name"],
    "status": ["status", "name"],
}


def _open_unacknowledged() -> Q:
    """Findings that still want attention: open and nobody acknowledged them."""
    return Q(status=Finding.Status.OPEN, acknowledged_at__isnull=True)


def _is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_staff)


# --------------------------------------------------------------------------- overview


def _tables_with_counts():
    attention = Q(findings__status=Finding.Status.OPEN, findings__acknowledged_at__isnull=True)
    return Table.objects.annotate(
        n_critical=Count("findings", filter=attention & Q(findings__severity="critical")),
        n_warning=Count("findings", filter=attention & Q(findings__severity="warning")),
        n_info=Count("findings", filter=attention & Q(findings__severity="info")),
        lag=F("latest_version_in_log") - F("last_seen_version"),
    )


# Risk scores are 0..100 (audit.alerting.risk): one confirmed critical finding scores ~55.
RISK_HIGH, RISK_MEDIUM = 50.0, 15.0


def risk_level(table: Any) -> str:
    """The risk badge: high, medium, low, or unknown (nothing stored yet).

    From the risk score when the scorer has set one, else from the worst open finding.
    """
    if table.risk is not None:
        return (
            "high" if table.risk >= RISK_HIGH else "medium" if table.risk >= RISK_MEDIUM else "low"
        )
    if table.last_seen_version is None:
        return "unknown"
    if getattr(table, "n_critical", 0):
        return "high"
    return "medium" if getattr(table, "n_warning", 0) else "low"


@login_required
@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    form = RegisterTableForm()
    if request.method == "POST":
        if not _is_admin(request.user):
            raise PermissionDenied("only administrators register tables")
        form = RegisterTableForm(request.POST)
        if form.is_valid():
            table = _register(request, form)
            if table is not None:
                return redirect("frontend:table", table_id=table.id)

    query = request.GET.get("q", "").strip()[:200]
    sort = request.GET.get("sort", "findings")
    if sort not in TABLE_SORTS:
        sort = "findings"
    tables = _tables_with_counts()
    if query:
        tables = tables.filter(Q(name__icontains=query) | Q(uri__icontains=query))
    page = Paginator(tables.order_by(*TABLE_SORTS[sort]), 100).get_page(request.GET.get("page"))
    for table in page:
        table.risk_level = risk_level(table)
    totals = Finding.objects.filter(_open_unacknowledged()).aggregate(
        critical=Count("id", filter=Q(severity="critical")),
        warning=Count("id", filter=Q(severity="warning")),
        info=Count("id", filter=Q(severity="info")),
    )
    ctx = {
        "page": page,
        "query": query,
        "sort": sort,
        "sorts": list(TABLE_SORTS),
        "form": form,
        "show_form": request.method == "POST",
        "totals": totals,
        "n_tables": Table.objects.count(),
        "n_errors": Table.objects.filter(status=Table.Status.ERROR).count(),
        "is_admin": _is_admin(request.user),
    }
    return render(request, "frontend/index.html", ctx)


def _register(request: HttpRequest, form: RegisterTableForm) -> Table | None:
    """Validate the URI (allowed root, readable log), store the table, start its tail."""
    from audit.core.log import open_log
    from audit.ingest import register_table
    from audit.paths import check_allowed

    uri, name = form.cleaned_data["uri"], form.cleaned_data["name"] or None
    try:
        normalised = check_allowed(uri)
        open_log(normalised)  # a DeltaAuditError names what is wrong with the log
        table, created = register_table(normalised, name)
    except DeltaAuditError as err:
        form.add_error("uri", str(err).splitlines()[0] if str(err) else "unreadable table")
        return None
    if not created:
        messages.info(request, "This table was already registered.")
        return table
    if _enqueue_tail(table.id):
        messages.success(request, "Table registered; its history is being ingested.")
    else:
        messages.warning(
            request,
            "Table registered, but the task queue is unreachable: ingestion starts when the "
            "workers' next tail pass runs.",
        )
    return table


def _enqueue_tail(table_id: int) -> bool:
    """Ask a worker to ingest the table now. A down broker must not lose the registration."""
    try:
        from workers.tasks import tail_table

        tail_table.apply_async((table_id,), retry=False)
    except Exception as err:  # broker down, misconfigured, ... : the beat picks the table up
        log.warning("could not enqueue tail of table %s: %s", table_id, err)
        return False
    return True


# --------------------------------------------------------------------------- table page


def _table_header(table: Table) -> dict[str, Any]:
    counts = dict(
        Finding.objects.filter(_open_unacknowledged(), table=table)
        .values_list("severity")
        .annotate(n=Count("id"))
        .values_list("severity", "n")
    )
    table.n_critical = counts.get("critical", 0)
    table.n_warning = counts.get("warning", 0)
    table.n_info = counts.get("info", 0)
    lag = None
    if table.latest_version_in_log is not None and table.last_seen_version is not None:
        lag = max(table.latest_version_in_log - table.last_seen_version, 0)
    return {
        "table": table,
        "counts": counts,
        "lag": lag,
        "risk_level": risk_level(table),
        "snapshot": table.settings_snapshot or {},
    }


@login_required
def table_detail(request: HttpRequest, table_id: int) -> HttpResponse:
    table = get_object_or_404(Table, id=table_id)
    findings = list(
        Finding.objects.filter(table=table)
        .filter(_open_unacknowledged())
        .order_by("-version", "id")[:50]
    )
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
    ctx = {**_table_header(table), "findings": findings, "config": config, "tab": "timeline"}
    return render(request, "frontend/table.html", ctx)


@login_required
def table_status(request: HttpRequest, table_id: int) -> HttpResponse:
    """The header numbers as JSON, polled by table.js while the tab is visible."""
    table = get_object_or_404(Table, id=table_id)
    header = _table_header(table)
    return JsonResponse(
        {
            "status": table.status,
            "last_error": table.last_error,
            "last_seen_version": table.last_seen_version,
            "latest_version_in_log": table.latest_version_in_log,
            "lag": header["lag"],
            "open": {s: header["counts"].get(s, 0) for s in SEVERITIES},
            "backfill_fraction": table.backfill_fraction,
            "backfill": backfill_status(table),
        }
    )


def backfill_status(table: Table) -> dict[str, Any] | None:
    """Progress, rate and time left of a running backfill (what the header's Backfill stat shows)."""
    if table.backfill_target_version is None:
        return None
    eta = table.backfill_eta_seconds
    return {
        "fraction": table.backfill_fraction,
        "done": table.backfill_done,
        "remaining": table.backfill_remaining,
        "commits_per_second": table.backfill_rate,
        "eta_seconds": eta,
        "text": render_to_string("frontend/_backfill.html", {"table": table}).strip(),
    }


def load_analysis(table: Table) -> dict[str, Any]:
    """isolation / hotspots / partitioning for a table (audit.analysis caches them per version)."""
    from audit.analysis import table_analysis

    return normalise_analysis(table_analysis(table))


def normalise_analysis(raw: dict[str, Any]) -> dict[str, Any]:
    """Accept the few spellings of the analysis keys (settings/isolation, recommendations/...)."""
    isolation = raw.get("isolation") or raw.get("isolation_settings") or raw.get("settings") or {}
    partitioning = raw.get("partitioning") or raw.get("recommendations") or {}
    hotspots = raw.get("hotspots") or []
    return {"isolation": isolation, "hotspots": hotspots, "partitioning": partitioning}


def hotspot_heatmap(hotspots: list[dict[str, Any]], max_rows: int = 30) -> dict[str, Any]:
    """Partition × day counts of overlapping concurrent pairs, for the heatmap."""
    per_partition: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[str, int] = defaultdict(int)
    for h in hotspots:
        name = str(h.get("partition", ""))
        for day, n in (h.get("per_day") or {}).items():
            per_partition[name][str(day)] += int(n)
        totals[name] += int(h.get("pairs") or 0)
    rows = sorted(totals, key=lambda p: (-totals[p], p))[:max_rows]
    days = sorted({d for p in rows for d in per_partition[p]})
    day_index = {d: i for i, d in enumerate(days)}
    cells = [
        [day_index[d], y, n]
        for y, p in enumerate(rows)
        for d, n in sorted(per_partition[p].items())
    ]
    return {
        "days": days,
        "partitions": rows,
        "cells": cells,
        "max": max((c[2] for c in cells), default=0),
    }


@login_required
def table_analysis_page(request: HttpRequest, table_id: int) -> HttpResponse:
    table = get_object_or_404(Table, id=table_id)
    ctx: dict[str, Any] = {**_table_header(table), "tab": "analysis"}
    try:
        analysis = load_analysis(table)
    except DeltaAuditError as err:
        ctx["error"] = str(err)
        return render(request, "frontend/analysis.html", ctx)
    isolation = analysis["isolation"]
    matrix = isolation.get("matrix") or {}
    ctx.update(
        isolation=isolation,
        matrix=matrix,
        matrix_grid=matrix_grid(matrix.get("cells") or []),
        hotspots=sorted(analysis["hotspots"], key=lambda h: -int(h.get("pairs") or 0))[:50],
        heatmap=hotspot_heatmap(analysis["hotspots"]),
        partitioning=analysis["partitioning"],
    )
    return render(request, "frontend/analysis.html", ctx)


def matrix_grid(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The unordered cells as a symmetric grid: {"ops": [...], "rows": [[op, [cell...]]]}."""
    ops: list[str] = []
    for cell in cells:
        for op in (cell.get("a"), cell.get("b")):
            if op not in ops:
                ops.append(op)
    by_pair = {frozenset((c.get("a"), c.get("b"))): c for c in cells}
    rows = [[a, [by_pair.get(frozenset((a, b))) for b in ops]] for a in ops]
    return {"ops": ops, "rows": rows}


# --------------------------------------------------------------------------- commit page


def _read_logged_commit(table: Table, version: int) -> tuple[Any, str]:
    """The commit's actions as the log holds them (one file read, no listing of the log)."""
    from audit.core.log import read_commit
    from audit.core.storage import open_store
    from audit.paths import check_registered

    try:
        return read_commit(open_store(check_registered(table.uri)), version), ""
    except DeltaAuditError as err:
        return None, str(err).splitlines()[0] if str(err) else "unreadable commit"
    except OSError as err:
        return None, f"cannot read the commit file: {err}"


def _schema_fields(schema_string: str | None) -> list[dict[str, Any]]:
    try:
        schema = json.loads(schema_string or "")
    except (TypeError, ValueError):
        return []
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        return []
    return [
        {
            "name": str(f.get("name")),
            "type": f.get("type") if isinstance(f.get("type"), str) else json.dumps(f.get("type")),
            "nullable": f.get("nullable"),
        }
        for f in fields
        if isinstance(f, dict)
    ]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def _stats_records(stats: str | None) -> Any:
    try:
        return json.loads(stats or "").get("numRecords")
    except (TypeError, ValueError, AttributeError):
        return None


def _actions(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    adds = [
        {
            "path": a.path,
            "partition_values": a.partition_values,
            "size": a.size,
            "data_change": a.data_change,
            "records": _stats_records(a.stats),
            "deletion_vector": bool(a.deletion_vector),
        }
        for a in raw.adds[:MAX_FILES_SHOWN]
    ]
    removes = [
        {
            "path": r.path,
            "partition_values": r.partition_values or {},
            "size": r.size,
            "data_change": r.data_change,
            "deletion_vector": bool(r.deletion_vector),
        }
        for r in raw.removes[:MAX_FILES_SHOWN]
    ]
    metadata = None
    if raw.metadata is not None:
        metadata = {
            "id": raw.metadata.id,
            "name": raw.metadata.name,
            "partition_columns": raw.metadata.partition_columns,
            "configuration": raw.metadata.configuration,
            "fields": _schema_fields(raw.metadata.schema_string),
        }
    return {
        "adds": adds,
        "adds_total": len(raw.adds),
        "removes": removes,
        "removes_total": len(raw.removes),
        "cdcs": raw.cdcs[:MAX_FILES_SHOWN],
        "metadata": metadata,
        "protocol": raw.protocol,
        "txns": raw.txns,
        "domains": raw.domain_metadata,
        "unknown": raw.unknown_actions,
        "commit_info": _pretty(raw.commit_info) if raw.commit_info is not None else "",
    }


def findings_involving(table: Table, version: int, limit: int = 5000) -> list[Finding]:
    """Findings on `version` or naming it among their related versions."""
    found = list(Finding.objects.filter(table=table, version=version))
    # related_versions is a JSON list; containment lookups are not portable (SQLite), so scan
    # the findings of this table that could name it, which are few per table.
    seen = {f.id for f in found}
    candidates = (
        Finding.objects.filter(table=table)
        .exclude(id__in=seen)
        .values_list("id", "related_versions")[:limit]
    )
    ids = [fid for fid, related in candidates if isinstance(related, list) and version in related]
    found += list(Finding.objects.filter(id__in=ids))
    return sorted(found, key=lambda f: (SEVERITIES.index(f.severity), -f.version))


@login_required
def commit_detail(request: HttpRequest, table_id: int, version: int) -> HttpResponse:
    table = get_object_or_404(Table, id=table_id)
    commit = get_object_or_404(Commit, table=table, version=version)
    raw, read_error = _read_logged_commit(table, version)
    concurrent_versions = [int(v) for v in commit.concurrent_versions[:MAX_CONCURRENT_SHOWN]]
    peers = {
        c["version"]: c
        for c in Commit.objects.filter(table=table, version__in=concurrent_versions).values(
            "version", "operation", "user_name", "timestamp", "blind_append"
        )
    }
    recheck = commit.recheck or {}
    concurrent = [
        {
            "version": v,
            "peer": peers.get(v),
            "verdicts": recheck.get(str(v)) or {},
        }
        for v in concurrent_versions
    ]
    # Commits that were in flight when this one committed: they read a version before it.
    later = list(
        Commit.objects.filter(
            table=table,
            version__gt=version,
            version__lte=version + LATER_WINDOW,
            read_version__lt=version,
        )
        .order_by("version")
        .values("version", "operation", "user_name", "read_version", "recheck")[:100]
    )
    for c in later:
        c["verdicts"] = (c.pop("recheck") or {}).get(str(version)) or {}
    findings = findings_involving(table, version)
    ctx = {
        **_table_header(table),
        "commit": commit,
        "actions": _actions(raw),
        "read_error": read_error,
        "concurrent": concurrent,
        "concurrent_total": len(commit.concurrent_versions),
        "later": later,
        "findings": findings,
        "parameters": _pretty(commit.operation_parameters),
        "metrics": _pretty(commit.operation_metrics),
        "levels": ["Serializable", "WriteSerializable"],
        "tab": "timeline",
    }
    return render(request, "frontend/commit.html", ctx)


# --------------------------------------------------------------------------- findings


@login_required
def findings_list(request: HttpRequest) -> HttpResponse:
    form = FindingFilterForm(request.GET or None)
    rows = Finding.objects.select_related("table")
    status = "open"
    if form.is_valid():
        data = form.cleaned_data
        status = data.get("status") or "open"
        if data.get("table"):
            rows = rows.filter(table=data["table"])
        if data.get("kind"):
            rows = rows.filter(kind=data["kind"])
        if data.get("severity"):
            rows = rows.filter(severity=data["severity"])
    if status == "open":
        rows = rows.filter(_open_unacknowledged())
    elif status == "acknowledged":
        rows = rows.filter(acknowledged_at__isnull=False)
    elif status == "resolved":
        rows = rows.filter(status=Finding.Status.RESOLVED)
    rows = rows.order_by("-last_seen", "-id").defer("witness", "details", "explanation")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    kinds = Finding.objects.order_by("kind").values_list("kind", flat=True).distinct()
    query = request.GET.copy()
    query.pop("page", None)
    filters = query.copy()
    filters.pop("status", None)
    ctx = {
        "form": form,
        "page": page,
        "kinds": list(kinds),
        "status": status,
        "querystring": query.urlencode(),
        "filter_qs": filters.urlencode(),
    }
    return render(request, "frontend/findings.html", ctx)


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
    finding = get_object_or_404(
        Finding.objects.select_related("table", "acknowledged_by"), id=finding_id
    )
    versions = [finding.version, *finding.related_versions[:200]]
    commits = {
        c["version"]: c
        for c in Commit.objects.filter(table=finding.table, version__in=versions).values(
            "version", "operation", "user_name", "timestamp", "read_version"
        )
    }
    witness = finding.witness if isinstance(finding.witness, dict) else None
    ctx = {
        "finding": finding,
        "table": finding.table,
        "commit": commits.get(finding.version),
        "related": [
            {"version": v, "commit": commits.get(v)} for v in finding.related_versions[:200]
        ],
        "related_total": len(finding.related_versions),
        "witness": witness,
        "witness_table": witness_table(witness),
        "details": _pretty(finding.details) if finding.details else "",
        "flips": list(finding.flips.all()[:20]),
        "is_admin": _is_admin(request.user),
    }
    return render(request, "frontend/finding.html", ctx)


@login_required
@require_POST
def finding_acknowledge(request: HttpRequest, finding_id: int) -> HttpResponse:
    if not _is_admin(request.user):
        raise PermissionDenied("only administrators acknowledge findings")
    finding = get_object_or_404(Finding, id=finding_id)
    Finding.objects.filter(id=finding.id).update(
        acknowledged_by=request.user, acknowledged_at=timezone.now()
    )
    messages.success(request, "Finding acknowledged.")
    return redirect("frontend:finding", finding_id=finding.id)


@login_required
@require_POST
def finding_reopen(request: HttpRequest, finding_id: int) -> HttpResponse:
    if not _is_admin(request.user):
        raise PermissionDenied("only administrators re-open findings")
    finding = get_object_or_404(Finding, id=finding_id)
    Finding.objects.filter(id=finding.id).update(acknowledged_by=None, acknowledged_at=None)
    messages.success(request, "Finding re-opened.")
    return redirect("frontend:finding", finding_id=finding.id)


# --------------------------------------------------------------------------- explainer


@login_required
@require_http_methods(["GET", "POST"])
def explain(request: HttpRequest) -> HttpResponse:
    from audit.core.explain import explain_conflict

    form = ExplainForm(request.POST or None, initial={"table": request.GET.get("table")})
    result = None
    history_error = ""
    table = None
    commits: dict[int, dict[str, Any]] = {}
    if request.method == "POST" and form.is_valid():
        table = form.cleaned_data.get("table")
        history = None
        if table is not None:
            try:
                from audit.analysis import table_history

                history = table_history(table)
            except DeltaAuditError as err:
                history_error = str(err).splitlines()[0] if str(err) else "unreadable table"
        result = explain_conflict(form.cleaned_data["text"], history)
        if table is not None:
            wanted = [result.get("conflicting_version"), *result.get("likely_peer_versions", [])]
            wanted += result.get("candidate_versions", [])
            wanted = [v for v in wanted if isinstance(v, int)]
            commits = {
                c["version"]: c
                for c in Commit.objects.filter(table=table, version__in=wanted[:500]).values(
                    "version", "operation", "user_name", "timestamp"
                )
            }
    ctx = {
        "form": form,
        "result": result,
        "table": table,
        "commits": commits,
        "history_error": history_error,
        "conflicting_commit": _pretty(result.get("conflicting_commit"))
        if result and result.get("conflicting_commit")
        else "",
    }
    return render(request, "frontend/explain.html", ctx)
