"""Time the witness row filter (DataFusion over the files) against pyarrow's own filter.

    .venv/bin/python bench/bench_witness.py [--files 50] [--rows 20000]

Writes a deltalake table of `--files` files (then an UPDATE rewrites half of them, so they hold
`string_view`), and evaluates `id % 7 = 3 AND name <> 'x'` on every live file:
  - witness: audit.core.data.witness.find_rows (reads the needed columns, runs DataFusion SQL,
    samples rows), as a never-existed-snapshot check does;
  - peer: pyarrow over the same files with the same filter as a pyarrow expression, file by
    file with types normalised, counting rows (no SQL, no sampling): the read-and-filter floor.
    (pyarrow.dataset over all files at once fails: string vs string_view.)
Prints wall and CPU time of each, their ratio, the matching row counts (they must agree) and
the load average (the machine is shared: prefer the CPU ratio).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402

from audit.core.data import rowfilter  # noqa: E402
from audit.core.data.witness import find_rows  # noqa: E402
from audit.core.predicates import parse_predicate  # noqa: E402
from audit.core.runs.table import open_table  # noqa: E402

PREDICATE = "id % 7 = 3 AND name <> 'x'"


def build(path: str, files: int, rows: int) -> None:
    for i in range(files):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        table = pa.table({"id": ids, "name": pc.cast(ids, pa.string()), "v": pc.multiply(ids, 2)})
        write_deltalake(path, table, mode="append")
    DeltaTable(path).update(updates={"v": "v + 1"}, predicate=f"id < {files * rows // 2}")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp, args.files, args.rows)
        state = open_table(tmp).history().state
        adds = list(state.files.values())
        names = rowfilter.name_tree(state.metadata.schema_string)
        predicate = parse_predicate(PREDICATE)

        def witness() -> int:
            outcome = find_rows(tmp, adds, predicate, {}, names=names)
            return outcome.witness["row_count"] if outcome.witness else 0

        def peer() -> int:
            # pyarrow.dataset cannot scan the files together (string vs string_view), so per
            # file: read the two columns, normalise, filter, count.
            expr = (pc.field("id") - pc.multiply(pc.divide(pc.field("id"), 7), 7) == 3) & (
                pc.field("name") != "x"
            )
            total = 0
            for add in adds:
                table = pq.read_table(f"{tmp}/{add.path}", columns=["id", "name"])
                table = table.cast(pa.schema([("id", pa.int64()), ("name", pa.string())]))
                total += table.filter(expr).num_rows
            return total

        witness()  # warm imports and caches for both
        peer()
        got, w_wall, w_cpu = timed(witness)
        want, p_wall, p_cpu = timed(peer)
    print(f"files={len(adds)} rows/file={args.rows} predicate: {PREDICATE}")
    print(
        f"witness (DataFusion)  wall {w_wall * 1000:8.1f} ms  cpu {w_cpu * 1000:8.1f} ms  rows {got}"
    )
    print(
        f"peer (pyarrow count)  wall {p_wall * 1000:8.1f} ms  cpu {p_cpu * 1000:8.1f} ms  rows {want}"
    )
    print(f"ratio witness/peer    wall {w_wall / p_wall:5.2f}x   cpu {w_cpu / p_cpu:5.2f}x")
    print(
        f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}"
    )
    assert got == want, (got, want)


if __name__ == "__main__":
    main()
