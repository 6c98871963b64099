"""Celery tasks of the alerter (beat runs `process_alerts` every ALERT_INTERVAL_SECONDS).

Both steps are idempotent and claim their work atomically (see audit/alerting/delivery.py), so
a retried, duplicated or concurrent task never sends an alert twice.
"""

from __future__ import annotations

import time

from celery import shared_task
from django.db import InterfaceError, OperationalError

from audit.alerting import delivery, risk

TRANSIENT_ERRORS = (OperationalError, InterfaceError)
BUDGET_SECONDS = 20.0  # one pass never runs much longer than this; the next beat tick resumes


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def process_alerts() -> str:
    started = time.monotonic()
    scanned = delivery.scan()
    while scanned.flips >= 1000 and time.monotonic() - started < BUDGET_SECONDS:
        scanned = delivery.scan()  # a backlog of flips (e.g. a backfill): keep going
    worker = delivery.worker_name()
    sent = delivery.send_due(worker)
    while sent.claimed >= 100 and time.monotonic() - started < BUDGET_SECONDS:
        sent = delivery.send_due(worker)
    return f"{scanned.line()}; {sent.line()}"


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, max_retries=3)
def refresh_all_risks() -> str:
    return f"risk changed for {risk.refresh_risks()} tables"
