"""The pool shares each table's listing (audit/tail/shared.py): a worker process that has never
seen a table picks up the listing another process made and lists only what was written after
it, one request, where on its own it would list the whole `_delta_log` (a LIST per 1,000
files, plus `_last_checkpoint`). Counted at moto's S3 server (tests/e2e/s3count.py), shared
through the test Redis."""

from __future__ import annotations

import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from audit.core.log import open_log as list_in_full
from audit.tail import kept_logs, shared
from tests.support.paths import ROOT
from tests.support.workers import REDIS_URL, redis_reachable

pytestmark = [pytest.mark.services, pytest.mark.slow]

COMMITS = 1_100  # two listing pages


@pytest.fixture
def long_table(s3, monkeypatch, settings, tmp_path_factory) -> str:
    """A 1,100-commit Spark-style log (checkpoints every 100) on the S3 server; its URI."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    local = tmp_path_factory.mktemp("share") / "t"
    gen = [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(local)]
    subprocess.run([*gen, "--commits", str(COMMITS)], check=True, stdout=subprocess.DEVNULL)
    bucket = f"share-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(bucket)
    _upload(s3, bucket, local)
    if not redis_reachable():
        pytest.skip("the listing is shared through Redis")
    settings.AUDIT_LOG_SHARE_URL = REDIS_URL
    kept_logs.forget_all()
    yield f"s3://{bucket}/t"
    kept_logs.forget_all()


def _upload(s3, bucket: str, local: Path) -> None:
    client = s3.boto()
    files = [p for p in local.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda p: client.put_object(
                    Bucket=bucket, Key=f"t/{p.relative_to(local).as_posix()}", Body=p.read_bytes()
                ),
                files,
            )
        )


def _append(s3, uri: str, version: int) -> None:
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    body = b'{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE","readVersion":%d}}\n' % (
        version - 1
    )
    s3.boto().put_object(Bucket=bucket, Key=f"{key}/_delta_log/{version:020d}.json", Body=body)


def test_it_resumes_another_processs_listing_with_one_listing_of_what_is_new(
    s3, long_table, settings
):
    first = kept_logs.refreshed(long_table)  # "process A": lists in full and shares it
    assert first.listing.latest_version == COMMITS - 1
    for version in (COMMITS, COMMITS + 1):
        _append(s3, long_table, version)

    kept_logs.forget_all()  # "process B": nothing of its own about the table
    with s3.counting() as resumed:
        log_ = kept_logs.refreshed(long_table)
    assert s3.kinds(resumed) == {"LIST": 1}, resumed
    assert "start-after" in resumed[0][2]
    assert log_.listing == list_in_full(long_table).listing  # what a full listing says
    assert log_.listing.latest_version == COMMITS + 1

    # Without the pool's listing (sharing off), the same process lists everything.
    settings.AUDIT_LOG_SHARE_URL = ""
    kept_logs.forget_all()
    with s3.counting() as alone:
        kept_logs.refreshed(long_table)
    # A probe of the log folder, a LIST per page (and one for the folder check), the
    # `_last_checkpoint` file: five requests here where the shared listing needed one.
    assert s3.kinds(alone)["LIST"] >= 2 and len(alone) >= 4, alone
    assert not any("start-after" in query for _m, _p, query in alone)


def test_it_lists_in_full_when_the_shared_listing_no_longer_matches_the_log(s3, long_table):
    kept_logs.refreshed(long_table)
    bucket, key = long_table.removeprefix("s3://").split("/", 1)
    client = s3.boto()
    stale = shared.fetch(long_table)
    assert stale is not None
    # The log replaced underneath: its last commits gone (a table dropped and recreated).
    for version in range(COMMITS - 50, COMMITS):
        client.delete_object(Bucket=bucket, Key=f"{key}/_delta_log/{version:020d}.json")
    kept_logs.forget_all()
    log_ = kept_logs.refreshed(long_table)
    assert log_.listing == list_in_full(long_table).listing
    assert log_.listing.latest_version != stale[0].latest_version
    republished = shared.fetch(long_table)
    assert republished is not None and republished[0] == log_.listing
