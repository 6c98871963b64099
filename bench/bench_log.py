"""Benchmark reading and auditing a large Delta log against deltalake, in the same run.

    python bench/bench_log.py [TABLE] [--commits 100000] [--repeat 1] [--no-memory]
                              [--cases NAME,NAME] [--phases]
    python bench/bench_log.py --commits 1000000 --cases deltalake,command --phases   # 1M run
    python bench/bench_log.py --generator contended --baseline-root /tmp/old \
                              --cases deltalake,baseline,command                  # 2nd log

TABLE defaults to bench/out/delta-bench-<N>, generated with bench/gen_log.py when absent and
kept (a 1M-commit log takes a while to write); `--generator contended` uses
bench/out/contended-bench-<N> from bench/gen_contended_log.py instead (few partitions,
deletion vectors, stale concurrent DML: many more findings per commit). Every case is timed side by side in this one
process after a warm-up read, so all see a warm page cache and the same machine load; each
prints its wall time, its CPU time (this process plus reaped children: fairer than wall time
on a loaded machine) and both as a ratio to deltalake's `DeltaTable.history()` measured in
the same run. The load average is printed at the start and the end.

Peak memory is measured per case in a fresh subprocess: the growth of VmHWM for in-process
cases; for `manage.py audit --json` the peak of the summed RSS of its process tree (it forks
a second process for the later half of the log), sampled every 20 ms.

`--phases` prints where the time of the in-process audit goes: reading the listing, the
latest snapshot, the summaries (one process and two), the audit, the report, the JSON.

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
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # the project root, for `audit.core`

from audit.core.log import apply_commit, empty_state, open_log  # noqa: E402

PEER = "deltalake history()"
COMMAND = "manage.py audit --json"
BASELINE = "baseline: manage.py audit"


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
    """The work of `manage.py audit --json` in one process: summaries, audit, report, JSON."""
    from audit.core.report import build_report
    from audit.core.runs.table import open_table

    audited = open_table(table)
    history = audited.history()
    report = build_report(history, audited.audit(history))
    return len(orjson.dumps(report, option=orjson.OPT_NON_STR_KEYS))


def _command_args(table: str) -> list[str]:
    return [sys.executable, os.path.join(ROOT, "manage.py"), "audit", table, "--json"]


def audit_json_command(table: str) -> int:
    """The whole command as a user runs it (interpreter start-up included)."""
    out = subprocess.run(_command_args(table), cwd=ROOT, capture_output=True, check=True)
    return len(out.stdout)


CASES: dict[str, Callable[[str], object]] = {
    "read_bytes": read_bytes,
    "read_parse (floor)": read_parse,
    "ours: iter_commits+replay": ours,
    "ours: snapshot(latest)": ours_snapshot,
    PEER: deltalake_history,
    "audit --json (in process)": audit_json_in_process,
    COMMAND: audit_json_command,
}
# Short names for --cases.
ALIASES = {"deltalake": PEER, "command": COMMAND, "floor": "read_parse (floor)"}


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


def _cpu_seconds() -> float:
    """CPU time of this process and of every child (and grandchild) reaped so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _time(fn: Callable[[str], object], table: str, repeat: int) -> tuple[float, float, object]:
    """Best wall time and best CPU time of `repeat` runs, and the last result."""
    best_wall, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        cpu, started = _cpu_seconds(), time.perf_counter()
        result = fn(table)
        best_wall = min(best_wall, time.perf_counter() - started)
        best_cpu = min(best_cpu, _cpu_seconds() - cpu)
    return best_wall, best_cpu, result


def _measure_memory(name: str, table: str, baseline_root: str | None) -> str | None:
    """Peak memory of one case, in MB, measured in a fresh interpreter."""
    extra = ["--baseline-root", baseline_root] if baseline_root else []
    out = subprocess.run(
        [sys.executable, __file__, table, "--memory-of", name, *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        text = f"peak {float(measured['peak_mb']):7.1f} MB"
        if "process_mb" in measured:
            text += f" (largest process {float(measured['process_mb']):.1f} MB)"
        return text
    except (ValueError, IndexError, KeyError):
        print(f"  memory of {name!r} failed: {out.stderr.strip()[-300:]}", file=sys.stderr)
        return None


def _tree_rss_kb(pid: int) -> int:
    """Summed VmRSS of `pid` and its descendants (0 once it is gone)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return total
    return total + sum(_tree_rss_kb(child) for child in children)


def _command_peak_mb(table: str, root: str) -> tuple[float, float]:
    """Peak summed RSS of the command's process tree, sampled every 20 ms, and the peak of its
    largest process (the forked child's memory is mostly the parent's, shared until written)."""
    args = [sys.executable, os.path.join(root, "manage.py"), "audit", table, "--json"]
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.read().decode() if proc.stderr else "command failed")
    # A process's own high-water mark may exceed what the sampler saw between samples.
    single = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(peak, single) / 1024, single / 1024


def _phases(table: str) -> None:
    """Where the time of `audit --json` goes, phase by phase (in process, gc paused as there)."""
    from audit.core.audit import audit_history
    from audit.core.history.parallel import summarize_log_parallel
    from audit.core.history.summarize import summarize_log
    from audit.core.history.summary import History, paused_gc
    from audit.core.integrity.checks import IntegrityTap
    from audit.core.report import build_report
    from audit.core.runs.sections import add_health_and_changes

    rows: list[tuple[str, float, float]] = []

    def timed(name: str, fn: Callable[[], object]) -> object:
        cpu, started = _cpu_seconds(), time.perf_counter()
        result = fn()
        rows.append((name, time.perf_counter() - started, _cpu_seconds() - cpu))
        return result

    with paused_gc():
        log = timed("listing (open_log)", lambda: open_log(table))
        state = timed("latest snapshot (checkpoint)", log.snapshot)
        # Both with the integrity checks, which run on the summaries' own pass.
        first = log.listing.commit_versions[0]
        sink = IntegrityTap(log, first).observe_refs
        timed("summaries, one process", lambda: summarize_log(log, None, None, [], [], sink=sink))
        timelines: tuple[list, list] = ([], [])
        tap = IntegrityTap(log, first)
        summaries = timed(
            "summaries, two processes",
            lambda: summarize_log_parallel(log, None, None, *timelines, tap),
        )
    history = History(
        log.uri, log.listing, state, summaries, *timelines, integrity=tap.findings, _log=log
    )
    result = timed("audit_history", lambda: audit_history(history))
    report = timed("build_report", lambda: build_report(history, result))
    timed("health + changes", lambda: add_health_and_changes(report, history))
    timed("orjson.dumps", lambda: orjson.dumps(report, option=orjson.OPT_NON_STR_KEYS))
    print(f"phases ({len(summaries)} commits):")
    for name, wall, cpu in rows:
        print(f"  {name:32s} {wall:7.2f}s wall {cpu:7.2f}s cpu")


# --generator: the module writing the log, and the folder name under bench/out/.
GENERATORS = {
    "spark": ("gen_log", "delta-bench"),
    "contended": ("gen_contended_log", "contended-bench"),
}


def _ensure_table(table: str, commits: int, generator: str = "spark") -> None:
    if os.path.isdir(os.path.join(table, "_delta_log")):
        return
    sys.path.insert(0, HERE)
    generate = __import__(GENERATORS[generator][0]).generate

    # Live files grow with the log: a checkpoint per 100 commits would make a 1M log
    # quadratic to write (and ~20 GB); the audit reads only the latest checkpoint anyway.
    interval = 100 if commits <= 100_000 else commits // 1000
    print(f"generating {commits} commits into {table} (checkpoint every {interval}) ...")
    started = time.perf_counter()
    generate(table, commits, checkpoint_interval=interval)
    print(f"  done in {time.perf_counter() - started:.1f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?")
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per case")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--cases", help="comma-separated case names or aliases (default: all)")
    parser.add_argument("--phases", action="store_true", help="print the in-process phases")
    parser.add_argument(
        "--baseline-root",
        help="another checkout (e.g. `git archive <rev>` unpacked): adds its command as a case",
    )
    parser.add_argument(
        "--generator",
        choices=sorted(GENERATORS),
        default="spark",
        help="which generator's log when TABLE is not given (default: gen_log.py's)",
    )
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_root:
        _add_baseline(args.baseline_root)
    folder = GENERATORS[args.generator][1]
    table = args.table or os.path.join(HERE, "out", f"{folder}-{args.commits}")

    if args.memory_of:  # child mode: run one case, report its peak memory
        if args.memory_of in (COMMAND, BASELINE):
            root = args.baseline_root if args.memory_of == BASELINE else ROOT
            peak, process = _command_peak_mb(table, root)
            print(json.dumps({"peak_mb": peak, "process_mb": process}))
            return 0
        before = _maxrss_mb()
        CASES[args.memory_of](table)
        print(json.dumps({"peak_mb": _maxrss_mb() - before}))
        return 0

    names = list(CASES)
    if args.cases:
        names = [ALIASES.get(n.strip(), n.strip()) for n in args.cases.split(",")]
        unknown = [n for n in names if n not in CASES]
        if unknown:
            parser.error(f"unknown cases {unknown}; known: {list(CASES)} or {list(ALIASES)}")
        if PEER not in names:
            names.insert(0, PEER)  # every ratio needs its peer from the same run
    _ensure_table(table, args.commits, args.generator)
    read_bytes(table)  # warm the page cache so the first case is not penalised
    print(f"table: {table} ({len(_commit_paths(table))} commit files)")
    print(f"load average at start: {_load()}  (cores: {os.cpu_count()})")
    times: dict[str, tuple[float, float]] = {}
    for name in names:
        wall, cpu, result = _time(CASES[name], table, args.repeat)
        times[name] = (wall, cpu)
        memory = None if args.no_memory else _measure_memory(name, table, args.baseline_root)
        mem_text = f"  {memory}" if memory is not None else ""
        print(f"{name:28s} {wall:7.2f}s wall {cpu:7.2f}s cpu{mem_text}   (result: {result})")
    print(f"load average at end: {_load()}")
    peer_wall, peer_cpu = times[PEER]
    print(f"ratios to {PEER} in this run (wall, cpu):")
    for name, (wall, cpu) in times.items():
        if name != PEER:
            print(f"  {name:28s} {wall / peer_wall:5.2f}x  {cpu / peer_cpu:5.2f}x")
    if COMMAND in times:
        print(f"{COMMAND} / {PEER} = {times[COMMAND][0] / peer_wall:.2f}x wall  (target <= 0.5x)")
    if COMMAND in times and BASELINE in times:
        (wall, cpu), (old_wall, old_cpu) = times[COMMAND], times[BASELINE]
        print(f"{COMMAND} / {BASELINE} = {wall / old_wall:.2f}x wall {cpu / old_cpu:.2f}x cpu")
    if args.phases:
        _phases(table)
    return 0


def _add_baseline(root: str) -> None:
    """A case running `manage.py audit --json` of another checkout, for before/after runs."""

    def baseline_command(table: str) -> int:
        args = [sys.executable, os.path.join(root, "manage.py"), "audit", table, "--json"]
        return len(subprocess.run(args, cwd=root, capture_output=True, check=True).stdout)

    CASES[BASELINE] = baseline_command
    ALIASES["baseline"] = BASELINE


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
