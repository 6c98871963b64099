"""Object-store requests per tail tick, counted at a real S3 server (moto's, on loopback).

    .venv/bin/python bench/bench_objstore.py [--sizes 30,3000] [--interval 5]

For each log size N: a Spark-style log (bench/gen_log.py, a checkpoint every 100 commits) is
uploaded to the server as it would be found (versions < N), registered and ingested once;
then the bench counts the requests the server serves (HEAD, GET, LIST) for:

- the beat's probe "is there a next commit?" (`tables_due` -> `kept_logs.has_commit`);
- an idle worker tick (`tail_once` with nothing new);
- a worker tick after 1 and after 5 new commits were uploaded;
- the debounced whole-table findings refresh;
- peer, in the same run on the same server: deltalake's `DeltaTable.update_incremental()`
  on a copy of the same log (idle, after 1 and after 5 new commits);
- "before": the same ticks through the previous reading path (pyarrow filesystem, full
  listing every tick, no cache), for the before -> after numbers.

Then requests per idle table per day at the tail interval (and with the idle backoff) and
their price at S3 Standard request prices. Uses a throwaway SQLite database in bench/out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

# S3 Standard, us-east-1: GET/HEAD $0.0004 per 1,000; LIST (and PUT) $0.005 per 1,000.
PRICE = {"GET": 0.0004 / 1000, "HEAD": 0.0004 / 1000, "LIST": 0.005 / 1000}
NEW = 6  # commits written after the initial upload: 1, then 5


def _upload(client, bucket: str, prefix: str, local: Path, versions: range) -> None:
    """Upload the log files of `versions` (commits and checkpoints) and a matching
    `_last_checkpoint`, as a writer would have left them."""
    import orjson
    import pyarrow.parquet as pq

    log_dir = local / "_delta_log"
    last_cp = None
    for name in sorted(os.listdir(log_dir)):
        if not name[:20].isdigit() or int(name[:20]) not in versions:
            continue
        client.put_object(
            Bucket=bucket, Key=f"{prefix}/_delta_log/{name}", Body=(log_dir / name).read_bytes()
        )
        if ".checkpoint." in name:
            last_cp = (int(name[:20]), pq.ParquetFile(log_dir / name).metadata.num_rows)
    if last_cp is not None:
        body = orjson.dumps({"version": last_cp[0], "size": last_cp[1]})
        client.put_object(Bucket=bucket, Key=f"{prefix}/_delta_log/_last_checkpoint", Body=body)


def _count(server, fn) -> Counter[str]:
    with server.counting() as seen:
        fn()
    return server.kinds(seen)


def _fmt(kinds: Counter[str]) -> str:
    total = sum(kinds.values())
    parts = " ".join(f"{k}={v}" for k, v in sorted(kinds.items()))
    return f"{total:4d}  ({parts})" if parts else f"{total:4d}"


def _old_path():
    """The reading path before incremental listing: pyarrow's filesystem (a HEAD before every
    GET), a full listing every tick, no cache."""
    from pyarrow import fs as pafs

    from audit.core.log import DeltaLog
    from audit.core.storage.stores import ArrowStore

    class PyArrowStore(ArrowStore):
        # The constructor before per-root storage options: pyarrow's own S3 client.
        def __init__(self, uri: str):
            self.uri, self.storage, self._where, self._secrets = uri, None, "", ()
            self.fs, root = pafs.FileSystem.from_uri(uri)
            self.root = root.rstrip("/")

    def open_log(uri: str) -> DeltaLog:
        return DeltaLog(PyArrowStore(uri))

    def has_commit(uri: str, version: int) -> bool:
        return PyArrowStore(uri).exists(f"_delta_log/{version:020d}.json")

    return open_log, has_commit


def _peer(server, client, bucket: str, local: Path, n: int) -> dict[str, Counter[str]]:
    """deltalake's DeltaTable.update_incremental() on a copy of the same log."""
    from deltalake import DeltaTable

    prefix = "peer/t"
    uri = f"s3://{bucket}/{prefix}"
    _upload(client, bucket, prefix, local, range(0, n))
    peer: dict[str, Counter[str]] = {}
    holder: list[DeltaTable] = []
    peer["cold tick (first in a process)"] = _count(
        server, lambda: holder.append(DeltaTable(uri, storage_options=server.options))
    )
    dt = holder[0]
    peer["idle tick (worker)"] = _count(server, dt.update_incremental)
    _upload(client, bucket, prefix, local, range(n, n + 1))
    peer["tick after 1 new commit"] = _count(server, dt.update_incremental)
    _upload(client, bucket, prefix, local, range(n + 1, n + NEW))
    peer["tick after 5 new commits"] = _count(server, dt.update_incremental)
    assert dt.version() == n + NEW - 1
    return peer


def bench_size(server, n: int, work: Path) -> dict[str, dict[str, Counter[str]]]:

    from audit.ingest.tables import register_table
    from audit.models import Table
    from audit.tail import kept_logs
    from audit.tail.step import tail_once
    from bench.gen_log import generate

    local = work / f"log{n}"
    generate(str(local), n + NEW)
    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    server.create_bucket(bucket)
    client = server.boto()
    os.environ["AUDIT_ALLOWED_ROOTS"] = f"s3://{bucket}"
    from django.conf import settings

    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket}"]
    settings.AUDIT_CHECK_DATA = False  # the generated log has no data files
    results: dict[str, dict[str, Counter[str]]] = {}

    for mode in ("after", "before"):
        prefix = f"{mode}/t"
        uri = f"s3://{bucket}/{prefix}"
        _upload(client, bucket, prefix, local, range(0, n))
        kept_logs.forget_all()
        saved = kept_logs.refreshed, kept_logs.has_commit
        if mode == "before":
            kept_logs.refreshed, kept_logs.has_commit = _old_path()
        try:
            table, _ = register_table(uri)
            row: dict[str, Counter[str]] = {}
            row["cold tick (first in a process)"] = _count(server, lambda t=table: tail_once(t.id))
            row["probe: next commit? (beat)"] = _count(
                server, lambda u=uri: kept_logs.has_commit(u, n)
            )
            row["idle tick (worker)"] = _count(server, lambda t=table: tail_once(t.id))
            _upload(client, bucket, prefix, local, range(n, n + 1))
            row["tick after 1 new commit"] = _count(server, lambda t=table: tail_once(t.id))
            _upload(client, bucket, prefix, local, range(n + 1, n + NEW))
            row["tick after 5 new commits"] = _count(server, lambda t=table: tail_once(t.id))
            Table.objects.filter(id=table.id).update(
                table_findings_dirty=True, table_findings_at=None
            )
            row["findings refresh tick"] = _count(server, lambda t=table: tail_once(t.id))
            table.refresh_from_db()
            assert table.last_seen_version == n + NEW - 1, (mode, table.last_seen_version)
            results[mode] = row
        finally:
            kept_logs.refreshed, kept_logs.has_commit = saved

    results["peer"] = _peer(server, client, bucket, local, n)
    return results


def per_day(
    probe: Counter[str], idle_tick: Counter[str], interval: float, full_check: float, backoff: bool
) -> Counter[str]:
    """Requests per idle table per day, by kind: a probe every interval, replaced by a worker
    tick every full-check period (the tick answers "anything new?" too). With the backoff,
    after the first hour both happen every 60 s at most (AUDIT_IDLE_INTERVAL_SECONDS)."""
    out: Counter[str] = Counter()

    def add(seconds: float, every: float) -> None:
        ticks = seconds / max(full_check, every)
        probes = seconds / every - ticks
        for kind, n in idle_tick.items():
            out[kind] += round(ticks * n)
        for kind, n in probe.items():
            out[kind] += round(probes * n)

    if backoff:
        add(3600, interval)
        # AUDIT_IDLE_INTERVAL_SECONDS=60, AUDIT_IDLE_FULL_CHECK_SECONDS=600 (the defaults).
        full_check = max(full_check, 600.0)
        add(23 * 3600, max(60.0, interval))
    else:
        add(86_400, interval)
    return out


def price(kinds: Counter[str]) -> float:
    return sum(PRICE[k] * n for k, n in kinds.items())


def report_size(server, n: int, work: Path, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    results = bench_size(server, n, work)
    print(f"\n== log of {n} entries (+{NEW} new)  [{time.perf_counter() - started:.0f}s]")
    print(f"{'requests':34s} {'after':>22s} {'before':>22s} {'peer update_incremental':>26s}")
    for name in results["after"]:
        peer = results["peer"].get(name)
        print(
            f"{name:34s} {_fmt(results['after'][name]):>22s} "
            f"{_fmt(results['before'][name]):>22s} "
            f"{_fmt(peer) if peer is not None else '-':>26s}"
        )
    after, peer = results["after"], results["peer"]
    five = sum(after["tick after 5 new commits"].values()) / 5
    one = sum(after["tick after 1 new commit"].values())
    peer_five = sum(peer["tick after 5 new commits"].values()) / 5
    print(
        f"per new commit: {five:.1f} (5 per tick), {one} (1 per tick, +1 probe HEAD); "
        f"peer {peer_five:.1f} / {sum(peer['tick after 1 new commit'].values())}"
    )
    probe, idle = after["probe: next commit? (beat)"], after["idle tick (worker)"]
    peer_day = Counter(
        {k: round(v * 86_400 / args.interval) for k, v in peer["idle tick (worker)"].items()}
    )
    print(
        f"peer polling update_incremental() every {args.interval:g}s: "
        f"{_fmt(peer_day).strip()} a day, ${price(peer_day):.4f}/day"
    )
    before = results["before"]
    old_day = per_day(
        before["probe: next commit? (beat)"],
        before["idle tick (worker)"],
        args.interval,
        args.full_check,
        False,
    )
    print(
        f"before: idle table per day at {args.interval:g}s: {_fmt(old_day).strip()}, "
        f"${price(old_day):.4f}/day, ${price(old_day) * 365:.2f}/year"
    )
    for backoff in (False, True):
        day = per_day(probe, idle, args.interval, args.full_check, backoff)
        label = " with backoff (60 s after 1 h idle)" if backoff else ""
        print(
            f"idle table per day at {args.interval:g}s{label}: {_fmt(day).strip()}, "
            f"${price(day):.4f}/day, ${price(day) * 365:.2f}/year"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="30,3000")
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--full-check", type=float, default=30.0)
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-objstore-", dir=OUT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{work / 'db.sqlite3'}")
    os.environ["LOG_LEVEL"] = "WARNING"
    from tests.e2e.s3count import CountingS3

    server = CountingS3()
    os.environ.update(server.env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; S3 = moto at {server.endpoint}"
    )
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            report_size(server, n, work, args)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
