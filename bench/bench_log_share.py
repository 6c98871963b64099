"""What a worker process new to a table pays to open its log, alone and with the pool's shared
listing (audit/tail/shared.py), counted at moto's S3 server (tests/e2e/s3count.py).

    .venv/bin/python bench/bench_log_share.py [--commits 10000]

A Spark-style log (bench/gen_log.py, a checkpoint every 100 commits) is copied to the server.
Then, each after one new commit: a process that knows the table (incremental: one LIST), a
process new to it alone (a full listing: a LIST per 1,000 files, `_last_checkpoint`), and a
process new to it that resumes the pool's listing from Redis. Prints requests and CPU time of
each, and the size of the shared listing. Needs Redis at 127.0.0.1:6379 (database 12).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARE_URL = "redis://127.0.0.1:6379/12"


def _upload(server, bucket: str, local: Path) -> None:
    client = server.boto()
    files = [p for p in local.rglob("*") if p.is_file()]

    def put(p: Path) -> None:
        key = f"t/{p.relative_to(local).as_posix()}"
        client.put_object(Bucket=bucket, Key=key, Body=p.read_bytes())

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, files))


def _append(server, uri: str, version: int) -> None:
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    body = b'{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE","readVersion":%d}}\n'
    server.boto().put_object(
        Bucket=bucket, Key=f"{key}/_delta_log/{version:020d}.json", Body=body % (version - 1)
    )


def _open(server, uri: str, label: str) -> None:
    from audit.tail import kept_logs

    cpu, wall = time.process_time(), time.perf_counter()
    with server.counting() as seen:
        log_ = kept_logs.refreshed(uri)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"{label:<44} {len(seen):>3} requests {dict(server.kinds(seen))}  "
        f"CPU {cpu * 1000:.0f} ms, wall {wall * 1000:.0f} ms  (v{log_.listing.latest_version})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    args = parser.parse_args()
    from tests.e2e.s3count import CountingS3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = CountingS3()
    os.environ.update({**server.env, "DJANGO_SETTINGS_MODULE": "config.settings"})
    import django

    django.setup()
    from django.conf import settings

    from audit.tail import kept_logs, shared

    try:
        local = Path(tempfile.mkdtemp(prefix="log-share-")) / "t"
        gen = [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(local)]
        subprocess.run([*gen, "--commits", str(args.commits)], check=True, capture_output=True)
        bucket = f"share-{uuid.uuid4().hex[:10]}"
        server.create_bucket(bucket)
        _upload(server, bucket, local)
        uri = f"s3://{bucket}/t"
        print(f"{args.commits:,}-commit log on S3; load average {os.getloadavg()[0]:.2f}")
        settings.AUDIT_LOG_SHARE_URL = SHARE_URL
        kept_logs.refreshed(uri)  # a first process lists it in full and shares it
        size = len(shared.encode(kept_logs.refreshed(uri).listing, 0.0))
        version = args.commits
        _append(server, uri, version)
        _open(server, uri, "process that knows the table")
        version += 1
        _append(server, uri, version)
        kept_logs.forget_all()
        settings.AUDIT_LOG_SHARE_URL = ""
        _open(server, uri, "process new to the table, alone (before)")
        version += 1
        _append(server, uri, version)
        kept_logs.forget_all()
        settings.AUDIT_LOG_SHARE_URL = SHARE_URL
        _open(server, uri, "process new to the table, pool's listing")
        print(f"shared listing: {size:,} bytes in Redis")
        shared.drop(uri)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
