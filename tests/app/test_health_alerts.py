"""Health alert rules (issue 18): thresholds on stored health, and schema/protocol changes,
delivered through the real alert path to a real local HTTP receiver."""

from __future__ import annotations

import shutil

import pytest
from django.core.cache import cache

from audit import ingest
from audit.alerting.health_findings import evaluate_health_rules
from audit.alerting.models import Delivery
from audit.health.models import TableHealth
from audit.health.store import health_fields
from audit.models import Finding
from tests.support.alerting import rule_for, run_until_quiet, webhook
from tests.support.health_tables import (
    HOSTILE_COLUMN,
    V_LAST,
    V_PROTOCOL,
    V_SCHEMA,
    build_evolving_table,
)
from tests.support.ingested import ingest_table

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_evolving_table(tmp_path_factory.mktemp("health-alerts") / "evolving")


def ingest_copy(built, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    cache.clear()
    table = ingest_table(str(shutil.copytree(built, tmp_path / "t")), name="t")
    return table


def test_schema_and_protocol_changes_alert_with_the_diff(built, tmp_path, settings, receiver):
    rule_for(
        webhook(receiver.url),
        name="changes",
        kinds=["schema_change", "protocol_change"],
        min_severity="info",
    )
    table = ingest_copy(built, tmp_path, settings)
    run_until_quiet()
    by_kind = {b["finding"]["kind"]: b["finding"] for b in receiver.bodies()}
    assert set(by_kind) == {"schema_change", "protocol_change"}
    assert by_kind["schema_change"]["version"] == V_SCHEMA
    assert HOSTILE_COLUMN in by_kind["schema_change"]["summary"]
    assert '"added"' in by_kind["schema_change"]["explanation"]
    assert by_kind["protocol_change"]["version"] == V_PROTOCOL
    assert "changeDataFeed" in by_kind["protocol_change"]["summary"]
    # A re-audit of those versions does not resolve them: they are not the audit's findings.
    ingest.reaudit(table.id)
    assert Finding.objects.filter(kind__endswith="_change", status="open").count() == 2


def test_a_threshold_rule_opens_alerts_and_resolves(built, tmp_path, settings, receiver):
    hook = webhook(receiver.url)
    vac = rule_for(
        hook, name="vacuum", health_metric="vacuumable_bytes", threshold=1, min_severity="warning"
    )
    rule_for(hook, name="lag", health_metric="checkpoint_lag", threshold=10_000)
    rule_for(hook, name="all findings")  # a findings rule never sees health findings
    table = ingest_copy(built, tmp_path, settings)
    run_until_quiet()
    health = [b for b in receiver.bodies() if b["finding"]["kind"].startswith("health_")]
    assert len(health) == 1
    assert health[0]["rule"]["name"] == "vacuum"
    assert health[0]["finding"]["version"] == V_LAST
    stored = TableHealth.objects.get(table=table)
    assert f"is {stored.vacuumable_bytes:g}" in health[0]["finding"]["summary"]
    assert Delivery.objects.filter(finding__kind="health_vacuumable_bytes").count() == 1
    # Below the threshold it resolves; above again it reopens (and alerts once more).
    fields = health_fields(stored.data)
    assert evaluate_health_rules(table, {**fields, "vacuumable_bytes": 0}) == (0, 1)
    assert evaluate_health_rules(table, fields) == (1, 0)
    assert Finding.objects.get(kind="health_vacuumable_bytes").details["rule_id"] == vac.id
