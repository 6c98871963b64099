"""End to end: a writer races in a tailed table, the worker finds a confirmed never-existed
snapshot, and the webhook receiver gets the alert — with no human action in between.

Real processes: `celery -A workers worker --beat` (tests/e2e/conftest.py `celery_workers`) tails the
table (`tail_all`) and runs the alerter (`process_alerts`) on its beat schedule; the receiver
is a real HTTP server in this process.
"""

from __future__ import annotations

import time

import pytest

from audit.alerting.models import Delivery
from audit.models import Table
from audit.trust.paths import check_allowed
from tests.support import scenarios
from tests.support.alerting import SECRET, Receiver, documented_verifier, rule_for, webhook
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.timeout(180)]


def test_a_confirmed_never_existed_snapshot_reaches_the_webhook_unattended(
    celery_workers, tmp_path, settings
):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    receiver = Receiver().start()
    try:
        rule_for(
            webhook(receiver.url),
            name="confirmed anomalies",
            kinds=["never_existed_snapshot"],
            confirmed_only=True,
            min_severity="info",
        )
        path = tmp_path / "orders"
        # The table is registered (tailed) before its writers start; the first passes find no
        # log yet, then the tail picks the commits up as the writers make them.
        table = Table.objects.create(name="orders", uri=check_allowed(str(path)))
        celery_workers.start(
            "w1", ALERT_INTERVAL_SECONDS="0.5", ALERT_SITE_URL="https://audit.example.org"
        )
        wait_for(
            lambda: Table.objects.get(id=table.id).last_tail_at,
            30,
            message=f"the worker never tailed the table; {celery_workers.logs()}",
        )

        facts = scenarios.build_stale_unconditional_delete(str(path))

        wait_for(
            lambda: receiver.requests,
            60,
            message=f"no alert arrived; {celery_workers.logs()}",
        )
        time.sleep(2)  # several more beat passes: still exactly one alert
        assert len(receiver.requests) == 1
        _, headers, body = receiver.requests[0]
        assert documented_verifier()(SECRET, headers, body)
        alert = receiver.bodies()[0]
        assert alert["table"] == {"id": table.id, "name": "orders", "uri": table.uri}
        finding = alert["finding"]
        assert finding["kind"] == "never_existed_snapshot"
        assert finding["confirmed"] is True
        assert finding["version"] == facts["delete_version"]
        assert finding["related_versions"] == [facts["append_version"]]
        assert finding["explanation"]
        assert "row(s)" in finding["witness_summary"]
        assert alert["dashboard_url"].startswith("https://audit.example.org/")
        d = Delivery.objects.get()
        assert (d.status, d.attempts, d.response_code) == ("sent", 1, 200)
        table.refresh_from_db()
        assert table.risk and table.risk > 0
    finally:
        receiver.stop()
