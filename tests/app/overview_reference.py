"""The overview's content block as it was built before the cold-page work (its counts
through the ORM, every row rendered by the page's own template loop: overview_reference.html
is that template), kept verbatim as the reference tests/app/test_overview_page.py compares
frontend/views/overview.py with."""

from __future__ import annotations

from pathlib import Path

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest
from django.template import engines

from audit.models import Incident, Table
from audit.reads import cache, queries
from frontend.views.overview import TABLE_SORTS, _has_health, risk_level, show_attention


def overview_content(request: HttpRequest, admin: bool) -> str:
    query = request.GET.get("q", "").strip()[:200]
    sort = request.GET.get("sort", "findings")
    if sort not in TABLE_SORTS:
        sort = "findings"
    tables = queries.tables_with_counts().select_related("health").defer("health__data")
    if query:
        tables = tables.filter(Q(name__icontains=query) | Q(uri__icontains=query))
    page = Paginator(tables.order_by(*TABLE_SORTS[sort]), 100).get_page(request.GET.get("page"))
    for table in page:
        show_attention(table)
        table.risk_level = risk_level(table)
        table.health_or_none = getattr(table, "health", None) if _has_health(table) else None
        table.why = _worst_open_incident(table)
    ctx = {
        "page": page,
        "query": query,
        "sort": sort,
        "sorts": list(TABLE_SORTS),
        "register": cache.REGISTER_MARK,
        "totals": queries.attention_totals(),
        "n_tables": Table.objects.count(),
        "n_errors": Table.objects.filter(status=Table.Status.ERROR).count(),
        "is_admin": admin,
    }
    return _TEMPLATE.render(ctx)


def _worst_open_incident(table: Table) -> dict | None:
    """The table's worst unresolved incident by the ORM, table by table (the "why" column)."""
    found = (
        Incident.objects.filter(table=table)
        .exclude(status="resolved")
        .order_by("-severity_rank", "first_version", "incident_id")
        .first()
    )
    if found is None:
        return None
    return {k: getattr(found, k) for k in ("pk", "headline", "severity", "status")}


_TEMPLATE = engines["django"].from_string(
    (Path(__file__).parent / "overview_reference.html").read_text()
)
