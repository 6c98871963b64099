"""Generate a contended Spark-style Delta log with deletion vectors: many findings per commit.

    python bench/gen_contended_log.py /tmp/delta-contended-100k --commits 100000 [--verify]

The second bench log (bench/gen_log.py makes the first): where that one is 70% blind appends
spread over a new partition a day, this one is a few writers fighting over four partitions.
About 40% of commits append; the rest are DELETE / UPDATE / MERGE with deletion vectors on
(`delta.enableDeletionVectors`, protocol 3/7 with the `deletionVectors` feature) and an
OPTIMIZE now and then that purges the vectors. Writers read up to 8 versions back, so most
DML commits have a concurrent window, and about a quarter of them are stale: they remove a
file a commit they did not see had already removed (ConcurrentDeleteDelete, which Delta
would have raised), or add a vector to a file a concurrent commit gave one. The audit finds
missed conflicts, reorders and never-existed snapshots at a rate the first log does not reach.

Only the log is written (no data or deletion-vector files), with a classic checkpoint every
100 commits whose add/remove structs carry `deletionVector`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque

import orjson
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_log import CHECKPOINT_INTERVAL, CHECKPOINT_SCHEMA, Generator, verify  # noqa: E402

PARTITIONS = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)


def _z85(data: bytes) -> str:
    """Z85 text of `data` (a multiple of 4 bytes): a deletion vector file's UUID."""
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        out += [_Z85[value // 85**k % 85] for k in range(4, -1, -1)]
    return "".join(out)


def _with_vectors(schema: pa.Schema) -> pa.Schema:
    """The checkpoint schema with `deletionVector` in add and remove, and table features."""
    fields = []
    for f in schema:
        if f.name in ("add", "remove"):
            f = pa.field(f.name, pa.struct([*f.type, pa.field("deletionVector", _DV)]))
        elif f.name == "protocol":
            features = [("readerFeatures", pa.list_(pa.string()))]
            features.append(("writerFeatures", pa.list_(pa.string())))
            f = pa.field(f.name, pa.struct([*f.type, *features]))
        fields.append(f)
    return pa.schema(fields)


class ContendedGenerator(Generator):
    def __init__(self, out: str, commits: int, seed: int, checkpoint_interval: int):
        super().__init__(out, commits, seed, checkpoint_interval)
        self.metadata["configuration"] = {
            "delta.isolationLevel": "WriteSerializable",
            "delta.enableDeletionVectors": "true",
        }
        self.protocol = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
        self.checkpoint_schema = _with_vectors(CHECKPOINT_SCHEMA)
        self.recent: deque[tuple[int, dict]] = deque(maxlen=64)  # (version removed at, add)
        self.read_at: int | None = None

    # ----------------------------------------------------------------- helpers
    def date_of(self, version: int, back: int = 0) -> str:
        return PARTITIONS[self.rng.randrange(len(PARTITIONS))]

    def read_version(self, version: int) -> int:
        if self.read_at is not None:
            return self.read_at
        lag = self.rng.choices(range(9), weights=[40, 15, 12, 10, 8, 6, 4, 3, 2])[0]
        return max(0, version - 1 - lag)

    def remove_of(self, add: dict, data_change: bool = True) -> dict:
        remove = super().remove_of(add, data_change)
        if add.get("deletionVector"):
            remove["deletionVector"] = add["deletionVector"]
        return remove

    def vector(self, add: dict, more: int) -> dict:
        before = (add.get("deletionVector") or {}).get("cardinality", 0)
        return {
            "storageType": "u",
            "pathOrInlineDv": _z85(self.rng.getrandbits(128).to_bytes(16, "big")),
            "offset": 1,
            "sizeInBytes": 34 + before + more,
            "cardinality": before + more,
        }

    def stale_victim(self, version: int, read_at: int, date: str) -> dict | None:
        """A file of `date` a commit after `read_at` removed: what a stale writer still saw."""
        seen = [add for at, add in self.recent if at > read_at and add["path"].startswith(date)]
        return self.rng.choice(seen) if seen else None

    # ----------------------------------------------------------------- operations
    def dml(self, version: int, operation: str) -> list[dict]:
        self.read_at = self.read_version(version)
        date = f"date={self.date_of(version)}"
        part = date[5:]
        touched = self.take(part, self.rng.randint(1, 2))
        stale = self.stale_victim(version, self.read_at, date) if self.rng.random() < 0.3 else None
        removes, adds = [], []
        use_dv = operation == "DELETE" or self.rng.random() < 0.5
        for old in touched:
            removes.append(self.remove_of(old))
            if use_dv:  # the same file again, with more rows deleted in its vector
                adds.append({**old, "modificationTime": self.now, "dataChange": True})
                adds[-1]["deletionVector"] = self.vector(old, self.rng.randint(1, 50))
            elif operation != "DELETE":
                adds.append(self.new_file(part))
        if stale is not None:
            removes.append(self.remove_of(stale))
            if operation != "DELETE":
                adds.append(self.new_file(part))
        for old in touched:
            if not use_dv:
                self.recent.append((version, old))
        self.put([a for a in adds])
        col = self.rng.randint(1000, 9999)
        pred = f"(date#{col} = {part})"
        if operation == "DELETE":
            cond = f"({pred} AND (id#{col - 2}L < {self.rng.randint(0, 10**6)}))"
        else:
            cond = f"({pred} AND (id#{col - 2}L > {self.rng.randint(0, 10**6)}))"
        params = {"predicate": orjson.dumps([cond]).decode()}
        if operation == "MERGE":
            params["matchedPredicates"] = '[{"actionType":"update"}]'
            params["notMatchedPredicates"] = '[{"actionType":"insert"}]'
        metrics = {
            "numRemovedFiles": len(removes),
            "numAddedFiles": len(adds),
            "numDeletionVectorsAdded": len(adds) if use_dv else 0,
        }
        info = self.commit_info(version, operation, params, metrics, blind=False)
        self.read_at = None
        self.tombstones += removes
        return [
            {"commitInfo": info},
            *({"remove": r} for r in removes),
            *({"add": a} for a in adds),
        ]

    def optimize(self, version: int) -> list[dict]:
        """Compaction purging the vectors: the new file holds the rows they left live."""
        date = self.date_of(version)
        removed = self.take(date, 50)
        rows = sum(
            orjson.loads(r["stats"])["numRecords"]
            - (r.get("deletionVector") or {}).get("cardinality", 0)
            for r in removed
        )
        added = [self.new_file(date, data_change=False, rows=max(rows, 1))] if removed else []
        self.put(added)
        params = {"predicate": orjson.dumps([f"(date#1 = {date})"]).decode(), "zOrderBy": "[]"}
        metrics = {"numRemovedFiles": len(removed), "numAddedFiles": len(added)}
        info = self.commit_info(version, "OPTIMIZE", params, metrics, blind=False)
        removes = [self.remove_of(r, data_change=False) for r in removed]
        self.tombstones += removes
        self.recent.extend((version, r) for r in removed)
        return [
            {"commitInfo": info},
            *({"remove": r} for r in removes),
            *({"add": a} for a in added),
        ]

    def actions_for(self, version: int) -> list[dict]:
        if version == 0:
            return self.create()
        roll = self.rng.random()
        if roll < 0.40:
            return self.append(version)
        if roll < 0.62:
            return self.dml(version, "DELETE")
        if roll < 0.77:
            return self.dml(version, "UPDATE")
        if roll < 0.96:
            return self.dml(version, "MERGE")
        return self.optimize(version)


def generate(
    out: str, commits: int = 100_000, seed: int = 11, checkpoint_interval: int = CHECKPOINT_INTERVAL
) -> None:
    ContendedGenerator(out, commits, seed, checkpoint_interval).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="table directory to create")
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--checkpoint-interval", type=int, default=CHECKPOINT_INTERVAL)
    parser.add_argument("--verify", action="store_true", help="load the result with deltalake")
    args = parser.parse_args(argv)
    if os.path.exists(os.path.join(args.out, "_delta_log")):
        print(f"{args.out}/_delta_log already exists", file=sys.stderr)
        return 1
    started = time.perf_counter()
    generate(args.out, args.commits, args.seed, args.checkpoint_interval)
    print(f"wrote {args.commits} commits to {args.out} in {time.perf_counter() - started:.1f}s")
    if args.verify:
        verify(args.out, args.commits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
