"""Benchmark reading a large Delta log: our reader against the read/parse floor and deltalake.

    python bench/bench_log.py [TABLE] [--commits 100000] [--repeat 1] [--no-memory]

TABLE defaults to /tmp/delta-bench-<N>, generated with bench/gen_log.py when absent.
Timings are taken side by side in this one process (after one warm-up pass so every case
sees a warm page cache). Peak memory is measured per case in a fresh subprocess (maxrss
after the case minus maxrss after imports), so cases do not inherit each other's peaks.

To add a case, add a function `(table_path) -> object` to CASES.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the project root, for `audit.core`

from audit.core.log import apply_commit, empty_state, open_log  # noqa: E402


def _commit_paths(table: str) -> list[str]:
    log_dir = os.path.join(table, "_delta_log")
    names = sorted(n for n in os.listdir(log_dir) if len(n) == 25 and n.endswith(".json"))
    return [os.path.join(log_dir, n) for n in names]


def read_bytes(table: str) -> int:
    """(a) Read every commit file's bytes."""
    total = 0
    for path in _commit_paths(table):
        with open(path, "rb") as fh:
            total += len(fh.read())
    return total


def read_parse(table: str) -> int:
    """(b) Read + orjson-parse every line: the floor for any Python reader."""
    loads, actions = orjson.loads, 0
    for path in _commit_paths(table):
        with open(path, "rb") as fh:
            for line in fh.read().split(b"\n"):
                if line:
                    loads(line)
                    actions += 1
    return actions


def ours(table: str) -> int:
    """(c) Our listing + iter_commits over every commit + replay to the latest version."""
    log = open_log(table)
    state = empty_state()
    for commit in log.iter_commits():
        apply_commit(state, commit)
    return len(state.files)


def ours_snapshot(table: str) -> int:
    """Latest state only: checkpoint + the commits after it."""
    return len(open_log(table).snapshot().files)


def deltalake_history(table: str) -> int:
    """(d) deltalake: load the table and read its whole history."""
    from deltalake import DeltaTable

    return len(DeltaTable(table).history())


def audit_json_in_process(table: str) -> int:
    """The work of `manage.py audit --json`: summaries, the audit, the report, serialised."""
    from audit.core.audit import audit_history
    from audit.core.report import build_report
    from audit.core.summary import load_history

    history = load_history(table)
    report = build_report(history, audit_history(history))
    return len(orjson.dumps(report))


def audit_json_command(table: str) -> int:
    """The whole command as a user runs it (interpreter + Django start-up included)."""
    root = os.path.dirname(HERE)
    out = subprocess.run(
        [sys.executable, os.path.join(root, "manage.py"), "audit", table, "--json"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return len(out.stdout)


CASES: dict[str, Callable[[str], object]] = {
    "read_bytes": read_bytes,
    "read_parse (floor)": read_parse,
    "ours: iter_commits+replay": ours,
    "ours: snapshot(latest)": ours_snapshot,
    "deltalake history()": deltalake_history,
    "audit --json (in process)": audit_json_in_process,
    "manage.py audit --json": audit_json_command,
}


def _maxrss_mb() -> float:
    """Peak RSS of this process image in MB.

    /proc's VmHWM is per address space, so it starts afresh at exec; ru_maxrss can carry
    the parent's peak across fork+exec, which would hide the case being measured.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _time(fn: Callable[[str], object], table: str, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn(table)
        best = min(best, time.perf_counter() - started)
    return best, result


def _measure_memory(name: str, table: str) -> float | None:
    """Peak RSS growth of one case, in MB, measured in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, __file__, table, "--memory-of", name],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"])
    except (ValueError, IndexError, KeyError):
        print(f"  memory of {name!r} failed: {out.stderr.strip()[-300:]}", file=sys.stderr)
        return None


def _ensure_table(table: str, commits: int) -> None:
    if os.path.isdir(os.path.join(table, "_delta_log")):
        return
    sys.path.insert(0, HERE)
    from gen_log import generate

    print(f"generating {commits} commits into {table} ...", flush=True)
    started = time.perf_counter()
    generate(table, commits)
    print(f"  done in {time.perf_counter() - started:.1f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?")
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per case")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    table = args.table or f"/tmp/delta-bench-{args.commits}"

    if args.memory_of:  # child mode: run one case, report its peak RSS growth
        before = _maxrss_mb()
        CASES[args.memory_of](table)
        peak = _maxrss_mb() - before
        if args.memory_of == "manage.py audit --json":
            # The work runs in a grandchild: report its whole peak RSS (imports included).
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(json.dumps({"peak_mb": peak}))
        return 0

    _ensure_table(table, args.commits)
    read_bytes(table)  # warm the page cache so the first case is not penalised
    print(f"table: {table} ({len(_commit_paths(table))} commit files)")
    times: dict[str, float] = {}
    for name, fn in CASES.items():
        seconds, result = _time(fn, table, args.repeat)
        times[name] = seconds
        memory = None if args.no_memory else _measure_memory(name, table)
        mem_text = f"  peak +{memory:7.1f} MB" if memory is not None else ""
        print(f"{name:28s} {seconds:7.2f}s{mem_text}   (result: {result})", flush=True)

    floor, mine = times["read_parse (floor)"], times["ours: iter_commits+replay"]
    print(f"ours / floor        = {mine / floor:.2f}x   (target <= 1.3x)")
    print(f"deltalake / ours    = {times['deltalake history()'] / mine:.2f}x")
    print(f"ours / read_bytes   = {mine / times['read_bytes']:.2f}x")
    command = times["manage.py audit --json"]
    print(f"manage.py audit --json / floor     = {command / floor:.2f}x   (target <= 1.5x)")
    print(
        f"deltalake history() / audit --json = {times['deltalake history()'] / command:.2f}x   (target >= 2x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
