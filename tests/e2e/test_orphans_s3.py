"""Orphan scans on an S3 protocol server (moto): listings paged past 1,000 keys, bounded,
and read-only (on object storage the listing is paged and bounded)."""

from __future__ import annotations

import time

import pytest
from deltalake import write_deltalake

from audit.core.data.orphans import referenced_paths, scan_orphans
from audit.core.history.summary import load_history
from audit.core.storage.stores import open_store
from tests.e2e.objstore import MotoS3, upload_table, write_storage_config
from tests.support.tables import rows

pytestmark = [pytest.mark.services, pytest.mark.slow]

ORPHANS = 1050  # more than one page of ListObjectsV2 (1,000 keys)


def _keys(client, bucket: str) -> list[tuple[str, str]]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted((o["Key"], o["ETag"]) for page in pages for o in page.get("Contents", []))


def test_orphans_on_s3_are_found_through_paged_bounded_listings_and_nothing_is_written(
    s3_server: MotoS3, tmp_path, monkeypatch
):
    bucket = s3_server.create_bucket()
    local = tmp_path / "t"
    write_deltalake(str(local), rows(5), partition_by=["day"])
    write_deltalake(str(local), rows(5, start=10), mode="append")
    uri = f"s3://{bucket}/lake/t"
    upload_table(local, uri, s3_server.options())
    client = s3_server.client()
    # The data files of writers that never committed, all in one partition folder.
    for i in range(ORPHANS):
        client.put_object(
            Bucket=bucket, Key=f"lake/t/day=2024-01-01/part-{i:05d}-orphan.parquet", Body=b"x" * 10
        )
    config = write_storage_config(
        tmp_path / "storage.toml", {f"s3://{bucket}/": s3_server.options()}
    )
    monkeypatch.setenv("AUDIT_STORAGE_CONFIG", config)
    before = _keys(client, bucket)

    history = load_history(uri)
    referenced = referenced_paths(history, uri)
    store = open_store(uri)
    now = int(time.time() * 1000)
    scan = scan_orphans(store, referenced, now_ms=now, min_age_ms=0)

    assert (scan.files, scan.bytes, scan.truncated) == (ORPHANS, 10 * ORPHANS, False)
    assert scan.listed_files == ORPHANS + len(history.state.files)
    bounded = scan_orphans(store, referenced, now_ms=now, min_age_ms=0, max_files=500)
    assert bounded.truncated and bounded.listed_files == 500 and bounded.files <= 500
    young = scan_orphans(store, referenced, now_ms=now, min_age_ms=3_600_000)
    assert (young.files, young.in_flight_files) == (0, ORPHANS)  # too young to be orphans
    assert _keys(client, bucket) == before  # nothing written, nothing deleted
