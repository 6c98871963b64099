"""Alerts on table health, through the existing finding -> rule -> delivery path.

This module alone writes the health alert findings. The tail (and the Spark path) call
`alert_on_health` with what `audit.ingest.health_store.record_health` returned, AFTER the
chunk's transaction has committed, so an alert never stands for commits that were rolled back.
Two sources of findings:
- `schema_change` / `protocol_change` (info): one per changing version, the diff in the
  summary and explanation. A findings rule with those kinds alerts on any such change.
- `health_<metric>`: one per health rule (AlertRule.health_metric + threshold) and table,
  open while the stored health is at or above the threshold, resolved when it drops below.
  It matches only its own rule (AlertRule.matches), so thresholds are per rule.
The commit-level audit never resolves these kinds (they are not its findings):
`audit.ingest.findings.upsert_findings` leaves HEALTH_KINDS (audit.core.vocab) alone.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.alerting.models import AlertRule
from audit.core import model
from audit.core.vocab import HEALTH_FINDING_PREFIX, FindingKind, Severity
from audit.ingest.findings import finding_fields
from audit.ingest.health_store import HealthOutcome
from audit.models import Finding, FindingFlip, Table

CHANGE_KINDS = {"schema": FindingKind.SCHEMA_CHANGE, "protocol": FindingKind.PROTOCOL_CHANGE}


def alert_on_health(table: Table, outcome: HealthOutcome | None) -> None:
    """The alert findings for what a stored chunk's health showed. Call after it committed."""
    if outcome is None:
        return
    raise_change_findings(table, outcome.changes)
    if outcome.fields is not None:
        evaluate_health_rules(table, outcome.fields)


def raise_change_findings(table: Table, changes: list[dict[str, Any]]) -> int:
    """An info finding per schema or protocol change not seen before. Returns how many."""
    wanted = {
        f"{CHANGE_KINDS[c['kind']]}:{c['version']}": c for c in changes if c["kind"] in CHANGE_KINDS
    }
    if not wanted:
        return 0
    known = set(
        Finding.objects.filter(table=table, key__in=list(wanted)).values_list("key", flat=True)
    )
    now = timezone.now()
    created = []
    for key, c in wanted.items():
        if key in known:
            continue
        f = model.Finding(
            kind=CHANGE_KINDS[c["kind"]],
            severity=Severity.INFO,
            version=c["version"],
            related_versions=[],
            confirmed=True,  # read from the log, not inferred
            summary=f"v{c['version']} changed the table {c['summary']}"[:2000],
            explanation=(
                f"Version {c['version']} changed the table's {c['kind']}. Any transaction in "
                "flight at that moment must fail (MetadataChanged/ProtocolChanged). Diff: "
                + json.dumps(c.get("diff") or {}, ensure_ascii=False, default=str)[:4000]
            ),
            details={"change": {"kind": c["kind"], "diff": c.get("diff") or {}}},
        )
        created.append(
            Finding(table=table, key=key, first_seen=now, last_seen=now, **finding_fields(f))
        )
    with transaction.atomic():
        rows = Finding.objects.bulk_create(created)
        if any(r.pk is None for r in rows):
            rows = list(Finding.objects.filter(table=table, key__in=[r.key for r in rows]))
        FindingFlip.objects.bulk_create(
            FindingFlip(finding=r, created=now, old_status="", new_status="open") for r in rows
        )
        if rows:
            Table.bump_findings(table.id)
    return len(rows)


def metric_value(fields: dict[str, Any], metric: str) -> float:
    return float(fields.get(metric) or 0)


def evaluate_health_rules(table: Table, fields: dict[str, Any]) -> tuple[int, int]:
    """Open/refresh or resolve each health rule's finding for `table`. Returns (opened, resolved)."""
    rules = [
        r
        for r in AlertRule.objects.filter(enabled=True).exclude(health_metric="")
        if r.threshold is not None and r.matches_table(table)
    ]
    now = timezone.now()
    opened = resolved = 0
    for rule in rules:
        value = metric_value(fields, rule.health_metric)
        key = f"{HEALTH_FINDING_PREFIX}{rule.health_metric}:rule{rule.id}"
        row = Finding.objects.filter(table=table, key=key).first()
        if value >= rule.threshold:
            opened += _open(table, rule, key, row, value, fields, now)
        elif row is not None and row.status == Finding.Status.OPEN:
            with transaction.atomic():
                row.status, row.resolved_at = Finding.Status.RESOLVED, now
                row.save(update_fields=["status", "resolved_at"])
                FindingFlip.objects.create(
                    finding=row, created=now, old_status="open", new_status="resolved"
                )
                Table.bump_findings(table.id)
            resolved += 1
    return opened, resolved


def _open(
    table: Table,
    rule: AlertRule,
    key: str,
    row: Finding | None,
    value: float,
    fields: dict[str, Any],
    now: Any,
) -> int:
    metric = rule.health_metric
    summary = (
        f"{metric.replace('_', ' ')} is {value:g} at v{fields['version']}, "
        f"at or above the rule's threshold {rule.threshold:g}"
    )
    values = {
        "kind": HEALTH_FINDING_PREFIX + metric,
        "severity": rule.min_severity,
        "version": fields["version"],
        "related_versions": [],
        "confirmed": True,
        "summary": summary,
        "explanation": f"Rule '{rule.name}' watches {metric}; see the table's health panel.",
        "details": {
            "rule_id": rule.id,
            "metric": metric,
            "value": value,
            "threshold": rule.threshold,
        },
        "last_seen": now,
    }
    with transaction.atomic():  # refreshed (last_seen, value) or new: the lists change
        Table.bump_findings(table.id)
        if row is None:
            row = Finding.objects.create(table=table, key=key, first_seen=now, **values)
            FindingFlip.objects.create(finding=row, created=now, old_status="", new_status="open")
            return 1
        reopened = row.status != Finding.Status.OPEN
        for name, v in values.items():
            setattr(row, name, v)
        if reopened:
            FindingFlip.objects.create(
                finding=row, created=now, old_status=row.status, new_status="open"
            )
            row.status, row.resolved_at = Finding.Status.OPEN, None
        row.save()
    return int(reopened)
