"""Health alert rules: thresholds on stored health, and schema/protocol changes,
delivered through the real alert path to a real local HTTP receiver."""

from __future__ import annotations

import shutil

import pytest
from django.core.cache import cache
from django.db import connection

from audit.alerting.health_findings import alert_on_health, evaluate_health_rules
from audit.alerting.models import Delivery
from audit.core.audit import audit_history
from audit.core.history.summary import history_from_log
from audit.core.log import open_log
from audit.core.vocab import HEALTH_KINDS
from audit.health.models import TableHealth
from audit.ingest.chunk import store_history_chunk
from audit.ingest.health_store import health_fields
from audit.ingest.tables import register_table
from audit.models import Finding
from audit.tail import step
from audit.tail.step import reaudit
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
    reaudit(table.id)
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


def test_it_stores_a_chunks_health_without_writing_alert_findings(built, tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = shutil.copytree(built, tmp_path / "t")
    table, _ = register_table(str(path), name="t")
    history = history_from_log(open_log(str(path)))
    stored = store_history_chunk(table, history, audit_history(history), versions=(0, V_LAST))
    # Storing writes the health rows but no alert finding: those are the alerting package's.
    assert TableHealth.objects.filter(table=table, version=V_LAST).exists()
    assert not Finding.objects.filter(kind__in=HEALTH_KINDS).exists()
    assert {c["kind"] for c in stored.health.changes} >= {"schema", "protocol"}
    assert stored.health.fields["version"] == V_LAST
    alert_on_health(table, stored.health)
    kinds = Finding.objects.filter(kind__in=HEALTH_KINDS).values_list("kind", flat=True)
    assert sorted(kinds) == ["protocol_change", "schema_change"]


@pytest.mark.django_db(transaction=True)
def test_it_raises_health_alerts_only_after_the_chunk_has_committed(
    built, tmp_path, settings, monkeypatch
):
    seen = []

    def alert(table, outcome):
        # Outside any transaction: the chunk's commits are durable before its alerts exist.
        seen.append((connection.in_atomic_block, len(outcome.changes)))
        alert_on_health(table, outcome)

    monkeypatch.setattr(step, "alert_on_health", alert)
    ingest_copy(built, tmp_path, settings)
    assert seen and all(not in_transaction for in_transaction, _ in seen)
    assert sum(changes for _, changes in seen) >= 2
    assert Finding.objects.filter(kind__endswith="_change", status="open").count() == 2
