"""Stored incidents: one row per root cause of a table's findings (audit/core/incidents/).

Written only by `audit.ingest.incidents` (the tail recomputes a table's incidents from its
open findings and upserts them by `incident_id`, the core's 16-hex id, stable across runs);
the web and the API read them through audit/reads/ and record only who acknowledged one
(`Incident.acknowledge`, which acknowledges its findings too). Each Finding row names the one
incident it belongs to (`Finding.incident`). Imported by audit.models so Django registers it
in the `audit` app.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from audit.core.vocab import SEVERITY_ORDER, IncidentCause, IncidentStatus, choices

# A stored incident none of whose findings is open any more: resolved by the audit itself.
FINDINGS_RESOLVED = "its findings are resolved"


class Incident(models.Model):
    Severity = models.TextChoices("Severity", [(m.name, m.value) for m in SEVERITY_ORDER])
    Status = models.TextChoices("Status", [(m.name, m.value) for m in IncidentStatus])

    table = models.ForeignKey(
        "audit.Table", on_delete=models.CASCADE, related_name="incidents", db_index=False
    )
    incident_id = models.CharField(max_length=16)  # the cause key's id (core: CauseKey.id)
    cause = models.CharField(max_length=40, choices=choices(IncidentCause))
    headline = models.TextField()
    severity = models.CharField(max_length=10, choices=Severity.choices)
    # Worst first in every list: the severity's rank (critical 2 .. info 0).
    severity_rank = models.SmallIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices)
    first_version = models.BigIntegerField()
    last_version = models.BigIntegerField()
    # How many versions it occurred at, and its open findings: the alerts' growth threshold.
    occurrences = models.IntegerField(default=0)
    finding_count = models.IntegerField(default=0)
    writer = models.JSONField(default=dict, blank=True)
    operation = models.CharField(max_length=200, blank=True)
    scope = models.TextField(blank=True)
    damage = models.JSONField(default=dict, blank=True)  # Damage.as_dict(): paths shown_path'd
    repair = models.JSONField(default=list, blank=True)  # [{engine, code, does, does_not}]
    inspect = models.JSONField(default=list, blank=True)
    prevent = models.JSONField(default=list, blank=True)
    quiet_since = models.BigIntegerField(null=True, blank=True)
    resolved_because = models.TextField(blank=True)
    explanation = models.TextField(blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    # The last version it had occurred at when acknowledged: later occurrences make it growing.
    acknowledged_version = models.BigIntegerField(null=True, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    # When its status may change with no new commit (quiet, then resolved by time): the tail
    # recomputes the table's incidents then (audit/tail/incidents.py).
    recheck_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-severity_rank", "first_version", "incident_id"]
        constraints = [
            models.UniqueConstraint(fields=["table", "incident_id"], name="audit_incident_key")
        ]
        indexes = [
            # A table's incidents worst first, and filtered by status.
            models.Index(
                fields=["table", "-severity_rank", "first_version", "incident_id"],
                name="audit_incident_table",
            ),
            models.Index(fields=["table", "status"], name="audit_incident_tstatus"),
            # Every reader's list, newest first, filtered by status and severity.
            models.Index(fields=["status", "severity", "-id"], name="audit_incident_status"),
            models.Index(fields=["cause"], name="audit_incident_cause"),
            models.Index(
                fields=["recheck_at"],
                condition=models.Q(recheck_at__isnull=False),
                name="audit_incident_recheck",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cause} {self.incident_id} ({self.severity}, {self.status})"

    def acknowledge(self, user: Any) -> bool:
        """Record that `user` has seen the incident up to its last version, and acknowledge
        every one of its open findings not acknowledged yet (the first acknowledgement of each
        is kept). Returns True when this call acknowledged the incident or one of them.
        Later occurrences make it `growing` at the tail's next recompute."""
        # audit.models imports this module: its models are reached through the relations.
        finding_model = self.findings.model
        table_model = Incident.table.field.related_model
        now = timezone.now()
        with transaction.atomic():
            rows = Incident.objects.filter(pk=self.pk)
            claimed = rows.exclude(acknowledged_version__gte=self.last_version).update(
                acknowledged_by=user, acknowledged_at=now, acknowledged_version=self.last_version
            )
            # Nothing occurred after what was just seen: no longer growing until it recurs.
            rows.filter(status=IncidentStatus.GROWING).update(status=IncidentStatus.OPEN)
            findings = finding_model.objects.filter(
                incident=self, status="open", acknowledged_at__isnull=True
            ).update(acknowledged_by=user, acknowledged_at=now)
            if claimed or findings:
                table_model.bump_findings(self.table_id)
        self.refresh_from_db(
            fields=["acknowledged_by", "acknowledged_at", "acknowledged_version", "status"]
        )
        return bool(claimed or findings)
