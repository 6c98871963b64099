"""CPU of one tail step that stores one new commit, on a table of many live files.

    .venv/bin/python bench/bench_step.py [--files 20000] [--commits 300] [--steps 40]
        [--baseline-root /tmp/old] [--peers cache-off]

The table is a log written directly (its data files are absent: the tail reads only the log):
version 0 adds `--files` files over 100 partitions, then `--commits` streaming appends of one
file each, a checkpoint every 100 versions (delta-rs writes it). Each case runs in a fresh
process on a fresh SQLite database: registers the table, stores its history, then `--steps`
times appends a commit and runs `audit.tail.step.tail_once`, the worker's step. It prints the
median and mean process CPU of those steps (the appends not counted) and the ratios.

SQLite by default; `--postgres postgres://postgres@127.0.0.1:5432` uses a fresh database
`bench_step` on that server per case. Cases: `now` (this checkout); `cache-off` (this checkout with AUDIT_STATE_CACHE_FILES=0: every
step re-reads the checkpoint); `baseline` (another checkout, `git archive <rev> | tar -x -C
/tmp/old`, with `--baseline-root`). Cases alternate over `--rounds`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_writer import append  # noqa: E402


def make_table(path: Path, files: int, commits: int) -> None:
    from deltalake import DeltaTable

    log = path / "_delta_log"
    log.mkdir(parents=True)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "day", "type": "string", "nullable": True, "metadata": {}},
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
    now = int(time.time() * 1000)
    actions = [
        {"commitInfo": {"timestamp": now, "operation": "WRITE", "isBlindAppend": True,
                        "operationParameters": {"mode": "Append"}}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "bench-step", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": ["day"],
                      "configuration": {}, "createdTime": now}},
    ]  # fmt: skip
    for i in range(files):
        day = f"2024-01-{i % 100:03d}"
        actions.append({"add": {"path": f"day={day}/part-{i:06d}.parquet",
                                "partitionValues": {"day": day}, "size": 1000 + i,
                                "modificationTime": now, "dataChange": True,
                                "stats": json.dumps({"numRecords": 10})}})  # fmt: skip
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for version in range(1, commits + 1):
        append(path)
        if version % 100 == 0:
            DeltaTable(str(path)).create_checkpoint()


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, args.child_root)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.core.management import call_command

    from audit.ingest.tables import register_table
    from audit.tail.step import tail_once

    call_command("migrate", verbosity=0)
    table, _ = register_table(args.table, name="bench-step")
    tail_once(table.id)
    times = []
    for _ in range(args.steps):
        append(Path(args.table))
        cpu = time.process_time()
        assert tail_once(table.id).stored == 1
        times.append((time.process_time() - cpu) * 1000)
    print(json.dumps(times))


def fresh_postgres(server: str, name: str) -> str:
    """`server` (postgres://user@host:port) with an empty database `name`; its URL."""
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


def run_case(label: str, root: Path, table: Path, args: argparse.Namespace) -> list[float]:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        env["DATABASE_URL"] = f"sqlite:///{tmp}/db.sqlite3"
        if args.postgres:
            env["DATABASE_URL"] = fresh_postgres(args.postgres, "bench_step")
        if label == "cache-off":
            env["AUDIT_STATE_CACHE_FILES"] = "0"
        copy = Path(tmp) / "t"  # each case its own copy: the steps append to it
        subprocess.run(["cp", "-r", str(table), str(copy)], check=True)
        env["AUDIT_ALLOWED_ROOTS"] = tmp
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--child-root", str(root), "--table",
             str(copy), "--steps", str(args.steps)],
            env=env, check=True, capture_output=True, text=True, cwd=root,
        ).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--peers", default="cache-off")
    parser.add_argument("--baseline-root")
    parser.add_argument(
        "--postgres", help="e.g. postgres://postgres@127.0.0.1:5432 (default: SQLite)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-root", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    cases = {"now": ROOT}
    for peer in filter(None, args.peers.split(",")):
        cases[peer] = ROOT
    if args.baseline_root:
        cases["baseline"] = Path(args.baseline_root)
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "t"
        make_table(table, args.files, args.commits)
        steps: dict[str, list[float]] = {label: [] for label in cases}
        for _ in range(args.rounds):
            for label, root in cases.items():
                steps[label] += run_case(label, root, table, args)
    now = statistics.median(steps["now"])
    database = "PostgreSQL" if args.postgres else "SQLite"
    print(
        f"{args.files} live files, {args.commits} commits, {args.steps} steps x {args.rounds}, {database}"
    )
    for label, times in steps.items():
        median = statistics.median(times)
        print(f"{label:10} median {median:7.1f} ms  mean {statistics.mean(times):7.1f} ms"
              f"  ({median / now:.2f}x now)")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
