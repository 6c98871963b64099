"""Table discovery: folders listed and time for a root of many tables, against a naive walk.

    .venv/bin/python bench/bench_discover.py [--tables 200] [--partitions 20] [--s3-tables 40]

1. Local: N tables at depths 1..5, each with P partition folders. `discover_tables` (one
   listing per folder, never inside a table) against the peer: `os.walk` over the whole tree
   keeping folders that hold `_delta_log` (what a naive scan does: it enters every partition).
2. S3 (moto's server, started here): the requests the server saw for one discovery of a
   prefix with M tables (counted from the server's own request log), i.e. the LIST cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_template(base: Path, partitions: int) -> Path:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = base / "template"
    days = [f"2024-01-{d + 1:02d}" for d in range(partitions)]
    write_deltalake(
        str(path),
        pa.table({"day": days, "id": pa.array(range(partitions), pa.int64())}),
        partition_by=["day"],
    )
    return path


def build_lake(root: Path, template: Path, n: int) -> list[str]:
    uris = []
    for i in range(n):
        depth = 1 + i % 5
        parts = [f"team{i % 7}"] + [f"level{d}" for d in range(1, depth)] + [f"t{i:03d}"]
        path = root.joinpath(*parts[-depth:])
        shutil.copytree(template, path)
        uris.append(str(path))
    return uris


def naive_walk(root: Path) -> tuple[list[str], int]:
    found, folders = [], 0
    for dirpath, dirnames, _ in os.walk(root):
        folders += 1
        if "_delta_log" in dirnames:
            found.append(dirpath)
    return sorted(found), folders


def bench_local(n: int, partitions: int, work: Path) -> None:
    from audit.core.log.discovery import discover_tables

    template = build_template(work, partitions)
    expected = sorted(build_lake(work / "lake", template, n))
    t0 = time.process_time()
    result = discover_tables(str(work / "lake"))
    ours = time.process_time() - t0
    t0 = time.process_time()
    peer, peer_folders = naive_walk(work / "lake")
    theirs = time.process_time() - t0
    assert [t.uri for t in result.tables] == expected == peer
    print(f"local: {n} tables x {partitions} partitions, all found by both")
    print(f"  discover: {result.folders_listed} folders listed, {ours * 1000:.0f} ms CPU")
    print(f"  os.walk (peer): {peer_folders} folders listed, {theirs * 1000:.0f} ms CPU")
    print(
        f"  ratio: {result.folders_listed / peer_folders:.2f}x the folders, "
        f"{ours / max(theirs, 1e-9):.2f}x the CPU time"
    )


def bench_s3(m: int, partitions: int, work: Path) -> None:
    from audit.core.log.discovery import discover_tables
    from tests.e2e.objstore import MotoS3, upload_table

    template = build_template(work / "s3", partitions)
    server = MotoS3().start()
    try:
        bucket = server.create_bucket()
        for i in range(m):
            prefix = "/".join([f"dom{i % 3}", *(["sub"] * (i % 4)), f"t{i:02d}"])
            upload_table(template, f"s3://{bucket}/lake/{prefix}", server.options())
        os.environ.update({k: v for k, v in server.env().items()})
        log = server.server.log
        before = log.read_text().count('"GET ') + log.read_text().count('"HEAD ')
        t0 = time.perf_counter()
        result = discover_tables(f"s3://{bucket}/lake")
        wall = time.perf_counter() - t0
        text = log.read_text()
        requests = text.count('"GET ') + text.count('"HEAD ') - before
        assert len(result.tables) == m
        print(f"s3 (moto): {m} tables x {partitions} partitions found")
        print(
            f"  {requests} requests ({requests / m:.2f} per table), "
            f"{result.folders_listed} listings, {wall:.2f} s wall"
        )
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--s3-tables", type=int, default=40)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_local(args.tables, args.partitions, Path(tmp))
        if args.s3_tables:
            bench_s3(args.s3_tables, args.partitions, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
