"""Alerting builders shared by the alerting, health-alert, metrics and end-to-end alert tests:
stored findings, webhook channels, rules, and the signature verifier docs/alerting.md shows."""

from __future__ import annotations

import re
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from audit.alerting import delivery
from audit.alerting.models import AlertRule, Channel, Delivery
from audit.core import model
from audit.ingest.findings import finding_key, upsert_findings
from audit.models import Finding, Table
from tests.support.paths import ROOT
from tests.support.receiver import Receiver  # noqa: F401 - imported from here by the tests

SECRET = "s3cret-signing-key-0123456789"


def documented_verifier():
    """The verification snippet of docs/alerting.md, executed as written."""
    text = (ROOT / "docs" / "alerting.md").read_text()
    snippet = re.search(r"```python\n(.*?def verify_delta_audit.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(snippet, namespace)  # noqa: S102 - our own documentation
    return namespace["verify_delta_audit"]


def make_table(name: str = "orders", uri: str = "/lake/prod/orders") -> Table:
    return Table.objects.create(name=name, uri=uri, status=Table.Status.OK)


def open_finding(
    table: Table,
    version: int = 3,
    *,
    kind: str = "never_existed_snapshot",
    severity: str = "critical",
    confirmed: bool = True,
    summary: str = "rows of v2 survive the DELETE at v3",
    related: tuple[int, ...] = (2,),
) -> Finding:
    """Store a finding through the real ingest upsert (which writes the FindingFlip)."""
    f = model.Finding(
        kind=kind,
        severity=severity,
        version=version,
        related_versions=list(related),
        confirmed=confirmed,
        summary=summary,
        explanation="The DELETE at v3 read v1 and never saw the append at v2.",
        witness={
            "files": ["part-0001.parquet"],
            "row_count": 3,
            "sample_rows": [{"id": 30}],
            "predicate": None,
        }
        if confirmed
        else None,
    )
    with transaction.atomic():
        upsert_findings(table, [f], scope=(version, version))
    return Finding.objects.get(table=table, key=finding_key(kind, version, list(related)))


def webhook(url: str, name: str = "hook") -> Channel:
    return Channel.objects.create(name=name, kind="webhook", config={"url": url, "secret": SECRET})


def rule_for(*channels: Channel, **fields) -> AlertRule:
    rule = AlertRule.objects.create(name=fields.pop("name", "all"), **fields)
    rule.channels.set(channels)
    return rule


def run_until_quiet(now=None, rounds: int = 30, step: int = 10):
    """Scan once and send until nothing is pending, moving the clock forward between rounds."""
    now = now or timezone.now()
    delivery.scan(now)
    for _ in range(rounds):
        delivery.send_due("tester", now=now)
        if not Delivery.objects.filter(status__in=["pending", "sending"]).exists():
            return now
        now += timedelta(seconds=step)
    return now


# --------------------------------------------------------------------------- webhook
