"""The overview page: every table with its risk and the findings that need attention."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods

from audit.core.errors import DeltaAuditError, one_line
from audit.core.vocab import SEVERITY_ORDER
from audit.models import Table
from audit.reads import cache, pages, queries
from audit.trust import access
from frontend.forms import RegisterTableForm
from frontend.views.common import is_admin, require_admin

TABLE_SORTS = pages.TABLE_SORTS  # the overview's sorts, declared with its read

# Risk scores are 0..100 (audit.alerting.risk): one confirmed critical finding scores ~55.
RISK_HIGH, RISK_MEDIUM = 50.0, 15.0


def show_attention(table: Table, attention: dict[str, int] | None = None) -> None:
    """Set the badges' `n_<severity>`: findings that need attention (open, unacknowledged),
    from `attention` or from the `attention_<severity>` annotations of with_open_counts()."""
    for severity in SEVERITY_ORDER:
        n = attention[severity] if attention else getattr(table, f"attention_{severity}", 0)
        setattr(table, f"n_{severity}", n)


def risk_level(table: Any) -> str:
    """The risk badge: high, medium, low, or unknown (nothing stored yet).

    From the risk score when the scorer has set one, else from the worst finding needing
    attention.
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


def _has_health(table: Table) -> bool:
    try:
        return table.health is not None
    except ObjectDoesNotExist:  # no stored health yet (nothing ingested)
        return False


@login_required
@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    form = RegisterTableForm()
    if request.method == "POST":
        require_admin(request.user, "register tables")
        form = RegisterTableForm(request.POST)
        if form.is_valid():
            table = _register(request, form)
            if table is not None:
                return redirect("frontend:table", table_id=table.id)

    admin = is_admin(request.user)
    # The list is the same for every reader of the same projects (an administrator sees one
    # more sentence), cached under their project set; the register form (CSRF token) and the
    # times since are filled in per request.
    content = cache.fragment(
        lambda: cache.page_generation(pages.OVERVIEW_PAGE),
        request,
        lambda: _overview_content(request, admin),
        f"{admin}:{access.scope_of(access.projects(request))}",
    )
    register = ""
    if admin:
        ctx = {"form": form, "show_form": request.method == "POST"}
        register = render_to_string("frontend/_register_form.html", ctx, request=request)
    content = cache.with_times(content.replace(cache.REGISTER_MARK, register))
    return render(request, "frontend/index.html", {"content": content})


def _overview_content(request: HttpRequest, admin: bool) -> str:
    """The overview's content block: totals and the page of tables."""
    query = request.GET.get("q", "").strip()[:200]
    sort = request.GET.get("sort", "findings")
    if sort not in TABLE_SORTS:
        sort = "findings"
    projects = access.projects(request)
    n_tables, n_errors = queries.table_counts(projects)
    if query:
        listed = pages.overview_search(projects, sort, query)
    else:
        # Unfiltered, the list holds every table: its count is the one just read.
        listed = pages.CountedTables(projects, sort, n_tables)
    page = Paginator(listed, 100).get_page(request.GET.get("page"))
    why = pages.worst_open_incidents(table.id for table in page)
    for table in page:
        table.why = why.get(table.id)
        show_attention(table)
        table.risk_level = risk_level(table)
        table.health_or_none = getattr(table, "health", None) if _has_health(table) else None
    rows = cache.row_fragments(
        "frontend/_index_row.html",
        [(_shown(table), table) for table in page],
        lambda table: render_to_string("frontend/_index_row.html", {"t": table}),
    )
    ctx = {
        "page": page,
        "rows": rows,
        "query": query,
        "sort": sort,
        "sorts": list(TABLE_SORTS),
        "register": cache.REGISTER_MARK,
        "totals": queries.attention_totals(projects),
        "n_tables": n_tables,
        "n_errors": n_errors,
        "is_admin": admin,
    }
    return render_to_string("frontend/_index_content.html", ctx)


# What a row of the overview shows of its table (frontend/_index_row.html reads these).
_ROW_FIELDS = (
    "id", "name", "uri", "risk", "risk_level", "status", "last_error", "last_seen_version",
    "backfill_fraction", "last_commit_at", "lag", "last_tail_at", "n_critical", "n_warning",
    "n_info",
)  # fmt: skip
_ROW_HEALTH = ("small_files", "vacuumable_bytes", "checkpoint_lag")


def _shown(table: Table) -> tuple:
    """The key of a table's rendered row: every value the row template reads."""
    health = table.health_or_none
    shown = None if health is None else tuple(getattr(health, f) for f in _ROW_HEALTH)
    why = None if table.why is None else tuple(sorted(table.why.items()))
    return (*(getattr(table, f) for f in _ROW_FIELDS), shown, why)


def _register(request: HttpRequest, form: RegisterTableForm) -> Table | None:
    """Validate the URI (allowed root, readable log), store the table, start its tail."""
    from audit.ingest.tables import register_table
    from workers.tasks import enqueue_tail

    uri, name = form.cleaned_data["uri"], form.cleaned_data["name"] or None
    try:
        # Into the default project; a DeltaAuditError names what is wrong with the URI or log.
        table, created = register_table(uri, name)
    except DeltaAuditError as err:
        form.add_error("uri", one_line(err, empty="unreadable table"))
        return None
    if not created:
        messages.info(request, "This table was already registered.")
        return table
    if enqueue_tail(table.id):
        messages.success(request, "Table registered; its history is being ingested.")
    else:
        messages.warning(
            request,
            "Table registered, but the task queue is unreachable: ingestion starts when the "
            "workers' next tail pass runs.",
        )
    return table
