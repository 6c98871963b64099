"""Alert rules, channels and deliveries (in the spirit of healthchecks' Channel/Notification).

Rules and channels belong to a project, as tables do (audit/trust/access.py decides who sees
and manages them): a rule matches only its own project's tables and sends only through its own
project's channels, so a delivery is about one project.

A Delivery is one alert about one finding, for one rule and one channel, at one *level*
(severity and confirmation together, see `alert_level`). The unique constraint on
(finding, rule, channel, level) is what makes "at most one alert per rule and channel, and a new
one when the finding escalates" hold even when two scans race.
"""

from __future__ import annotations

import fnmatch

from django.db import models

from audit.core.vocab import HEALTH_FINDING_PREFIX, SEVERITY_RANK
from audit.models import Finding, Incident, Project, Table, default_project_id

__all__ = [
    "HEALTH_FINDING_PREFIX",
    "AlertRule",
    "Channel",
    "Delivery",
    "IncidentEvent",
    "error_shown",
]


HIDDEN_ERROR = "failed (the details are shown to the project owners)"


def error_shown(text: str, manager: bool) -> str:
    """What a user sees of a channel's or delivery's stored error text.

    The text is scrubbed when stored, but it still names the channel's host and says what the
    endpoint answered; like the channel's recipients it is for those who manage the channel's
    project (its owners and administrators: `manager`).
    """
    return text if manager or not text else HIDDEN_ERROR


def alert_level(severity: str, confirmed: bool) -> int:
    """A number that grows when a finding escalates: severity first, then confirmation.
    Unknown severities rank as info, here and in `matches`."""
    return SEVERITY_RANK.get(severity, 0) * 2 + (1 if confirmed else 0)


class Channel(models.Model):
    class Kind(models.TextChoices):
        WEBHOOK = "webhook"
        SLACK = "slack"
        EMAIL = "email"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="channels", default=default_project_id
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # webhook: {"url", "secret"}; slack: {"url"}; email: {"emails": [...]}
    config = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    # Set when a permanent failure (HTTP 4xx other than 429) disabled the channel.
    disabled_reason = models.TextField(blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def url(self) -> str:
        value = self.config.get("url") if isinstance(self.config, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def secret(self) -> str:
        value = self.config.get("secret") if isinstance(self.config, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def emails(self) -> list[str]:
        value = self.config.get("emails") if isinstance(self.config, dict) else None
        return [e for e in value if isinstance(e, str)] if isinstance(value, list) else []


class AlertRule(models.Model):
    class Target(models.TextChoices):
        # What a rule notifies about: each finding (the rules from before incidents), or each
        # incident: when it opens, grows past `growth_threshold`, resolves (never per symptom).
        FINDINGS = "findings"
        INCIDENTS = "incidents"

    class HealthMetric(models.TextChoices):
        # Health rules fire when the table's stored health reaches `threshold`.
        NONE = "", "— (a findings rule)"
        SMALL_FILES = "small_files", "small files (count)"
        SMALL_FILE_RATIO = "small_file_ratio", "small files (share of files, 0..1)"
        VACUUMABLE_BYTES = "vacuumable_bytes", "vacuumable bytes"
        CHECKPOINT_LAG = "checkpoint_lag", "commits since the last checkpoint"
        PUBLISH_LAG_VERSIONS = "publish_lag_versions", "staged commits not yet published"
        PUBLISH_LAG_SECONDS = "publish_lag_seconds", "seconds the oldest staged commit waited"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="alert_rules", default=default_project_id
    )
    name = models.CharField(max_length=100)
    kinds = models.JSONField(default=list, blank=True)  # finding kinds; empty = every kind
    min_severity = models.CharField(
        max_length=10, choices=Finding.Severity.choices, default=Finding.Severity.WARNING
    )
    confirmed_only = models.BooleanField(default=False)
    # fnmatch pattern matched against the name or URI of the project's tables; empty = every
    # table of the project.
    table_pattern = models.CharField(max_length=500, blank=True)
    channels = models.ManyToManyField(Channel, related_name="rules", blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    health_metric = models.CharField(
        max_length=20, choices=HealthMetric.choices, default="", blank=True
    )
    threshold = models.FloatField(null=True, blank=True)
    target = models.CharField(max_length=10, choices=Target.choices, default=Target.FINDINGS)
    # An incident rule notifies again when this many new occurrences (versions it recurred
    # at) came since its last notification of the incident.
    growth_threshold = models.PositiveIntegerField(default=10)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def matches(self, finding: Finding, table: Table) -> bool:
        if not self.enabled or self.target != AlertRule.Target.FINDINGS:
            return False
        if finding.kind.startswith(HEALTH_FINDING_PREFIX) or self.health_metric:
            # A health finding is raised for one health rule, and alerts through that rule only.
            if (finding.details or {}).get("rule_id") != self.id:
                return False
        elif self.kinds and finding.kind not in self.kinds:
            return False
        if SEVERITY_RANK.get(finding.severity, 0) < SEVERITY_RANK.get(self.min_severity, 0):
            return False
        if self.confirmed_only and not finding.confirmed:
            return False
        return self.matches_table(table)

    def matches_incident(self, incident: Incident, table: Table) -> bool:
        """An incident rule's filters: its severity, its causes (`kinds` names causes for an
        incident rule; empty = every cause), its table."""
        if not self.enabled or self.target != AlertRule.Target.INCIDENTS:
            return False
        if self.kinds and incident.cause not in self.kinds:
            return False
        if SEVERITY_RANK.get(incident.severity, 0) < SEVERITY_RANK.get(self.min_severity, 0):
            return False
        return self.matches_table(table)

    def matches_table(self, table: Table) -> bool:
        if table.project_id != self.project_id:
            return False  # another project's table: never, whatever the pattern
        pattern = self.table_pattern.strip()
        if not pattern:
            return True
        # fnmatchcase: the same answer on every OS (fnmatch folds case on Windows only).
        return fnmatch.fnmatchcase(table.name, pattern) or fnmatch.fnmatchcase(table.uri, pattern)


class IncidentEvent(models.TextChoices):
    OPENED = "opened"  # first seen open (or open again after a resolution)
    GREW = "grew"  # growth_threshold new occurrences since the last notification
    RESOLVED = "resolved"


class Delivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"

    # Null for a "send test" delivery, which has no finding and no rule, and for an incident's.
    finding = models.ForeignKey(
        Finding, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    # An incident rule's notification: the incident, what happened to it (`event`) and how
    # many occurrences it had then (the next "grew" counts from there).
    incident = models.ForeignKey(
        Incident, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=10, choices=IncidentEvent.choices, blank=True)
    occurrences = models.IntegerField(null=True, blank=True)
    rule = models.ForeignKey(
        AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    level = models.SmallIntegerField(default=0)  # alert_level(severity, confirmed)
    severity = models.CharField(max_length=10, blank=True)  # as of the alert
    confirmed = models.BooleanField(default=False)
    escalation = models.BooleanField(default=False)  # an earlier level was alerted already
    is_test = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_by = models.CharField(max_length=200, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    response_code = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["finding", "rule", "channel", "level"], name="alerting_delivery_once"
            ),
            # One notification per incident, rule, channel, event and occurrence count, even
            # when two scans race.
            models.UniqueConstraint(
                fields=["incident", "rule", "channel", "event", "occurrences"],
                condition=models.Q(incident__isnull=False),
                name="alerting_incident_once",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="alerting_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"delivery {self.id} ({self.status})"


class ScanState(models.Model):
    """A singleton: how far the escalation scan has looked (Finding.last_seen)."""

    name = models.CharField(max_length=50, unique=True)
    checked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name}: {self.checked_until}"
