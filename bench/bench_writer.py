"""A live lake for bench/bench_api.py's `--writer`: commits to `--tables` tables every second,
stored through the tail's own path, so the caches' generations move while readers measure.

    .venv/bin/python bench/bench_writer.py --database-url URL [--tables 20] [--seconds 600]

Each table is a real Delta table under var/bench-writer/ (`BENCH_WRITER_LAKE` moves it: give a
baseline checkout the same folder, see below; created with delta-rs, registered
with `register_table` into the default project, which the bench reader sees). Every second,
each table gets one more commit (a blind append, as a streaming writer leaves: a commitInfo and
one add action, written as a file like an engine does) and `audit.tail.step.tail_once` stores
it: commits, rollups, health, findings and the table's progress in one transaction, which is
what a worker does on a change notification. Stops by itself after `--seconds`, or on SIGTERM;
prints how many commits it stored and the CPU they cost.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Its own folder by default; BENCH_WRITER_LAKE shares one lake between checkouts (a baseline
# checkout measured against this one must write to the same 20 tables, or the bench database
# gains 20 more tables with every checkout and the tables list grows between the peers).
LAKE = Path(os.environ.get("BENCH_WRITER_LAKE") or ROOT / "var" / "bench-writer")

_stop = False


def _on_term(signum, frame) -> None:
    global _stop
    _stop = True


def make_tables(n: int) -> list[int]:
    """Register `n` Delta tables (made once, reused); their ids."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from audit.ingest.tables import register_table
    from audit.tail.step import tail_once

    ids = []
    for i in range(n):
        path = LAKE / f"t{i:02d}"
        if not (path / "_delta_log").exists():
            batch = pa.table({"day": ["2024-01-01"], "id": pa.array([i], pa.int64())})
            write_deltalake(str(path), batch, partition_by=["day"])
        table, _ = register_table(str(path), name=f"writer-{i:02d}")
        tail_once(table.id)  # its existing history, before the clock starts
        ids.append(table.id)
    return ids


def append(path: Path) -> None:
    """One more commit: a blind append of one (absent) file, as a streaming writer leaves it;
    the audit reads the log, not the data files."""
    log = path / "_delta_log"
    version = 1 + max(int(p.name[:20]) for p in log.glob("*.json"))
    now = int(time.time() * 1000)
    name = f"day=2024-01-01/part-{version:05d}-bench.parquet"
    actions = [
        {"commitInfo": {"timestamp": now, "operation": "WRITE", "isBlindAppend": True,
                        "operationParameters": {"mode": "Append"}, "readVersion": version - 1,
                        "isolationLevel": "WriteSerializable", "engineInfo": "bench-writer"}},
        {"add": {"path": name, "partitionValues": {"day": "2024-01-01"}, "size": 1024,
                 "modificationTime": now, "dataChange": True,
                 "stats": json.dumps({"numRecords": 1})}},
    ]  # fmt: skip
    body = "\n".join(json.dumps(a) for a in actions) + "\n"
    tmp = log / f".{version:020d}.json.tmp"
    tmp.write_text(body)
    os.link(tmp, log / f"{version:020d}.json")  # fails if it exists: put-if-absent
    tmp.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    if not LAKE.resolve().is_relative_to(ROOT):  # the project folder is the default root
        roots = os.environ.get("AUDIT_ALLOWED_ROOTS") or str(ROOT)
        os.environ["AUDIT_ALLOWED_ROOTS"] = f"{roots},{LAKE.resolve()}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from audit.models import Table
    from audit.tail.step import tail_once

    signal.signal(signal.SIGTERM, _on_term)
    LAKE.mkdir(parents=True, exist_ok=True)
    ids = make_tables(args.tables)
    uris = dict(Table.objects.filter(id__in=ids).values_list("id", "uri"))
    print(f"writer: {len(ids)} tables ready", flush=True)
    stored, late, started = 0, 0, time.monotonic()
    cpu0 = time.process_time()
    tick = started
    while not _stop and time.monotonic() - started < args.seconds:
        for table_id in ids:
            append(Path(uris[table_id]))
            stored += tail_once(table_id).stored
        tick += 1.0
        pause = tick - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            late += 1  # the storing took longer than the second
    elapsed = time.monotonic() - started
    cpu = time.process_time() - cpu0
    print(
        f"writer: stored {stored} commits to {len(ids)} tables in {elapsed:.1f} s "
        f"({stored / max(elapsed, 1e-9):.1f}/s), {cpu * 1000 / max(stored, 1):.1f} ms CPU a "
        f"commit, {late} late seconds",
        flush=True,
    )


if __name__ == "__main__":
    main()
