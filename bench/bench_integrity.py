"""Cost of the integrity pass, the cycles and the writer telemetry, against reading the log.

    .venv/bin/python bench/bench_integrity.py [--commits 20000] [--table /tmp/delta-bench-20k]

Generates (once) a Spark-style log with bench/gen_log.py, then measures in one process, in CPU
seconds (the machine is shared: wall time is noisy):
- peer: `load_history(uri)` with the integrity tap switched off (listing, parsing, summaries):
  what every audit paid before;
- `load_history(uri)` as shipped: the integrity checks run on the same parse (IntegrityTap);
- `integrity_findings` on a history without tap results: the re-read path (Spark histories);
- `audit_history(history, check_data=False)` with everything (cycles, retry storms);
- `writer_telemetry(history, result.commits)`.
Prints each time and its ratio to the peer, the findings of the integrity kinds (0 expected on
the generated log), and the load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.core.audit import audit_history  # noqa: E402
from audit.core.history.summary import load_history  # noqa: E402
from audit.core.integrity import checks as integrity  # noqa: E402
from audit.core.integrity.checks import integrity_findings  # noqa: E402
from audit.core.writers import writer_telemetry  # noqa: E402
from bench.gen_log import generate  # noqa: E402


def cpu(fn):
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--table", default=None)
    args = parser.parse_args()
    table = args.table or f"/tmp/delta-bench-integrity-{args.commits}"
    if not Path(table, "_delta_log").exists():
        generate(table, args.commits)
    # The tap observes the digest pass's refs (summarize.summarize_log): switch its checks off.
    tap_observe = integrity.IntegrityTap.observe_refs
    integrity.IntegrityTap.observe_refs = lambda self, commit, adds, removes: None
    _, t_load = cpu(lambda: load_history(table))
    integrity.IntegrityTap.observe_refs = tap_observe
    history, t_tapped = cpu(lambda: load_history(table))
    found = integrity_findings(history)
    _, t_integrity = cpu(lambda: integrity_findings(dataclasses.replace(history, integrity=None)))
    result, t_audit = cpu(lambda: audit_history(history, check_data=False))
    _, t_writers = cpu(lambda: writer_telemetry(history, result.commits))
    cycles = sum(1 for f in result.findings if f.witness and "cycle" in f.witness)
    print(f"table {table}: {len(history.summaries)} commits; load average {os.getloadavg()}")
    print(f"load_history, no tap (peer) {t_load:7.2f} s CPU  1.00x")
    print(f"load_history with the tap   {t_tapped:7.2f} s CPU  {t_tapped / t_load:.2f}x")
    print(f"integrity re-read path      {t_integrity:7.2f} s CPU  {t_integrity / t_load:.2f}x")
    print(f"audit_history (all)         {t_audit:7.2f} s CPU  {t_audit / t_load:.2f}x")
    print(f"writer_telemetry            {t_writers:7.2f} s CPU  {t_writers / t_load:.2f}x")
    print(f"integrity findings: {len(found)} (0 expected); findings with a cycle: {cycles}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
