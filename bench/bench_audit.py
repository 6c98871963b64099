"""Time the isolation audit on generated in-memory histories (no disk).

    .venv/bin/python bench/bench_audit.py [--sizes 100000 1000000]

Generates Spark-style CommitSummary objects (partitioned by day, concurrency up to 10, ~70%
blind appends, the rest DELETE/UPDATE/MERGE/OPTIMIZE with partition predicates, so a few
WriteSerializable reorders occur), then times `audit_history(history, check_data=False)`.
Generation is not timed. Prints times, the ratio between sizes (linear work gives ≈ the size
ratio) and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.core.audit import audit_history  # noqa: E402
from tests.support.scenarios import history, summary  # noqa: E402

PARTITIONS = 5_000
MAX_CONCURRENCY = 10


def generate(n: int, seed: int = 7):
    rng = random.Random(seed)
    days = [{"day": f"d{i:05d}"} for i in range(PARTITIONS)]
    summaries = [
        summary(
            0, adds={"d0/f0": days[0]}, blind_append=False, parameters={"mode": "ErrorIfExists"}
        )
    ]
    live: list[tuple[str, dict]] = [("d0/f0", days[0])]
    for v in range(1, n):
        read_version = max(0, v - 1 - rng.randrange(MAX_CONCURRENCY))
        day = days[rng.randrange(PARTITIONS)]
        roll = rng.random()
        if roll < 0.7 or len(live) < 10:
            path = f"{day['day']}/part-{v}.parquet"
            live.append((path, day))
            summaries.append(summary(v, read_version=read_version, adds={path: day}))
            continue
        victim_path, victim_day = live.pop(rng.randrange(len(live)))
        predicate = f"day = '{victim_day['day']}' AND id > {rng.randrange(100)}"
        if roll < 0.97:
            op = ("DELETE", "UPDATE", "MERGE")[rng.randrange(3)]
            new_path = f"{victim_day['day']}/part-{v}.parquet"
            live.append((new_path, victim_day))
            summaries.append(
                summary(
                    v,
                    op,
                    read_version=read_version,
                    predicate=predicate,
                    removes={victim_path: victim_day},
                    adds={new_path: victim_day},
                )
            )
        else:
            summaries.append(
                summary(
                    v,
                    "OPTIMIZE",
                    read_version=read_version,
                    compaction_removes=(victim_path,),
                    parameters={"predicate": "[]", "zOrderBy": "[]"},
                )
            )
    return history(summaries, partition_columns=["day"])


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    args = parser.parse_args()
    times = {}
    for n in args.sizes:
        started = time.perf_counter()
        h = generate(n)
        generated = time.perf_counter() - started
        rss_before = peak_rss_mb()
        gc.collect()
        started = time.perf_counter()
        result = audit_history(h, check_data=False)
        times[n] = time.perf_counter() - started
        kinds: dict[str, int] = {}
        for f in result.findings:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        print(
            f"{n:>9} commits: audit {times[n]:6.2f} s (generate {generated:.1f} s), "
            f"peak RSS {rss_before:.0f} MB after generating, {peak_rss_mb():.0f} MB after audit; "
            f"findings {dict(sorted(kinds.items()))}"
        )
        del h, result
        gc.collect()
    sizes = sorted(times)
    for small, large in zip(sizes, sizes[1:], strict=False):
        print(
            f"ratio {large}/{small}: {times[large] / times[small]:.1f} (size ratio {large / small:.0f})"
        )


if __name__ == "__main__":
    main()
