"""The fleet audit on Spark (local, standalone, Connect) and the Python path, side by side.

    .venv/bin/python bench/bench_spark.py [--tables 200] [--commits 1000] [--big 1000000]
        [--masters local[1],local[2],standalone,connect] [--out /tmp/...]

Generates (once; reused by later runs) a fleet of Spark-style tables with bench/gen_log.py
(partitioned, ~70% blind appends, a checkpoint every 100 commits), then times:

- python:   each table opened and audited through the core's front door (as one Celery worker);
- local[1], local[2]: workers.spark.job.audit_fleet over the whole fleet, results streamed
  back to the driver (the session start is timed separately and not in the job's time);
- standalone, connect: the same job on a real standalone master + one 2-core worker and
  through a Spark Connect server on it, both started from pyspark's sbin/ scripts
  (tests/e2e/spark_cluster.py); executors get the core as the shipped zip;
- big: one `--big`-commit table, its log split by version ranges over tasks vs one task;
- checkpoints: reading every table's latest checkpoint with the core (pyarrow, in-process)
  vs spark.read.parquet over the same files (the choice stage 2 makes).

CPU seconds are summed over the processes that ran the tasks (the driver's JVM and Python
workers for local masters, the worker's executors for the cluster), read from /proc before
and after each job: the machine may be shared, so wall time alone says little.

`check_data=False` everywhere: gen_log writes no data files. Prints the scaling from 1 to 2
cores and the cost per commit of each path.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.core.log import list_log, read_checkpoint  # noqa: E402
from audit.core.runs.table import LOG_ONLY, open_table  # noqa: E402
from audit.core.storage.stores import open_store  # noqa: E402
from bench.gen_log import generate  # noqa: E402
from workers.spark.job import audit_fleet  # noqa: E402
from workers.spark.session import get_spark  # noqa: E402


def make_fleet(out: Path, tables: int, commits: int) -> list[str]:
    uris = []
    started, made = time.perf_counter(), 0
    for i in range(tables):
        path = out / f"t{i:04d}"
        last = path / "_delta_log" / f"{commits - 1:020d}.json"
        if not last.exists():
            generate(str(path), commits, seed=i)
            made += 1
        uris.append(str(path))
    if made:
        print(f"generated {made} tables in {time.perf_counter() - started:.1f}s")
    return uris


def python_path(uris: list[str]) -> tuple[float, int, int]:
    started = time.perf_counter()
    commits = findings = 0
    for uri in uris:
        table = open_table(uri, options=LOG_ONLY)
        history = table.history()
        result = table.audit(history)
        commits += len(history.summaries)
        findings += len(result.findings)
    return time.perf_counter() - started, commits, findings


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and all its descendants (user + system, incl. reaped children)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(proc.name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        times[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


def cpu_split(root: int) -> dict[str, float]:
    """CPU seconds of `root`'s tree by role: this Python driver itself, the JVM (its own
    threads), and the rest (the Python workers and their daemon, reaped ones included)."""
    tick = os.sysconf("SC_CLK_TCK")
    split = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        own, reaped = (
            sum(int(x) for x in fields[11:13]) / tick,
            sum(int(x) for x in fields[13:15]) / tick,
        )
        role = "driver" if pid == root else "jvm" if comm == "java" else "workers"
        split[role] += own
        split["workers"] += reaped if pid != root else 0.0
    return split


def spark_path(
    master: str,
    uris: list[str],
    chunk: int,
    conf: dict[str, str],
    cpu_root: int,
    sampler: PeakRss | None = None,
) -> tuple[float, float, float, int, int]:
    """(session s, job wall s, job CPU s, commits, findings) of one fleet job on `master`.
    A `sampler` thread's own CPU (it runs in the driver's process) is left out of the figures."""
    from workers.spark.job import prepare_executors

    started = time.perf_counter()
    spark = get_spark(master, extra_conf=conf)
    spark.range(1).count()  # the first job also starts the Python worker daemon
    prepare_executors(spark)  # ship the core, probe the executors: part of the session cost
    session = time.perf_counter() - started
    cpu, roles = tree_cpu(cpu_root), cpu_split(cpu_root)
    sampled = sampler.cpu if sampler is not None else 0.0
    started = time.perf_counter()
    commits = findings = 0
    for outcome in audit_fleet(spark, uris, chunk_commits=chunk, check_data=False):
        if outcome.error:
            raise SystemExit(f"{outcome.table_uri}: {outcome.error}")
        commits += len(outcome.history.summaries)
        findings += len(outcome.audit.findings)
    job = time.perf_counter() - started
    sampled = (sampler.cpu if sampler is not None else 0.0) - sampled
    cpu = tree_cpu(cpu_root) - cpu - sampled
    if cpu_root == os.getpid():
        after = cpu_split(cpu_root)
        after["driver"] -= sampled
        print(
            "  CPU s by role: " + ", ".join(f"{k} {after[k] - roles[k]:.1f}" for k in after),
            flush=True,
        )
    spark.stop()
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return session, job, cpu, commits, findings


def checkpoint_reads(uris: list[str]) -> tuple[float, float, int, int]:
    latest = []
    for uri in uris:
        listing = list_log(uri)
        version = max(listing.checkpoints)
        latest.append((uri, version, listing.checkpoints[version]))
    started = time.perf_counter()
    adds = sum(len(read_checkpoint(open_store(u), v, f).adds) for u, v, f in latest)
    core = time.perf_counter() - started
    spark = get_spark("local[2]")
    paths = [os.path.join(u, "_delta_log", f[0]) for u, _, f in latest]
    spark.read.parquet(paths[0]).count()  # warm up the reader (class loading), not timed
    started = time.perf_counter()
    spark_adds = spark.read.parquet(*paths).where("add IS NOT NULL").select("add.path").count()
    on_spark = time.perf_counter() - started
    spark.stop()
    return core, on_spark, adds, spark_adds


def show(row: tuple, peak: int | None = None, tree: int | None = None) -> None:
    name, session, wall, cpu, commits, findings = row
    start = f"{session:9.1f}" if session is not None else f"{'-':>9}"
    memory = f" {peak / 2**30:8.2f} {tree / 2**30:8.2f}" if peak is not None and tree else ""
    print(
        f"{name:<22} {start} {wall:8.2f} {cpu:8.2f} {commits:10,} {findings:9,} "
        f"{wall / max(commits, 1) * 1e6:10.1f}{memory}",
        flush=True,
    )


def masters_of(names: str, cluster: Any) -> list[tuple[str, str, dict[str, str], int]]:
    """(label, master URL, extra conf, pid whose process tree runs the tasks) per name."""
    out = []
    for name in names.split(","):
        if name.startswith("local"):
            out.append((f"spark {name}", name, {}, os.getpid()))
        elif name == "standalone":
            conf = {"spark.pyspark.python": sys.executable, "spark.driver.host": "127.0.0.1"}
            out.append(("spark standalone", cluster.master_url, conf, cluster.worker_pid()))
        elif name == "connect":
            out.append(("spark connect", cluster.connect_url, {}, cluster.worker_pid()))
    return out


def big_table(
    out: Path, commits: int, chunk: int, cores: int, paths: str = "python,split,one"
) -> None:
    """One long history: split into version ranges over the tasks vs audited in one task,
    against the Python path (one process, no Spark) in the same run.

    Split, each range is audited over its concurrent window and sends back its commits and
    its partial of the whole-history findings, merged on the driver without a second audit
    (docs/spark.md, "Long histories"). Prints wall and CPU per path, the ratios against the
    Python path, and peak RSS: the Python path's process, the Spark driver's Python process
    (reset before each job) and the whole tree (driver, JVM, Python workers; sampled).
    """
    path = out / f"big-{commits}"
    if not (path / "_delta_log" / f"{commits - 1:020d}.json").exists():
        started = time.perf_counter()
        # As bench_log.py: a checkpoint per 100 commits makes a 1M log quadratic (~20 GB).
        interval = 100 if commits <= 100_000 else commits // 1000
        generate(str(path), commits, seed=99, checkpoint_interval=interval)
        print(f"generated the {commits:,}-commit table in {time.perf_counter() - started:.0f}s")
    warmed = warm_page_cache(path)
    print(f"\none table of {commits:,} commits (local[{cores}]), load average {_load()}")
    print(f"(read {warmed / 2**30:.1f} GB of its log first: every path starts from a warm cache)")
    print(
        f"{'path':<22} {'session s':>9} {'wall s':>8} {'cpu s':>8} {'commits':>10} "
        f"{'findings':>9} {'µs/commit':>10} {'peak GB':>8} {'tree GB':>8}"
    )
    py, py_cpu, findings = 1.0, 1.0, None
    if "python" in paths:
        py, py_cpu, py_commits, findings, py_rss = python_in_child(path)
        assert py_commits == commits
        show(("python (1 process)", None, py, py_cpu, commits, findings), py_rss, py_rss)
    split = max(1, min(chunk, -(-commits // (cores * 4))))
    runs = ((f"split, {split:,}/range", split, "split"), ("one task", commits, "one"))
    for label, size, _ in (r for r in runs if r[2] in paths.split(",")):
        with PeakRss(os.getpid()) as peak:
            row = spark_path(f"local[{cores}]", [str(path)], size, {}, os.getpid(), peak)
        show((label, *row), peak.driver, peak.tree)
        findings = row[4] if findings is None else findings
        assert row[3:] == (commits, findings), "split and one task disagree with python"
        print(
            f"  {label} vs python: {py / row[1]:.2f}x faster (wall), CPU {row[2] / py_cpu:.2f}x "
            if "python" in paths
            else f"  {label}: "
            f"python's; driver peak {peak.driver / 2**30:.2f} GB; load average {_load()}",
            flush=True,
        )


def warm_page_cache(table: Path) -> int:
    """Read every file of the table's log once, so no path is timed reading from the disk.

    The first path to read a 1M-commit log just after it was written or after other work
    (6 GB with its checkpoints) waited on the disk: the Python path, timed first, took 95-125 s
    of wall for 84-98 s of CPU where a warm run took 75 s for 74, which made the split look
    1.50-2.21x faster instead of 1.31x. Returns the bytes read.
    """
    total = 0
    for entry in os.scandir(table / "_delta_log"):
        if entry.is_file():
            with open(entry.path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
    return total


_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from audit.core.runs.table import LOG_ONLY, open_table
started, cpu = time.perf_counter(), time.process_time()
table = open_table(sys.argv[1], options=LOG_ONLY)
history = table.history()
findings = len(table.audit(history).findings)
print(json.dumps([time.perf_counter() - started, time.process_time() - cpu,
    len(history.summaries), findings, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]))
"""


def python_in_child(path: Path) -> tuple[float, float, int, int, int]:
    """The Python path in a fresh process: (wall s, CPU s, commits, findings, peak RSS bytes)."""
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), root], capture_output=True, text=True, check=True
    )
    wall, cpu, commits, findings, rss = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu, commits, findings, rss


class PeakRss:
    """Peak RSS of this (driver) process, reset on entry (/proc/self/clear_refs), and of its
    whole process tree (the JVM and its Python workers), sampled every 0.1 s; the tree is
    found again once a second (a walk of /proc costs ~5-10 ms: every sample, it was ~5-10% of
    a core charged to the driver). `cpu`: the sampler thread's own CPU seconds so far."""

    def __init__(self, root: int):
        self.root, self.driver, self.tree, self.cpu = root, 0, 0, 0.0
        self._stop = threading.Event()

    def __enter__(self) -> PeakRss:
        # An older kernel refuses: the peak then includes what came before.
        with contextlib.suppress(OSError):
            Path(f"/proc/{self.root}/clear_refs").write_text("5")
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.driver = _status_kb(self.root, "VmHWM") * 1024

    def _sample(self) -> None:
        pids, samples = _tree(self.root), 0
        while not self._stop.wait(0.1):
            samples += 1
            if samples % 10 == 0:
                pids = _tree(self.root)
            self.tree = max(self.tree, sum(_status_kb(p, "VmRSS") for p in pids) * 1024)
            self.cpu = time.thread_time()


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument(
        "--chunk", type=int, default=100_000, help="commits per range (AUDIT_SPARK_CHUNK_COMMITS)"
    )
    parser.add_argument("--big", type=int, default=1_000_000, help="commits of the long table")
    parser.add_argument("--big-only", action="store_true", help="only the long table")
    parser.add_argument(
        "--big-paths", default="python,split,one", help="of the long table: python,split,one"
    )
    parser.add_argument(
        "--masters", default="local[1],local[2],standalone,connect", help="comma-separated"
    )
    parser.add_argument("--no-checkpoints", action="store_true")
    parser.add_argument("--out", default="/tmp/delta-audit-bench-fleet")
    args = parser.parse_args(argv)
    if args.big_only:
        big_table(Path(args.out), args.big, args.chunk, 2, args.big_paths)
        return 0
    uris = fleet(args)
    if args.big:
        big_table(Path(args.out), args.big, args.chunk, 2, args.big_paths)
    if not args.no_checkpoints:
        core, on_spark, adds, spark_adds = checkpoint_reads(uris)
        print(
            f"\nlatest checkpoint of each table ({adds:,} live files): core/pyarrow {core:.2f}s, "
            f"spark.read.parquet {on_spark:.2f}s ({spark_adds:,} add rows)"
        )
    return 0


def fleet(args: argparse.Namespace) -> list[str]:
    """The fleet on the Python path and on every master; prints the rows and the ratios."""
    out = Path(args.out) / f"{args.tables}x{args.commits}"
    out.mkdir(parents=True, exist_ok=True)
    uris = make_fleet(out, args.tables, args.commits)
    for uri in uris:
        warm_page_cache(Path(uri))
    total = args.tables * args.commits
    print(f"fleet: {args.tables} tables x {args.commits} commits = {total:,} commits ({out})")
    print(f"load average before: {_load()}")
    header = f"{'path':<22} {'session s':>9} {'wall s':>8} {'cpu s':>8} {'commits':>10}"
    print(f"\n{header} {'findings':>9} {'µs/commit':>10}")
    cpu = tree_cpu(os.getpid())
    py_time, py_commits, py_findings = python_path(uris)
    rows = [
        ("python (1 process)", None, py_time, tree_cpu(os.getpid()) - cpu, py_commits, py_findings)
    ]
    show(rows[-1])
    cluster = None
    if "standalone" in args.masters or "connect" in args.masters:
        from tests.e2e.spark_cluster import Cluster

        cluster = Cluster(Path(tempfile.mkdtemp(prefix="bench-spark-cluster-"))).start()
    try:
        for name in args.masters.split(","):
            if name == "connect":  # its server holds the worker's cores: start it last
                cluster.start_connect(cores=2)
            [(label, master, conf, root)] = masters_of(name, cluster)
            rows.append((label, *spark_path(master, uris, args.chunk, conf, root)))
            show(rows[-1])
    finally:
        if cluster is not None:
            cluster.stop()
    assert len({r[4] for r in rows}) == 1 and len({r[5] for r in rows}) == 1, "paths disagree"
    walls = {r[0]: r[2] for r in rows}
    if {"spark local[1]", "spark local[2]"} <= set(walls):
        one, two = walls["spark local[1]"], walls["spark local[2]"]
        print(
            f"\nscaling local[1] -> local[2]: {one / two:.2f}x  (job wall time, session excluded)"
        )
        print(f"spark local[2] vs python: {py_time / two:.2f}x")
    print(f"load average after: {_load()}")
    return uris


if __name__ == "__main__":
    sys.exit(main())
