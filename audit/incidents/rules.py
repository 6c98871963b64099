"""The incident status periods from the AUDIT_INCIDENT_* settings, for every path that groups
incidents (the tail, the one-shot command, Spark): the same settings give the same statuses."""

from __future__ import annotations

from django.conf import settings

from audit.core.incidents.status import StatusRules


def incident_rules() -> StatusRules:
    """When a recurring incident turns quiet (versions and seconds without an occurrence) and
    resolved; a negative setting counts as 0."""
    return StatusRules(
        quiet_versions=max(int(settings.AUDIT_INCIDENT_QUIET_VERSIONS), 0),
        quiet_ms=max(int(settings.AUDIT_INCIDENT_QUIET_SECONDS), 0) * 1000,
        resolve_ms=max(int(settings.AUDIT_INCIDENT_RESOLVE_SECONDS), 0) * 1000,
    )
