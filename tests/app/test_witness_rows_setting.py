"""AUDIT_WITNESS_SAMPLE_ROWS reaches the tail's audit and bounds what is stored, whatever
computed the witness (a Spark job or an imported audit may have used another number)."""

from __future__ import annotations

import pytest

from audit.core import model
from audit.ingest.findings import upsert_findings
from audit.models import Finding
from tests.support import scenarios
from tests.support.alerting import make_table
from tests.support.ingested import ingest_table


@pytest.mark.django_db
def test_it_stores_no_sample_rows_when_the_setting_is_zero(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_WITNESS_SAMPLE_ROWS = 0
    scenarios.build_stale_unconditional_delete(str(tmp_path / "t"))
    table = ingest_table(tmp_path / "t")
    never = Finding.objects.get(table=table, kind="never_existed_snapshot")
    assert never.confirmed and never.witness["row_count"] == 3
    assert never.witness["files"] and never.witness["sample_rows"] == []


@pytest.mark.django_db
def test_it_bounds_the_sample_rows_of_a_witness_computed_elsewhere(settings):
    settings.AUDIT_WITNESS_SAMPLE_ROWS = 1
    table = make_table()
    rows = [{"id": i, "email": f"user{i}@example.org"} for i in range(5)]
    found = model.Finding(
        kind="never_existed_snapshot",
        severity="critical",
        version=3,
        related_versions=[2],
        confirmed=True,
        summary="rows survive",
        explanation="",
        witness={"files": ["a.parquet"], "row_count": 5, "sample_rows": rows},
    )
    upsert_findings(table, [found], scope=(3, 3))
    stored = Finding.objects.get(table=table)
    assert stored.witness["sample_rows"] == rows[:1] and stored.witness["row_count"] == 5
