"""A table's analysis tab: isolation settings and matrix, hotspots, partitioning, orphans."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit.core.errors import DeltaAuditError
from audit.models import Table
from audit.reads.visible import visible_table_or_404
from audit.tail.orphan_scans import orphan_report
from frontend.views.table import table_header


def load_analysis(table: Table) -> dict[str, Any]:
    """isolation / hotspots / partitioning for a table (audit.reads.analysis caches them per version)."""
    from audit.reads.analysis import table_analysis

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


@login_required
def table_analysis_page(request: HttpRequest, table_id: int) -> HttpResponse:
    table = visible_table_or_404(request, table_id)
    ctx: dict[str, Any] = {
        **table_header(table),
        "tab": "analysis",
        "orphans": orphan_report(table),
    }
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
