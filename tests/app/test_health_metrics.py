"""docs/architecture.md's recipe for a new health metric, followed for every metric there is:
named in HEALTH_METRICS, a TableHealth column filled by `health_fields` from the health
document, an AlertRule choice, a rule on it that opens its `health_<metric>` finding when the
tail stores commits, and a line in docs/alerting.md's health rules."""

from __future__ import annotations

import pytest

from audit.alerting.models import AlertRule
from audit.core.vocab import HEALTH_FINDING_PREFIX, HEALTH_KINDS, HEALTH_METRICS
from audit.health.models import TableHealth
from audit.ingest.health_store import health_fields
from audit.ingest.tables import register_table
from audit.models import Finding
from audit.tail.step import tail_once
from tests.support.alerting import rule_for
from tests.support.paths import ROOT

pytestmark = pytest.mark.django_db


def test_every_metric_is_a_rule_choice_and_every_choice_a_metric():
    choices = {value for value in AlertRule.HealthMetric.values if value}
    assert choices == set(HEALTH_METRICS)
    assert {HEALTH_FINDING_PREFIX + m for m in HEALTH_METRICS} <= HEALTH_KINDS


def test_every_metric_is_a_stored_column_filled_from_the_health_document(delta_table_factory):
    columns = {f.name for f in TableHealth._meta.concrete_fields}
    assert set(HEALTH_METRICS) <= columns
    table, _ = register_table(str(delta_table_factory("t", commits=3)))
    tail_once(table.id)
    stored = TableHealth.objects.get(table=table)
    fields = health_fields(stored.data)
    for metric in HEALTH_METRICS:
        assert fields[metric] == pytest.approx(getattr(stored, metric)), metric


def test_a_rule_on_every_metric_opens_its_finding_as_the_tail_stores(delta_table_factory):
    for metric in HEALTH_METRICS:  # at or above 0: every table reaches it
        rule_for(name=metric, health_metric=metric, threshold=0)
    table, _ = register_table(str(delta_table_factory("t", commits=3)))
    tail_once(table.id)
    opened = set(Finding.objects.filter(table=table, status="open").values_list("kind", flat=True))
    assert {HEALTH_FINDING_PREFIX + m for m in HEALTH_METRICS} <= opened


def test_every_metric_is_documented_for_health_rules():
    text = (ROOT / "docs" / "alerting.md").read_text(encoding="utf-8")
    section = text.split("## Health rules", 1)[1].split("\n## ", 1)[0]
    missing = [m for m in HEALTH_METRICS if f"`{m}`" not in section]
    assert not missing, f"docs/alerting.md's health rules do not name {missing}"
