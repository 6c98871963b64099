"""Whole-history analyses of a registered table, for the API and the dashboard.

`table_analysis(table)` reads the table's log up to the version stored in the database,
audits it (without reading data files: the per-commit findings with witnesses are already
stored by the ingest), and returns the isolation settings, the partitioning recommendations
and the hotspots. The result is cached under (table.id, table.last_seen_version): the log
below a stored version never changes, so a cached result is exact until new commits are
stored, and repeated requests cost one cache read.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.core.cache import cache

from audit.core.advice.isolation import isolation_settings
from audit.core.advice.partitioning import recommend_partitioning
from audit.core.history.summary import History
from audit.core.jsonsafe import json_safe
from audit.core.runs.table import LOG_ONLY, AuditedTable, open_table
from audit.core.writers import writer_telemetry
from audit.models import Table
from audit.reads.cache import analysis_cache_key, table_key
from audit.trust.paths import check_registered

# Histories are large; keep only a couple per process for the explain endpoint.
_HISTORIES: OrderedDict[tuple[str, int | None], History] = OrderedDict()
_HISTORIES_MAX = 2
_HISTORIES_LOCK = threading.Lock()


def table_history(table: Table) -> History:
    """The table's history up to its stored version (DeltaAuditError if unreadable)."""
    key = (table_key(table), table.last_seen_version)
    with _HISTORIES_LOCK:
        if key in _HISTORIES:
            _HISTORIES.move_to_end(key)
            return _HISTORIES[key]
    history = open_table(check_registered(table.uri)).history(end=table.last_seen_version)
    with _HISTORIES_LOCK:
        _HISTORIES[key] = history
        while len(_HISTORIES) > _HISTORIES_MAX:
            _HISTORIES.popitem(last=False)
    return history


def table_analysis(table: Table) -> dict[str, Any]:
    """Isolation settings, partitioning recommendations and hotspots of `table`.

    Returns {"table", "version", "computed_at", "isolation_settings", "recommendations",
    "hotspots", "writers"}. Raises DeltaAuditError when the log cannot be read.
    """
    key = analysis_cache_key(table)
    cached = cache.get(key) if table.last_seen_version is not None else None
    if cached is not None:
        return cached
    history = table_history(table)
    result = AuditedTable.of(history, LOG_ONLY).audit(history)
    analysis = json_safe(
        {
            "table": table.id,
            "version": history.state.version,
            "computed_at": int(time.time() * 1000),
            "isolation_settings": isolation_settings(history, result),
            "recommendations": recommend_partitioning(history, result),
            "hotspots": [h.as_dict() for h in result.hotspots],
            "writers": writer_telemetry(history, result.commits),
        }
    )
    if table.last_seen_version is not None:  # nothing stored yet: the log is still moving
        cache.set(key, analysis, settings.AUDIT_API_ANALYSIS_CACHE_SECONDS)
    return analysis
