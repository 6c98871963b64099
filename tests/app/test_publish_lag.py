"""The publish lag of a catalog-managed table: stored with its health by the tail, and
alertable through a health rule (delivered to a real local HTTP receiver)."""

from __future__ import annotations

import pytest

from audit.health.models import TableHealth
from tests.support import staged_tables
from tests.support.alerting import rule_for, run_until_quiet, webhook
from tests.support.ingested import ingest_table

pytestmark = pytest.mark.django_db


def test_it_stores_the_publish_lag_and_alerts_on_it(tmp_path, settings, receiver):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    staged_tables.build(tmp_path / "t")
    hook = webhook(receiver.url)
    rule_for(hook, name="unpublished", health_metric="publish_lag_versions", threshold=2)
    rule_for(hook, name="slow", health_metric="publish_lag_seconds", threshold=10**12)
    table = ingest_table(tmp_path / "t", name="t")
    health = TableHealth.objects.get(table=table)
    assert (health.publish_lag_versions, health.data["publish_lag"]["versions"]) == (2, 2)
    assert health.publish_lag_seconds > 0
    run_until_quiet()
    (alert,) = [b for b in receiver.bodies() if b["finding"]["kind"].startswith("health_")]
    assert alert["rule"]["name"] == "unpublished"
    assert alert["finding"]["kind"] == "health_publish_lag_versions"


def test_it_has_no_publish_lag_for_ordinary_tables(tmp_path, settings):
    from deltalake import write_deltalake

    from tests.support.tables import rows

    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    write_deltalake(str(tmp_path / "plain"), rows(3))
    table = ingest_table(tmp_path / "plain", name="plain")
    health = TableHealth.objects.get(table=table)
    assert "publish_lag" not in health.data and health.publish_lag_versions == 0
