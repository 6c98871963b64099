"""A retry storm that grows while the tail watches is one finding, updated in place: never
resolved and opened again as each new commit joins it (the key of a growing kind is its kind
and first version, not its related versions)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.vocab import FindingKind
from audit.ingest.tables import register_table
from audit.models import Finding, FindingFlip
from audit.tail.step import tail_once
from tests.support.scenarios import rows

pytestmark = pytest.mark.django_db


def _racing_delete(path: str, key: int) -> None:
    """One writer's DELETE in day p0 from a snapshot another writer appended to meanwhile (in
    p1, which delta-rs lets through): a contended commit of the storm."""
    stale = DeltaTable(path)
    write_deltalake(path, rows("p1", [100 + key]), mode="append")
    stale.delete(f"day = 'p0' AND id = {key}")


def _tail(table) -> None:
    while tail_once(table.id, chunk=1000).more:
        pass


def test_it_keeps_a_growing_storm_one_open_finding(tmp_path, settings):
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = str(tmp_path / "storm")
    write_deltalake(path, rows("p0", list(range(10))), partition_by=["day"])
    for key in range(3):
        _racing_delete(path, key)
    table, _ = register_table(path)
    _tail(table)
    (storm,) = Finding.objects.filter(table=table, kind=FindingKind.RETRY_STORM)
    assert storm.status == "open" and len(storm.related_versions) == 2

    for key in range(3, 6):
        _racing_delete(path, key)
    _tail(table)

    storms = list(Finding.objects.filter(table=table, kind=FindingKind.RETRY_STORM))
    assert [(s.id, s.status) for s in storms] == [(storm.id, "open")]
    assert len(storms[0].related_versions) == 5  # the three new commits joined it
    flips = FindingFlip.objects.filter(finding__table=table, finding__kind=FindingKind.RETRY_STORM)
    assert [(f.old_status, f.new_status) for f in flips] == [("", "open")]
