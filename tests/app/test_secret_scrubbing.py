"""Error texts are scrubbed where the shell stores or logs them: Table.last_error,
OrphanScan.error, and every log record (message and traceback) of a process running Django."""

from __future__ import annotations

import logging

import pytest

from audit.alerting.models import Channel, Delivery
from audit.ingest.tables import mark_error
from audit.models import OrphanScan, Table
from audit.tail.orphan_scans import scan_table
from tests.support.alerting import make_table

SLACK = "https://hooks.slack.com/services/T0LOGS/B0LOGS/PathTokenNotForLogs9"
SAS = "sv=2022-11-02&se=2030-01-01&sig=SasSignatureNotForRows%3D"


def test_it_scrubs_log_messages_and_tracebacks(caplog):
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger("workers.tasks")
    try:
        raise ValueError(f"POST {SLACK} failed; blob at https://a.blob.core.windows.net/c?{SAS}")
    except ValueError:
        log.exception("delivery to %s failed", SLACK)
    logging.getLogger("urllib3.connectionpool").debug(
        '%s://%s:%s "%s %s %s" %s %s',
        "https",
        "hooks.slack.com",
        443,
        "POST",
        "/services/T0LOGS/B0LOGS/PathTokenNotForLogs9",
        "HTTP/1.1",
        200,
        2,
    )
    formatter = logging.Formatter("%(message)s")
    printed = "\n".join(formatter.format(r) for r in caplog.records)
    assert "hooks.slack.com" in printed and "Traceback" in printed
    assert "PathTokenNotForLogs9" not in printed and "SasSignatureNotForRows" not in printed


@pytest.mark.django_db
def test_it_stores_a_scrubbed_table_error():
    table = make_table()
    mark_error(table, f"listing failed: GET https://a.blob.core.windows.net/c?{SAS}")
    table.refresh_from_db()
    assert table.status == Table.Status.ERROR and "a.blob.core.windows.net" in table.last_error
    assert "SasSignatureNotForRows" not in table.last_error


@pytest.mark.django_db
def test_it_stores_a_scrubbed_orphan_scan_error(settings, tmp_path):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    table = Table.objects.create(name="t", uri=f"/elsewhere/t?{SAS}")  # refused: not allowed
    scan = scan_table(table)
    assert scan.error and "SasSignatureNotForRows" not in scan.error
    assert OrphanScan.objects.get().error == scan.error


@pytest.mark.django_db
def test_it_keeps_the_error_of_an_internal_delivery_failure_scrubbed(monkeypatch, caplog):
    from audit.alerting import delivery

    channel = Channel.objects.create(name="s", kind="slack", config={"url": SLACK})

    def broken(_delivery):
        raise RuntimeError(f"bug while building the alert for {SLACK}")

    monkeypatch.setattr(delivery, "build_alert", broken)
    d = Delivery.objects.create(
        channel=channel, status="sending", claimed_by="me", next_attempt_at="2030-01-01T00:00Z"
    )
    assert delivery.send_claimed(d.id, "me") == "retrying"
    d.refresh_from_db()
    assert d.last_error.startswith("internal error: RuntimeError")
    assert "PathTokenNotForLogs9" not in d.last_error
    assert all("PathTokenNotForLogs9" not in (r.exc_text or "") for r in caplog.records)


def test_it_scrubs_a_spark_outcome_error_on_the_driver(monkeypatch):
    from workers.spark.job import TableOutcome

    monkeypatch.setenv("FLEET_SECRET_KEY", "driver-only-secret-value")
    outcome = TableOutcome("s3://lake/t", error="denied with driver-only-secret-value at " + SLACK)
    assert outcome.error == "denied with *** at https://hooks.slack.com/…"
