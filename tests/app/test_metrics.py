"""/metrics: Prometheus text read from the database, behind a bearer token or a login."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from audit.alerting import delivery
from audit.alerting.models import Delivery
from audit.models import Table
from tests.support.alerting import open_finding, rule_for, webhook

TOKEN = "metrics-token-for-tests-0123456789"


def scrape(client, **headers) -> dict[str, list]:
    r = client.get("/metrics", **headers)
    assert r.status_code == 200, r.content
    assert r["Content-Type"].startswith("text/plain")
    return {
        family.name: family.samples for family in text_string_to_metric_families(r.content.decode())
    }


def value(samples, **labels) -> float:
    matches = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matches) == 1, (labels, samples)
    return matches[0]


@pytest.mark.django_db
def test_metrics_need_the_token_or_a_login(client, settings, member):
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    settings.METRICS_TOKEN = ""  # no token configured: a bearer never works
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403
    client.force_login(member)
    assert client.get("/metrics").status_code == 200


@pytest.mark.django_db
def test_metrics_report_findings_risk_lag_errors_and_deliveries(client, settings):
    settings.METRICS_TOKEN = TOKEN
    now = timezone.now()
    orders = Table.objects.create(
        name="orders",
        uri="/lake/orders",
        status="ok",
        last_seen_version=10,
        latest_version_in_log=14,
        last_tail_at=now - timedelta(seconds=90),
    )
    broken = Table.objects.create(
        name='we"ird\nname', uri="/lake/broken", status="error", last_error="log shrank"
    )
    open_finding(orders, 3, severity="critical", confirmed=True)
    open_finding(orders, 4, severity="critical", confirmed=False)
    open_finding(orders, 5, kind="write_serializable_reorder", severity="warning", confirmed=False)
    open_finding(broken, 1, severity="info", confirmed=False)
    rule_for(webhook("http://127.0.0.1:9/"))  # nothing listens: the deliveries stay pending
    delivery.scan()
    delivery.send_due("tester")

    metrics = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    findings = metrics["deltaaudit_open_findings"]
    oid = str(orders.id)
    assert value(findings, table_id=oid, kind="never_existed_snapshot", severity="critical") == 2
    assert value(findings, table_id=oid, kind="write_serializable_reorder", severity="warning") == 1
    assert value(findings, table_id=str(broken.id), severity="info") == 1
    assert value(findings, table_id=str(broken.id))  # the hostile name survived quoting
    assert value(findings, table=broken.name) == 1

    orders.refresh_from_db()
    assert value(metrics["deltaaudit_table_risk"], table_id=oid) == orders.risk > 0
    assert value(metrics["deltaaudit_tail_lag_versions"], table_id=oid) == 4
    assert 89 <= value(metrics["deltaaudit_tail_lag_seconds"], table_id=oid) < 150
    assert value(metrics["deltaaudit_table_ingest_error"], table_id=str(broken.id)) == 1
    assert value(metrics["deltaaudit_table_ingest_error"], table_id=oid) == 0
    assert value(metrics["deltaaudit_tables"], status="error") == 1
    assert value(metrics["deltaaudit_tables"], status="ok") == 1

    deliveries = metrics["deltaaudit_alert_deliveries"]
    pending = Delivery.objects.filter(status="pending").count()
    assert pending == 3  # the critical and warning findings (default rule: warning and up)
    assert value(deliveries, status="pending", channel_kind="webhook") == pending
    assert value(deliveries, status="sent", channel_kind="webhook") == 0
    assert value(metrics["deltaaudit_alert_channels_disabled"]) == 0
