"""Finding rows: keyed by what they say, upserted per re-analysed scope, flips recorded.

A finding's row is found again by its key (kind, version, related versions), so a replayed or
re-audited chunk refreshes the rows it found before instead of adding new ones. Every status
change is a FindingFlip, which alerting reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from audit.core import model
from audit.core.jsonsafe import clean_text, json_safe
from audit.core.vocab import (
    HEALTH_KINDS,
    SCAN_KINDS,
    SEVERITY_RANK,
    TABLE_LEVEL_KINDS,
    Severity,
)
from audit.ingest.columns import fit_columns
from audit.models import Finding, FindingFlip, Table

OPEN, RESOLVED = Finding.Status.OPEN, Finding.Status.RESOLVED

FINDING_FIELDS = (
    "kind",
    "severity",
    "version",
    "related_versions",
    "confirmed",
    "summary",
    "explanation",
    "witness",
    "details",
)


def finding_key(kind: str, version: int, related: Iterable[int]) -> str:
    """model.Finding.key as text; long related lists are hashed so the key stays indexable.
    A growing kind (a retry storm) keys on its kind and first version: updated in place."""
    related_text = ",".join(str(v) for v in model.identity_versions(kind, related))
    if len(related_text) > 300:
        related_text = "sha1-" + hashlib.sha1(related_text.encode()).hexdigest()
    return f"{kind[:64]}:{version}:{related_text}"


def finding_fields(f: model.Finding) -> dict[str, Any]:
    """A core finding as the values of its row's FINDING_FIELDS."""
    values = {
        "kind": clean_text(f.kind)[:64],
        "severity": f.severity if f.severity in SEVERITY_RANK else Severity.INFO,
        "version": f.version,
        "related_versions": [int(v) for v in f.related_versions],
        "confirmed": bool(f.confirmed),
        "summary": clean_text(f.summary),
        "explanation": clean_text(f.explanation),
        "witness": stored_witness(f.witness),
        "details": json_safe(f.details or {}),
    }
    return fit_columns(Finding, values)


def stored_witness(witness: Any) -> Any:
    """A witness as stored: JSON-safe, with at most AUDIT_WITNESS_SAMPLE_ROWS sample rows even
    when it was computed elsewhere with another number (a Spark job, an imported audit)."""
    if witness is None:
        return None
    safe = json_safe(witness)
    rows = safe.get("sample_rows") if isinstance(safe, dict) else None
    if isinstance(rows, list):
        safe["sample_rows"] = rows[: max(settings.AUDIT_WITNESS_SAMPLE_ROWS, 0)]
    return safe


def findings_in(audit_result: Any, start: int, end: int) -> list[model.Finding]:
    """The commit-level findings of an audit at versions [start, end]."""
    findings = getattr(audit_result, "findings", None) or []
    return [f for f in findings if start <= f.version <= end and f.kind not in TABLE_LEVEL_KINDS]


def upsert_findings(
    table: Table,
    findings: list[model.Finding],
    *,
    scope: tuple[int, int] | None,
    table_level: bool = False,
    kinds: frozenset[str] | None = None,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Insert new findings, refresh re-found ones, resolve those of the scope no longer found.

    The scope is what was re-analysed: commit-level findings with a version in `scope`, or
    (`table_level=True`, scope None) every table-level finding. Only open findings of the
    scope can be resolved; a resolved finding that is found again is reopened.
    Returns (opened, resolved) counts. Call inside a transaction (it also moves the table's
    findings generation).
    """
    now = now or timezone.now()
    by_key: dict[str, model.Finding] = {}
    for f in findings:
        by_key.setdefault(finding_key(f.kind, f.version, f.related_versions), f)
    rows = Finding.objects.filter(table=table)
    in_scope = _scope(scope, table_level=table_level, kinds=kinds)
    existing = {row.key: row for row in rows.filter(in_scope | Q(key__in=list(by_key)))}
    in_scope_ids = set(rows.filter(in_scope).values_list("id", flat=True)) if existing else set()
    flips: list[FindingFlip] = []
    new_rows, changed = [], []
    for key, f in by_key.items():
        row = existing.get(key)
        if row is None:
            new_rows.append(
                Finding(table=table, key=key, first_seen=now, last_seen=now, **finding_fields(f))
            )
        else:
            changed.append(_found_again(row, f, now, flips))
    stale = [
        row
        for key, row in existing.items()
        if key not in by_key and row.status == OPEN and row.id in in_scope_ids
    ]
    for row in stale:
        flips.append(FindingFlip(finding=row, created=now, old_status=OPEN, new_status=RESOLVED))
        row.status, row.resolved_at = RESOLVED, now
    created = _write(table, new_rows, changed + stale, flips, now)
    return created, len(stale)


def _scope(scope: tuple[int, int] | None, *, table_level: bool, kinds: frozenset[str] | None) -> Q:
    """The rows this upsert re-analysed: the only ones it may resolve."""
    if kinds is not None:  # a producer of its own kinds (the orphan scan): only those
        return Q(kind__in=kinds)
    if table_level:
        return Q(kind__in=TABLE_LEVEL_KINDS)
    # Scan findings (the orphan scan) and health findings (audit.alerting.health_findings) are not the
    # audit's to resolve.
    return ~Q(kind__in=TABLE_LEVEL_KINDS | SCAN_KINDS | HEALTH_KINDS) & (
        Q(version__range=scope) if scope else Q()
    )


def _found_again(
    row: Finding, f: model.Finding, now: datetime, flips: list[FindingFlip]
) -> Finding:
    """Refresh a stored finding from the one found now, reopening it if it was resolved."""
    if row.status != OPEN:
        flips.append(FindingFlip(finding=row, created=now, old_status=row.status, new_status=OPEN))
        row.status, row.resolved_at = OPEN, None
    for name, value in finding_fields(f).items():
        setattr(row, name, value)
    row.last_seen = now
    return row


def _write(
    table: Table,
    new_rows: list[Finding],
    updated: list[Finding],
    flips: list[FindingFlip],
    now: datetime,
) -> int:
    """Create the new rows, save the updated ones and every flip. Returns how many were new."""
    created = Finding.objects.bulk_create(new_rows, batch_size=200)
    if any(row.pk is None for row in created):  # backends that do not return ids
        keys = [row.key for row in created]
        created = list(Finding.objects.filter(table=table, key__in=keys))
    flips.extend(
        FindingFlip(finding=row, created=now, old_status="", new_status=OPEN) for row in created
    )
    update_fields = ["status", "resolved_at", "last_seen", *FINDING_FIELDS]
    Finding.objects.bulk_update(updated, update_fields, batch_size=200)
    FindingFlip.objects.bulk_create(flips, batch_size=500)
    if created or updated:  # a re-found row changed too (last_seen): cached lists are stale
        Table.bump_findings(table.id)
    return len(created)
