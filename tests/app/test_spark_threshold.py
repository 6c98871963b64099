"""Which path a fleet audit takes: Spark only from the configured table count on (the Spark
differential itself: tests/e2e/test_spark.py)."""

from __future__ import annotations

import pytest

from audit.models import Table


@pytest.mark.django_db
def test_should_use_spark_follows_the_threshold(settings):
    from workers.spark.tasks import should_use_spark

    table = Table.objects.create(uri="/nowhere/t", name="t")
    settings.AUDIT_SPARK_BACKFILL_THRESHOLD = 0
    assert not should_use_spark(table, 10**9)
    settings.AUDIT_SPARK_BACKFILL_THRESHOLD = 1000
    assert not should_use_spark(table, 1000)
    assert should_use_spark(table, 1001)
    table.status = Table.Status.PAUSED
    assert not should_use_spark(table, 10**9)
