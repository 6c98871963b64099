"""Periodic table discovery (beat, every AUDIT_DISCOVERY_INTERVAL_SECONDS) of the roots in
AUDIT_DISCOVERY_ROOTS: new tables are registered and tailed, vanished ones marked gone."""

from __future__ import annotations

from celery import shared_task

from audit.tail.discovery import discover_configured_roots


@shared_task(ignore_result=True)
def discover_roots() -> str:
    reports = discover_configured_roots()
    added = sum(len(r.added) for r in reports)
    gone = sum(len(r.gone) for r in reports)
    return f"discovered {len(reports)} roots: {added} tables added, {gone} gone"
