"""Dashboard pages: plain Django function views over the query layer (audit.reads.queries).

Every string that came from a Delta log (operation names, user names, predicates, parameters,
paths) is untrusted. Templates autoescape it; data for JavaScript goes through json_script and
is written into the page with textContent; the CSP (frontend.middleware) blocks inline script.

One module per page: overview (the tables), table (header, timeline tab, status poll),
analysis (analysis tab), commit, findings (list, detail, acknowledge), incidents (one
incident, acknowledge), explain.
"""

from __future__ import annotations

from frontend.views.analysis import (
    hotspot_heatmap,
    load_analysis,
    matrix_grid,
    normalise_analysis,
    table_analysis_page,
)
from frontend.views.commit import commit_detail
from frontend.views.common import SEVERITIES, is_admin
from frontend.views.explain import explain
from frontend.views.findings import (
    cycle_edges,
    finding_acknowledge,
    finding_detail,
    finding_reopen,
    findings_list,
    witness_table,
)
from frontend.views.health import table_diff_page, table_schema_page, table_writers_page
from frontend.views.history import table_history_page
from frontend.views.incidents import incident_acknowledge, incident_detail
from frontend.views.overview import RISK_HIGH, RISK_MEDIUM, TABLE_SORTS, index, risk_level
from frontend.views.table import backfill_status, table_detail, table_header, table_status

# Names other modules used before the split.
_table_header = table_header
_is_admin = is_admin

__all__ = [
    "RISK_HIGH",
    "RISK_MEDIUM",
    "SEVERITIES",
    "TABLE_SORTS",
    "backfill_status",
    "commit_detail",
    "cycle_edges",
    "explain",
    "finding_acknowledge",
    "finding_detail",
    "finding_reopen",
    "findings_list",
    "hotspot_heatmap",
    "incident_acknowledge",
    "incident_detail",
    "index",
    "load_analysis",
    "matrix_grid",
    "normalise_analysis",
    "risk_level",
    "table_analysis_page",
    "table_detail",
    "table_diff_page",
    "table_schema_page",
    "table_writers_page",
    "table_header",
    "table_history_page",
    "table_status",
    "witness_table",
]
