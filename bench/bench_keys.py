"""Cost of the duplicate-key check per concurrent commit, against reading the same files with
pyarrow.

    .venv/bin/python bench/bench_keys.py [--files 200] [--rows 10000] [--pairs 20] [--repeat 5]

1. Writes a table with deltalake: `--files` appends of `--rows` rows each, keys in disjoint
   ranges, then `--pairs` times two writers loaded at one version that both append a key
   already in the table (blind appends: both commit).
2. Audits it once (the isolation audit, not timed), then times the key check alone
   (`audit.core.audit.key_findings`: statistics, candidates, reading the key columns with
   deletion vectors applied, grouping, attribution) and, as the baseline, pyarrow reading the
   key column of the same candidate files (`pq.read_table(columns=[key])`), median of
   `--repeat` runs each.
3. Prints both per concurrent commit, their ratio, and the load average (2 cores shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402

from audit.core.data.keys import candidate_files  # noqa: E402
from audit.core.runs.table import LOG_ONLY, open_table  # noqa: E402


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "v": [1.0] * n})


def build(path: Path, files: int, rows: int, pairs: int) -> None:
    for i in range(files):
        write_deltalake(str(path), _rows(i * rows, rows), mode="append")
    for p in range(pairs):
        first, second = DeltaTable(str(path)), DeltaTable(str(path))
        key = (p * 7919) % (files * rows)  # a key some earlier file already holds
        write_deltalake(first, _rows(key, 1), mode="append")
        write_deltalake(second, _rows(key, 1), mode="append")


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "keys"
        build(path, args.files, args.rows, args.pairs)
        table = open_table(str(path), options=LOG_ONLY)
        history = table.history()
        result = table.audit(history)
        findings = table.key_findings(history, result, ["id"])
        candidates = candidate_files(list(history.state.files.values()), ["id"], set())
        assert len(findings) == args.pairs, [f.summary for f in findings]

        def keys() -> None:
            table.key_findings(history, result, ["id"])

        def baseline() -> None:
            for add in candidates:
                pq.read_table(path / add.path, columns=["id"])

        t_keys = _median(keys, args.repeat)
        t_base = _median(baseline, args.repeat)
    concurrent = args.pairs
    load = os.getloadavg()
    print(
        f"{len(history.state.files)} live files, {len(candidates)} candidates, "
        f"{concurrent} concurrent commits with a duplicated key"
    )
    print(f"key check : {t_keys * 1000 / concurrent:8.2f} ms per concurrent commit")
    print(f"pyarrow   : {t_base * 1000 / concurrent:8.2f} ms per concurrent commit (same files)")
    print(f"ratio     : {t_keys / t_base:8.2f}x")
    print(f"load avg  : {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")


if __name__ == "__main__":
    main()
