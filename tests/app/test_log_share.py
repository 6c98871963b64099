"""The shared listing's wire form (audit/tail/shared.py): what one worker process publishes is
exactly the listing another one resumes from, gaps and checkpoints included."""

from __future__ import annotations

import time
import uuid
import zlib

import pytest

from audit.core.model import LogListing
from audit.tail.shared import claim_pass, decode, encode, release_pass


def _listing(versions: list[int]) -> LogListing:
    return LogListing(
        table_uri="s3://lake/t",
        commit_versions=versions,
        checkpoints={10: ["00000000000000000010.checkpoint.parquet"]},
        compactions=[(3, 5, "00000000000000000003.00000000000000000005.compacted.json")],
        last_checkpoint={"version": 10, "size": 12},
        latest_version=versions[-1],
        first_available_version=versions[0],
        file_modification_times={v: 1_700_000_000_000 + v for v in versions if v != 4},
    )


def test_it_round_trips_a_contiguous_listing_and_its_full_listing_time():
    listing = _listing(list(range(0, 2_000)))
    data = encode(listing, 1234.5)
    assert decode(data) == (listing, 1234.5)
    assert len(data) < 20_000  # a 2,000-commit listing stays small in Redis


def test_it_round_trips_versions_with_holes():
    listing = _listing([2, 3, 4, 7, 8])
    assert decode(encode(listing, 1.0)) == (listing, 1.0)


def test_it_refuses_what_it_did_not_write():
    assert decode(b"not zlib") is None
    assert decode(zlib.compress(b'{"format": 99}')) is None
    assert decode(zlib.compress(b"[1, 2]")) is None


def test_it_grants_one_tail_pass_at_a_time_in_the_pool(settings):
    from tests.support.workers import REDIS_URL, redis_reachable

    if not redis_reachable():
        pytest.skip("the pass lease lives in Redis")
    settings.AUDIT_LOG_SHARE_URL = REDIS_URL
    name = f"test-{uuid.uuid4().hex[:8]}"
    first = claim_pass(name, ttl=5)
    assert first is not None
    assert claim_pass(name, ttl=5) is None  # another process, meanwhile
    release_pass(name, "not-the-holder")
    assert claim_pass(name, ttl=5) is None  # only the holder releases it
    release_pass(name, first)
    second = claim_pass(name, ttl=0.2)
    assert second is not None
    time.sleep(0.3)
    assert claim_pass(name, ttl=5) is not None  # a dead holder's lease expires


def test_it_runs_every_pass_without_redis(settings):
    settings.AUDIT_LOG_SHARE_URL = ""
    assert claim_pass("tail-all", ttl=5) is not None
    assert claim_pass("tail-all", ttl=5) is not None
