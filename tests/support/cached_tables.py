"""The table the cache tests read (tests/app/test_findings_cache.py, test_cached_pages_are_never_stale.py): a
stored table with a warning at v3 and a critical finding at v5, both reorders."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from audit.core import model
from audit.core.vocab import FindingKind, Severity
from audit.ingest.findings import upsert_findings
from audit.models import Table

REORDER = FindingKind.WRITE_SERIALIZABLE_REORDER


def finding(version: int, severity: Severity = Severity.WARNING, kind=REORDER) -> model.Finding:
    return model.Finding(kind, severity, version, [version - 1], False, f"at v{version}", "why")


def orders_table() -> Table:
    table = Table.objects.create(
        uri="/data/orders", name="orders", status="ok", last_seen_version=9,
        latest_version_in_log=9, last_commit_at=timezone.now() - timedelta(minutes=5),
    )  # fmt: skip
    upsert_findings(table, [finding(3), finding(5, Severity.CRITICAL)], scope=(0, 9))
    return table
