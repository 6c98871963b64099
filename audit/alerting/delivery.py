"""From findings to sent alerts, reliably.

Two steps, both safe to run concurrently and to repeat (Celery may retry or duplicate tasks):

1. `scan()` turns new findings into Delivery rows. Candidates are the findings of unprocessed
   FindingFlip rows (opened / reopened) plus the open findings touched since the last scan
   (`Finding.last_seen`), which is how escalations (severity rises, or the finding becomes
   confirmed) are noticed: upserts do not flip the status. A delivery is created for each
   enabled rule that matches and each of its enabled channels, only when the finding's level
   (`alert_level`) is above every level already alerted for that (rule, channel). The unique
   constraint (finding, rule, channel, level) plus `ignore_conflicts` make a racing second scan
   a no-op. Flips are marked processed in the same transaction as the deliveries are created.

2. `send_due()` claims due deliveries one by one with a conditional UPDATE
   (pending -> sending, like healthchecks' sendalerts claiming a Flip) and sends each claimed one
   once. Success -> sent. A transient failure -> pending again, `next_attempt_at` pushed back
   exponentially (celery's own backoff function) until ALERT_MAX_ATTEMPTS. A permanent failure
   (HTTP 4xx other than 429, unusable configuration) -> failed, and the channel is disabled with
   `disabled_reason`. A claim whose worker died is released after ALERT_CLAIM_SECONDS, far above
   the HTTP timeout, so a slow-but-alive worker is never raced.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Prefetch
from django.utils import timezone

from audit.alerting import risk
from audit.alerting.incidents import build_incident_alert, scan_incidents
from audit.alerting.models import AlertRule, Channel, Delivery, ScanState, alert_level
from audit.alerting.transports import Alert, TransportError, transport_for
from audit.core.errors import one_line
from audit.models import Finding, FindingFlip

log = logging.getLogger(__name__)

SCAN_STATE = "escalations"
ID_CHUNK = 500


@dataclass
class _Tally:
    """Counts a pass returns; `line()` is the one-line summary its task reports."""

    LINE: ClassVar[str] = ""

    def line(self) -> str:
        return self.LINE.format(**asdict(self))


@dataclass
class ScanResult(_Tally):
    LINE: ClassVar[str] = (
        "scanned {flips} flips, {candidates} findings, {created} new deliveries"
        " ({incidents} of incidents)"
    )
    flips: int = 0
    candidates: int = 0
    created: int = 0
    incidents: int = 0


@dataclass
class SendResult(_Tally):
    LINE: ClassVar[str] = "claimed {claimed}: sent {sent}, retrying {retrying}, failed {failed}"
    claimed: int = 0
    sent: int = 0
    retrying: int = 0
    failed: int = 0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------- scan


def scan(now: datetime | None = None, *, limit: int = 1000) -> ScanResult:
    """Create the deliveries that new and escalated findings call for (one batch of flips)."""
    now = now or timezone.now()
    result = ScanResult()
    flips = list(
        FindingFlip.objects.filter(processed__isnull=True)
        .order_by("created", "id")
        .values_list("id", "finding_id")[:limit]
    )
    result.flips = len(flips)
    state, _ = ScanState.objects.get_or_create(name=SCAN_STATE)
    margin = timedelta(seconds=settings.ALERT_SCAN_MARGIN_SECONDS)
    # The margin covers ingest transactions that stamped last_seen before our previous scan but
    # committed after it; re-looking at a finding is harmless (deliveries are idempotent).
    since = (state.checked_until or now) - margin
    touched = Finding.objects.filter(status=Finding.Status.OPEN, last_seen__gte=since)
    candidate_ids = {finding_id for _, finding_id in flips}
    candidate_ids.update(touched.values_list("id", flat=True))
    result.candidates = len(candidate_ids)
    rules = list(
        AlertRule.objects.filter(enabled=True).prefetch_related(
            Prefetch("channels", queryset=Channel.objects.filter(enabled=True))
        )
    )
    ids = sorted(candidate_ids)
    with transaction.atomic():
        for start in range(0, len(ids), ID_CHUNK):
            result.created += _create_deliveries(ids[start : start + ID_CHUNK], rules, now)
        # Incident rules: one notification per incident event, never one per finding.
        result.incidents = scan_incidents(rules, now)
        result.created += result.incidents
        FindingFlip.objects.filter(
            id__in=[flip_id for flip_id, _ in flips], processed__isnull=True
        ).update(processed=now)
        ScanState.objects.filter(id=state.id).update(checked_until=now)
    tables = set(Finding.objects.filter(id__in=ids).values_list("table_id", flat=True))
    if flips:  # resolved findings lower a table's risk too
        flip_tables = FindingFlip.objects.filter(id__in=[f for f, _ in flips])
        tables.update(flip_tables.values_list("finding__table_id", flat=True))
    if tables:
        risk.refresh_risks(tables)
    return result


def _create_deliveries(finding_ids: list[int], rules: list[AlertRule], now: datetime) -> int:
    if not rules:
        return 0
    findings = Finding.objects.filter(id__in=finding_ids, status=Finding.Status.OPEN)
    alerted: dict[tuple[int, int, int], int] = {}
    rows = (
        Delivery.objects.filter(finding_id__in=finding_ids, is_test=False)
        .values("finding_id", "rule_id", "channel_id")
        .annotate(top=Max("level"))
        .order_by()
    )
    for row in rows:
        alerted[(row["finding_id"], row["rule_id"], row["channel_id"])] = row["top"]
    new: list[Delivery] = []
    for finding in findings.select_related("table"):
        level = alert_level(finding.severity, finding.confirmed)
        for rule in rules:
            if not rule.matches(finding, finding.table):
                continue
            for channel in rule.channels.all():
                if channel.project_id != rule.project_id:
                    continue  # the forms and the API refuse it; a row edited by hand too
                top = alerted.get((finding.id, rule.id, channel.id))
                if top is not None and top >= level:
                    continue
                new.append(
                    Delivery(
                        finding=finding,
                        rule=rule,
                        channel=channel,
                        level=level,
                        severity=finding.severity,
                        confirmed=finding.confirmed,
                        escalation=top is not None,
                        next_attempt_at=now,
                    )
                )
    if not new:
        return 0
    Delivery.objects.bulk_create(new, batch_size=500, ignore_conflicts=True)
    return len(new)


# --------------------------------------------------------------------------- send


def release_expired_claims(now: datetime | None = None) -> int:
    """Claims of workers that died mid-send go back to pending."""
    now = now or timezone.now()
    return Delivery.objects.filter(status=Delivery.Status.SENDING, claimed_until__lt=now).update(
        status=Delivery.Status.PENDING, claimed_by="", claimed_until=None
    )


def claim(delivery_id: int, worker: str, now: datetime | None = None) -> bool:
    """Atomically take one due delivery; False when another worker has it or it is not due."""
    now = now or timezone.now()
    claimed = Delivery.objects.filter(
        id=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=now
    ).update(
        status=Delivery.Status.SENDING,
        claimed_by=worker,
        claimed_until=now + timedelta(seconds=settings.ALERT_CLAIM_SECONDS),
        attempts=F("attempts") + 1,
    )
    return claimed == 1


def due_ids(now: datetime, limit: int) -> list[int]:
    rows = Delivery.objects.filter(
        status=Delivery.Status.PENDING, next_attempt_at__lte=now, channel__enabled=True
    ).order_by("next_attempt_at", "id")
    return list(rows.values_list("id", flat=True)[:limit])


def send_due(
    worker: str | None = None, *, now: datetime | None = None, limit: int = 100
) -> SendResult:
    """Claim and send due deliveries; each claimed delivery is attempted exactly once here."""
    worker = worker or worker_name()
    now = now or timezone.now()
    release_expired_claims(now)
    result = SendResult()
    for delivery_id in due_ids(now, limit):
        if not claim(delivery_id, worker, now):
            continue  # another worker got there first
        result.claimed += 1
        outcome = send_claimed(delivery_id, worker, now)
        setattr(result, outcome, getattr(result, outcome) + 1)
    return result


def send_claimed(delivery_id: int, worker: str, now: datetime | None = None) -> str:
    """Send a delivery this worker has claimed; returns "sent", "retrying" or "failed"."""
    now = now or timezone.now()
    delivery = Delivery.objects.select_related(
        "channel", "rule", "finding__table", "incident__table"
    ).get(id=delivery_id)
    mine = Delivery.objects.filter(
        id=delivery_id, status=Delivery.Status.SENDING, claimed_by=worker
    )
    try:
        code = transport_for(delivery.channel).notify(build_alert(delivery))
    except TransportError as err:
        return _record_failure(delivery, mine, err, now)
    except Exception as err:  # a bug must not leave the row claimed until the lease expires
        log.exception("delivery %s failed unexpectedly", delivery_id)  # scrubbed: logscrub.py
        line = f"{type(err).__name__}: {one_line(err, empty='')}"
        return _record_failure(delivery, mine, TransportError(f"internal error: {line}"), now)
    mine.update(
        status=Delivery.Status.SENT,
        sent_at=timezone.now(),
        response_code=code,
        last_error="",
        claimed_until=None,
    )
    Channel.objects.filter(id=delivery.channel_id).exclude(last_error="").update(last_error="")
    return "sent"


def backoff_seconds(attempts: int) -> int:
    """Delay before the next attempt after `attempts` failed ones: base * 2^(attempts-1), capped."""
    return get_exponential_backoff_interval(
        factor=max(int(settings.ALERT_RETRY_BASE_SECONDS), 1),
        retries=max(attempts - 1, 0),
        maximum=int(settings.ALERT_RETRY_MAX_SECONDS),
    )


def _record_failure(delivery: Delivery, mine: Any, err: TransportError, now: datetime) -> str:
    message = err.message[:2000]
    Channel.objects.filter(id=delivery.channel_id).update(last_error=message)
    if err.permanent:
        mine.update(
            status=Delivery.Status.FAILED,
            last_error=message,
            response_code=err.status_code,
            claimed_until=None,
        )
        disable_channel(delivery.channel_id, f"{message} (delivery {delivery.id})", now)
        return "failed"
    attempts = delivery.attempts  # already counts this attempt (claim incremented it)
    if attempts >= settings.ALERT_MAX_ATTEMPTS:
        mine.update(
            status=Delivery.Status.FAILED,
            last_error=f"{message} (gave up after {attempts} attempts)",
            response_code=err.status_code,
            claimed_until=None,
        )
        return "failed"
    mine.update(
        status=Delivery.Status.PENDING,
        last_error=message,
        response_code=err.status_code,
        next_attempt_at=now + timedelta(seconds=backoff_seconds(attempts)),
        claimed_by="",
        claimed_until=None,
    )
    return "retrying"


def disable_channel(channel_id: int, reason: str, now: datetime | None = None) -> None:
    when = (now or timezone.now()).strftime("%Y-%m-%d %H:%M UTC")
    log.warning("disabling alert channel %s: %s", channel_id, reason)
    Channel.objects.filter(id=channel_id).update(
        enabled=False, disabled_reason=f"{when}: {reason}"[:2000]
    )


# --------------------------------------------------------------------------- send test


def send_test(channel: Channel) -> Delivery:
    """Send a test alert now, once, without retries; a failure does not disable the channel."""
    now = timezone.now()
    delivery = Delivery.objects.create(
        channel=channel,
        is_test=True,
        status=Delivery.Status.SENDING,
        attempts=1,
        next_attempt_at=now,
        claimed_by="send-test",
        claimed_until=now + timedelta(seconds=settings.ALERT_CLAIM_SECONDS),
    )
    try:
        delivery.response_code = transport_for(channel).notify(build_alert(delivery))
        delivery.status, delivery.sent_at = Delivery.Status.SENT, timezone.now()
    except TransportError as err:
        delivery.status, delivery.last_error = Delivery.Status.FAILED, err.message[:2000]
        delivery.response_code = err.status_code
    delivery.claimed_until = None
    delivery.save(
        update_fields=["status", "sent_at", "last_error", "response_code", "claimed_until"]
    )
    return delivery


# --------------------------------------------------------------------------- alert content


def dashboard_url(finding: Finding | None) -> str:
    base = settings.ALERT_SITE_URL.rstrip("/")
    if finding is None:
        return f"{base}/alerts/"
    path = settings.ALERT_FINDING_PATH.format(finding_id=finding.id, table_id=finding.table_id)
    return f"{base}{path}"


def witness_summary(witness: Any) -> str:
    """One line about the rows that prove a never-existed snapshot, or "" without a witness."""
    if not isinstance(witness, dict):
        return ""
    files = [str(f) for f in witness.get("files") or [] if isinstance(f, str | int)]
    count = witness.get("row_count")
    parts = []
    if isinstance(count, int):
        parts.append(f"{count} row(s) in {len(files)} file(s)")
    if files:
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        parts.append(f"files: {shown}")
    if isinstance(witness.get("predicate"), str):
        parts.append(f"predicate: {witness['predicate'][:300]}")
    samples = witness.get("sample_rows")
    if isinstance(samples, list) and samples:
        parts.append(f"sample: {str(samples[0])[:300]}")
    return "; ".join(parts)


def build_alert(delivery: Delivery) -> Alert:
    if delivery.incident is not None:
        return build_incident_alert(delivery)
    if delivery.finding is None:
        return _test_alert(delivery)
    finding, table = delivery.finding, delivery.finding.table
    severity = delivery.severity or finding.severity
    payload = {
        "event": "finding.escalated" if delivery.escalation else "finding.opened",
        "delivery_id": delivery.id,
        "table": {"id": table.id, "name": table.name, "uri": table.uri},
        "finding": {
            "id": finding.id,
            "kind": finding.kind,
            "severity": severity,
            "version": finding.version,
            "related_versions": list(finding.related_versions or []),
            "confirmed": delivery.confirmed,
            "status": finding.status,
            "summary": finding.summary,
            "explanation": finding.explanation,
            "witness_summary": witness_summary(finding.witness),
        },
        "rule": {"id": delivery.rule_id, "name": delivery.rule.name if delivery.rule else ""},
        "dashboard_url": dashboard_url(finding),
    }
    subject = (
        f"[Delta Audit] {severity.upper()} {finding.kind} in {table.name or table.uri} "
        f"at version {finding.version}"
    )
    lines = [
        finding.summary,
        "",
        f"Table: {table.name} ({table.uri})",
        f"Version: {finding.version}; related versions: "
        + (", ".join(map(str, finding.related_versions or [])) or "none"),
        f"Severity: {severity}; confirmed: {'yes' if delivery.confirmed else 'no'}",
        f"Rule: {payload['rule']['name']}",
        "",
        finding.explanation,
    ]
    if payload["finding"]["witness_summary"]:
        lines += ["", f"Witness: {payload['finding']['witness_summary']}"]
    lines += ["", f"Details: {payload['dashboard_url']}"]
    return Alert(delivery.id, subject, payload, lines)


def _test_alert(delivery: Delivery) -> Alert:
    payload = {
        "event": "test",
        "delivery_id": delivery.id,
        "table": None,
        "finding": None,
        "rule": None,
        "dashboard_url": dashboard_url(None),
    }
    subject = f"[Delta Audit] test alert for channel {delivery.channel.name}"
    lines = ["This is a test alert from Delta Audit: the channel works.", payload["dashboard_url"]]
    return Alert(delivery.id, subject, payload, lines)
