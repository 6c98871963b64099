"""A table's risk score, 0..100, from its open findings.

Each open finding weighs

    weight = SEVERITY_WEIGHT[severity] * (CONFIRMED_FACTOR if confirmed else 1)

with SEVERITY_WEIGHT = {info: 1, warning: 5, critical: 20} and CONFIRMED_FACTOR = 2, and

    risk = 100 * (1 - exp(-sum(weights) / SCALE)),   SCALE = 50

so the score is 0 with no open finding, grows with every finding, and saturates towards 100
without ever exceeding it: one confirmed critical finding (weight 40) scores 55.1, two 79.8,
a single warning 9.5, ten info findings 18.1. Resolved findings do not count.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count

from audit.core.vocab import Severity
from audit.models import Table
from audit.reads.queries import open_findings

SEVERITY_WEIGHT = {Severity.INFO: 1.0, Severity.WARNING: 5.0, Severity.CRITICAL: 20.0}
CONFIRMED_FACTOR = 2.0
SCALE = 50.0


def finding_weight(severity: str, confirmed: bool) -> float:
    return SEVERITY_WEIGHT.get(severity, 1.0) * (CONFIRMED_FACTOR if confirmed else 1.0)


def score(total_weight: float) -> float:
    """The saturating map from summed weights to 0..100, rounded to one decimal."""
    return round(100.0 * (1.0 - math.exp(-max(total_weight, 0.0) / SCALE)), 1)


def _weights_by_table(table_ids: Iterable[int] | None = None) -> dict[int, float]:
    rows = open_findings()  # acknowledged findings still weigh: the audit has not resolved them
    if table_ids is not None:
        rows = rows.filter(table_id__in=list(table_ids))
    totals: dict[int, float] = defaultdict(float)
    grouped = rows.values("table_id", "severity", "confirmed").annotate(n=Count("id"))
    for row in grouped.order_by():
        totals[row["table_id"]] += row["n"] * finding_weight(row["severity"], row["confirmed"])
    return totals


def compute_risk(table: Table | int) -> float:
    table_id = table if isinstance(table, int) else table.id
    return score(_weights_by_table([table_id]).get(table_id, 0.0))


def refresh_risk(table: Table | int) -> float:
    """Compute and store Table.risk for one table; returns it."""
    table_id = table if isinstance(table, int) else table.id
    risk = compute_risk(table_id)
    Table.objects.filter(id=table_id).update(risk=risk)
    if isinstance(table, Table):
        table.risk = risk
    return risk


def refresh_risks(table_ids: Iterable[int] | None = None) -> int:
    """Refresh the risk of the given tables (all when None) in one query; returns rows changed."""
    ids = None if table_ids is None else set(table_ids)
    totals = _weights_by_table(ids)
    tables = Table.objects.all() if ids is None else Table.objects.filter(id__in=ids)
    changed = 0
    for table_id, old in tables.values_list("id", "risk"):
        new = score(totals.get(table_id, 0.0))
        if old != new:
            changed += Table.objects.filter(id=table_id).update(risk=new)
    return changed
