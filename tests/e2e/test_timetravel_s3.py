"""Time travel on S3 (moto's server on loopback, requests counted at the server): the same
findings as on a local table, and the reachability check costs no request beyond the orphan
scan whose listing it shares."""

from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.data.orphans import in_flight_bound_ms, referenced_paths, scan_orphans
from audit.core.health.scan import scan_data
from audit.core.history.summary import load_history
from audit.core.storage.stores import open_store
from audit.core.vocab import FindingKind


@pytest.fixture
def s3_table(s3, monkeypatch):
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    bucket = f"tt-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(bucket)
    return f"s3://{bucket}/events"


def _rows(day: str, ids: list[int]) -> pa.Table:
    return pa.table({"day": [day] * len(ids), "id": pa.array(ids, pa.int64())})


@pytest.mark.slow
def test_it_finds_a_vacuum_under_a_stale_writer_on_s3_within_the_orphan_scans_requests(
    s3, s3_table
):
    options = s3.options
    write_deltalake(s3_table, _rows("A", [1, 2]), partition_by=["day"], storage_options=options)
    write_deltalake(s3_table, _rows("B", [3, 4]), mode="append", storage_options=options)
    stale = DeltaTable(s3_table, storage_options=options)
    write_deltalake(
        s3_table, _rows("A", [5]), mode="overwrite", predicate="day = 'A'", storage_options=options
    )
    DeltaTable(s3_table, storage_options=options).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False
    )
    stale.delete("day = 'B' and id = 3")

    history = load_history(s3_table)
    now = int(time.time() * 1000)
    with s3.counting() as orphans_only:
        scan_orphans(
            open_store(s3_table),
            referenced_paths(history, s3_table),
            now_ms=now,
            min_age_ms=in_flight_bound_ms(history),
        )
    with s3.counting() as both:
        found = scan_data(open_store(s3_table), history, s3_table, now_ms=now)
    print("orphan scan:", dict(s3.kinds(orphans_only)), "data scan:", dict(s3.kinds(both)))
    assert s3.kinds(both) == s3.kinds(orphans_only)

    kinds = {f.kind: f for f in found.findings}
    broke = kinds[FindingKind.VACUUM_BROKE_SNAPSHOT]
    assert (broke.version, broke.related_versions) == (5, [1, 3, 4])
    missing = kinds[FindingKind.MISSING_DATA_FILE]
    assert (missing.severity, missing.version, missing.related_versions) == ("warning", 0, [3])
    assert FindingKind.TIMESTAMPS_OUT_OF_ORDER not in kinds
    assert found.reach.earliest_readable_version == 2
