"""The `"health"` and `"changes"` sections of `manage.py audit --json`."""

from __future__ import annotations

from typing import Any

from audit.core.changes import changes_from_history, link_findings
from audit.core.errors import DeltaAuditError, one_line
from audit.core.health import health_of_history
from audit.core.summary import History


def add_health_and_changes(report: dict[str, Any], history: History) -> None:
    """Add both sections in place; a health that cannot be computed says why, the rest stays."""
    try:
        report["health"] = health_of_history(history)
    except DeltaAuditError as err:
        report["health"] = {"error": one_line(err, limit=2000)}
    report["changes"] = changes_from_history(history)
    link_findings(report["findings"], report["changes"])
