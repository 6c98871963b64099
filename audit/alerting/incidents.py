"""From incidents to deliveries: one notification when an incident opens, one when it has grown
by a rule's `growth_threshold` occurrences since its last notification, one when it resolves;
never one per symptom.

`scan_incidents` runs inside `delivery.scan` (the worker's beat task): the candidates are the
incidents whose stored facts changed since its previous pass (`Incident.last_seen`, moved by
the tail's ingest only on a change; the margin of the findings scan covers transactions that
committed late). What to send is decided from the incident as it is now and the last
notification sent for it per (rule, channel), so a backlog (a backfill that revealed forty
occurrences chunk by chunk) is one "opened" with the count it has by then, and a repeated or
racing scan creates nothing twice (unique (incident, rule, channel, event, occurrences) and
`ignore_conflicts`). The Delivery rows are then sent by `delivery.send_due` like any other.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max

from audit.alerting.models import (
    AlertRule,
    Delivery,
    IncidentEvent,
    ScanState,
    alert_level,
)
from audit.alerting.transports import Alert
from audit.core.vocab import IncidentStatus
from audit.models import Incident

SCAN_STATE = "incidents"
RESOLVED = IncidentStatus.RESOLVED.value


def scan_incidents(rules: list[AlertRule], now: datetime) -> int:
    """Create the deliveries the incidents changed since the last pass call for. Call inside
    the scan's transaction. Returns how many were created."""
    state, _ = ScanState.objects.get_or_create(name=SCAN_STATE)
    margin = timedelta(seconds=settings.ALERT_SCAN_MARGIN_SECONDS)
    since = (state.checked_until or now) - margin
    incident_rules = [r for r in rules if r.target == AlertRule.Target.INCIDENTS]
    created = 0
    if incident_rules:
        changed = Incident.objects.filter(last_seen__gte=since).select_related("table")
        channels = {rule.id: _own_channels(rule) for rule in incident_rules}
        after = 0
        while batch := list(changed.filter(id__gt=after).order_by("id")[:500]):
            created += _create(batch, incident_rules, channels, now)
            after = batch[-1].id
    ScanState.objects.filter(id=state.id).update(checked_until=now)
    return created


def _own_channels(rule: AlertRule) -> list[Any]:
    """The rule's channels of its own project (the forms and the API refuse others; a row
    edited by hand too), read once a pass, not once an incident."""
    return [c for c in rule.channels.all() if c.project_id == rule.project_id]


def _create(
    incidents: list[Incident],
    rules: list[AlertRule],
    channels: dict[int, list[Any]],
    now: datetime,
) -> int:
    last = _last_notifications([i.id for i in incidents])
    new: list[Delivery] = []
    for incident in incidents:
        for rule in rules:
            if not rule.matches_incident(incident, incident.table):
                continue
            for channel in channels[rule.id]:
                event = next_event(incident, rule, last.get((incident.id, rule.id, channel.id)))
                if event is None:
                    continue
                new.append(
                    Delivery(
                        incident=incident,
                        rule=rule,
                        channel=channel,
                        event=event,
                        occurrences=incident.occurrences,
                        level=alert_level(incident.severity, False),
                        severity=incident.severity,
                        escalation=event != IncidentEvent.OPENED,
                        next_attempt_at=now,
                    )
                )
    Delivery.objects.bulk_create(new, batch_size=500, ignore_conflicts=True)
    return len(new)


def _last_notifications(incident_ids: list[int]) -> dict[tuple[int, int, int], tuple[str, int]]:
    """(event, occurrences) of the last delivery per (incident, rule, channel)."""
    rows = (
        Delivery.objects.filter(incident_id__in=incident_ids, is_test=False)
        .values("incident_id", "rule_id", "channel_id")
        .annotate(last=Max("id"))
        .order_by()
    )
    ids = [row["last"] for row in rows]
    found = Delivery.objects.filter(id__in=ids).values_list(
        "incident_id", "rule_id", "channel_id", "event", "occurrences"
    )
    return {(i, r, c): (event, occurrences or 0) for i, r, c, event, occurrences in found}


def next_event(
    incident: Incident, rule: AlertRule, last: tuple[str, int] | None
) -> IncidentEvent | None:
    """What to notify of the incident now, given the last notification (None: never): it
    opened (or opened again after a resolution), it grew past the rule's threshold, or it
    resolved; None when nothing new is to be said."""
    resolved = incident.status == RESOLVED
    if last is None or last[0] == IncidentEvent.RESOLVED:
        return None if resolved else IncidentEvent.OPENED
    if resolved:
        return IncidentEvent.RESOLVED
    if incident.occurrences - last[1] >= max(rule.growth_threshold, 1):
        return IncidentEvent.GREW
    return None


def incident_url(incident: Incident) -> str:
    base = settings.ALERT_SITE_URL.rstrip("/")
    return f"{base}/tables/{incident.table_id}/incidents/{incident.pk}/"  # the incident page


def build_incident_alert(delivery: Delivery) -> Alert:
    """The alert of an incident's delivery: what happened to it, its headline and damage."""
    incident = delivery.incident
    assert incident is not None
    table = incident.table
    damage: dict[str, Any] = incident.damage if isinstance(incident.damage, dict) else {}
    payload = {
        "event": f"incident.{delivery.event}",
        "delivery_id": delivery.id,
        "table": {"id": table.id, "name": table.name, "uri": table.uri},
        "incident": {
            "pk": incident.pk,
            "id": incident.incident_id,
            "cause": incident.cause,
            "headline": incident.headline,
            "severity": delivery.severity or incident.severity,
            "status": incident.status,
            "first_version": incident.first_version,
            "last_version": incident.last_version,
            "occurrences": delivery.occurrences,
            "findings": incident.finding_count,
            "rows_wrong_now": damage.get("rows_wrong_now"),
            "resolved_because": incident.resolved_because,
        },
        "rule": {"id": delivery.rule_id, "name": delivery.rule.name if delivery.rule else ""},
        "dashboard_url": incident_url(incident),
    }
    what = {"opened": "opened", "grew": "grew", "resolved": "resolved"}.get(delivery.event, "")
    subject = (
        f"[Delta Audit] {str(payload['incident']['severity']).upper()} incident {what} in "
        f"{table.name or table.uri}: {incident.cause}"
    )
    lines = [
        incident.headline,
        "",
        f"Table: {table.name} ({table.uri})",
        f"Versions {incident.first_version}..{incident.last_version}; "
        f"{delivery.occurrences} occurrence(s), {incident.finding_count} finding(s)",
        f"Status: {incident.status}"
        + (f" ({incident.resolved_because})" if incident.resolved_because else ""),
        f"Rule: {payload['rule']['name']}",
        "",
        incident.explanation,
        "",
        f"Details: {payload['dashboard_url']}",
    ]
    return Alert(delivery.id, subject, payload, lines)
