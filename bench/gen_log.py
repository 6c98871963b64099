"""Generate a Spark-style Delta log of N commits (default 100,000) for benchmarks.

    python bench/gen_log.py /tmp/delta-bench-100k --commits 100000 [--verify]

The table is partitioned by `date`. About 70% of commits are blind appends (WRITE, mode
Append, isBlindAppend true); the rest are DELETE / UPDATE / MERGE / OPTIMIZE commits with
Spark `simpleString` predicates that remove and re-add files of recent partitions. Commits
record readVersion a few versions behind now and then, as concurrent writers do. A classic
checkpoint (the protocol's checkpoint schema, written with pyarrow) follows every 100th
commit, with `_last_checkpoint`. Only the log is written: data files do not exist.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time
import uuid

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

ENGINE = "Apache-Spark/3.5.0 Delta-Lake/3.1.0"
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}},
        {"name": "date", "type": "date", "nullable": True, "metadata": {}},
    ],
}
COMMITS_PER_DAY = 200
CHECKPOINT_INTERVAL = 100
START_MS = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)

_STR_MAP = pa.map_(pa.string(), pa.string())
CHECKPOINT_SCHEMA = pa.schema(
    [
        pa.field(
            "txn",
            pa.struct(
                [("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())]
            ),
        ),
        pa.field(
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("stats", pa.string()),
                    ("tags", _STR_MAP),
                ]
            ),
        ),
        pa.field(
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                ]
            ),
        ),
        pa.field(
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        pa.field(
            "protocol",
            pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())]),
        ),
    ]
)


class Generator:
    def __init__(
        self, out: str, commits: int, seed: int, checkpoint_interval: int = CHECKPOINT_INTERVAL
    ):
        self.checkpoint_interval = checkpoint_interval
        self.log_dir = os.path.join(out, "_delta_log")
        self.commits = commits
        self.rng = random.Random(seed)
        self.live: dict[str, dict[str, dict]] = {}  # date -> path -> add action
        self.tombstones: list[dict] = []
        self.now = START_MS
        self.next_id = 0
        self.metadata = {
            "id": str(uuid.UUID(int=self.rng.getrandbits(128))),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": orjson.dumps(SCHEMA).decode(),
            "partitionColumns": ["date"],
            "configuration": {"delta.isolationLevel": "WriteSerializable"},
            "createdTime": START_MS,
        }
        self.protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
        self.checkpoint_schema = CHECKPOINT_SCHEMA  # another generator's actions may need more

    # ----------------------------------------------------------------- helpers
    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def date_of(self, version: int, back: int = 0) -> str:
        day = dt.date(2024, 1, 1) + dt.timedelta(days=max(0, version // COMMITS_PER_DAY - back))
        return day.isoformat()

    def new_file(self, date: str, data_change: bool = True, rows: int | None = None) -> dict:
        rows = rows or self.rng.randint(1_000, 200_000)
        lo = self.next_id
        self.next_id += rows
        stats = {
            "numRecords": rows,
            "minValues": {"id": lo, "value": f"v{lo:09d}"},
            "maxValues": {"id": lo + rows - 1, "value": f"v{lo + rows - 1:09d}"},
            "nullCount": {"id": 0, "value": self.rng.randint(0, 3)},
        }
        part = self.rng.randint(0, 199)
        return {
            "path": f"date={date}/part-{part:05d}-{self.uuid()}.c000.snappy.parquet",
            "partitionValues": {"date": date},
            "size": rows * 12 + self.rng.randint(0, 4096),
            "modificationTime": self.now,
            "dataChange": data_change,
            "stats": orjson.dumps(stats).decode(),
        }

    def remove_of(self, add: dict, data_change: bool = True) -> dict:
        return {
            "path": add["path"],
            "deletionTimestamp": self.now,
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": add["partitionValues"],
            "size": add["size"],
        }

    def read_version(self, version: int) -> int:
        # Most writers read the latest version; some were in flight while others committed.
        lag = self.rng.choices([0, 1, 2, 3], weights=[80, 10, 6, 4])[0]
        return max(0, version - 1 - lag)

    def commit_info(self, version: int, operation: str, params: dict, metrics: dict, blind: bool):
        info = {
            "timestamp": self.now,
            "operation": operation,
            "operationParameters": params,
            "readVersion": self.read_version(version),
            "isolationLevel": "WriteSerializable",
            "isBlindAppend": blind,
            "operationMetrics": {k: str(v) for k, v in metrics.items()},
            "engineInfo": ENGINE,
            "txnId": self.uuid(),
        }
        if version == 0:
            del info["readVersion"]
        return info

    def take(self, date: str, count: int) -> list[dict]:
        files = self.live.get(date, {})
        chosen = self.rng.sample(list(files.values()), min(count, len(files)))
        for add in chosen:
            del files[add["path"]]
        return chosen

    def put(self, adds: list[dict]) -> None:
        for add in adds:
            self.live.setdefault(add["partitionValues"]["date"], {})[add["path"]] = add

    # ----------------------------------------------------------------- operations
    def append(self, version: int) -> list[dict]:
        date = self.date_of(version, back=self.rng.choices([0, 1], weights=[9, 1])[0])
        adds = [self.new_file(date) for _ in range(self.rng.randint(1, 3))]
        rows = sum(orjson.loads(a["stats"])["numRecords"] for a in adds)
        info = self.commit_info(
            version,
            "WRITE",
            {"mode": "Append", "partitionBy": "[]"},
            {
                "numFiles": len(adds),
                "numOutputRows": rows,
                "numOutputBytes": sum(a["size"] for a in adds),
            },
            blind=True,
        )
        self.put(adds)
        return [{"commitInfo": info}, *({"add": a} for a in adds)]

    def rewrite(self, version: int, operation: str) -> list[dict]:
        date = self.date_of(version, back=self.rng.randint(0, 3))
        col = self.rng.randint(1000, 9999)
        removed = self.take(date, self.rng.randint(1, 3))
        added = [self.new_file(date) for _ in range(len(removed) if operation != "DELETE" else 0)]
        self.put(added)
        pred = f"(date#{col} = {date})"
        if operation == "DELETE":
            params = {"predicate": orjson.dumps([pred]).decode()}
            metrics = {"numRemovedFiles": len(removed), "numAddedFiles": 0, "numDeletedRows": 1234}
        elif operation == "UPDATE":
            cond = f"({pred} AND (id#{col - 2}L > {self.rng.randint(0, 10**6)}))"
            params = {"predicate": orjson.dumps([cond]).decode()}
            metrics = {
                "numRemovedFiles": len(removed),
                "numAddedFiles": len(added),
                "numUpdatedRows": 77,
            }
        else:
            cond = f"((id#{col - 2}L = id#{col + 7}L) AND (date#{col} = {date}))"
            params = {
                "predicate": orjson.dumps([cond]).decode(),
                "matchedPredicates": '[{"actionType":"update"}]',
                "notMatchedPredicates": '[{"actionType":"insert"}]',
                "notMatchedBySourcePredicates": "[]",
            }
            metrics = {
                "numTargetFilesRemoved": len(removed),
                "numTargetFilesAdded": len(added),
                "numTargetRowsUpdated": 42,
                "numTargetRowsInserted": 17,
                "numSourceRows": 59,
            }
        info = self.commit_info(version, operation, params, metrics, blind=False)
        actions = [{"commitInfo": info}]
        actions += [{"remove": self.remove_of(r)} for r in removed]
        actions += [{"add": a} for a in added]
        self.tombstones += [self.remove_of(r) for r in removed]
        return actions

    def optimize(self, version: int) -> list[dict]:
        date = self.date_of(version, back=self.rng.randint(1, 4))
        removed = self.take(date, 50)
        rows = sum(orjson.loads(r["stats"])["numRecords"] for r in removed) or 1
        added = [self.new_file(date, data_change=False, rows=rows)] if removed else []
        self.put(added)
        info = self.commit_info(
            version,
            "OPTIMIZE",
            {
                "predicate": orjson.dumps(
                    [f"(date#{self.rng.randint(1000, 9999)} = {date})"]
                ).decode(),
                "zOrderBy": "[]",
            },
            {
                "numRemovedFiles": len(removed),
                "numAddedFiles": len(added),
                "numRemovedBytes": sum(r["size"] for r in removed),
            },
            blind=False,
        )
        self.tombstones += [self.remove_of(r, data_change=False) for r in removed]
        return (
            [{"commitInfo": info}]
            + [{"remove": self.remove_of(r, data_change=False)} for r in removed]
            + [{"add": a} for a in added]
        )

    def create(self) -> list[dict]:
        info = self.commit_info(
            0,
            "CREATE TABLE",
            {
                "isManaged": "false",
                "description": None,
                "partitionBy": '["date"]',
                "properties": "{}",
            },
            {},
            blind=True,
        )
        return [{"commitInfo": info}, {"protocol": self.protocol}, {"metaData": self.metadata}]

    def actions_for(self, version: int) -> list[dict]:
        if version == 0:
            return self.create()
        roll = self.rng.random()
        if roll < 0.70:
            return self.append(version)
        if roll < 0.80:
            return self.rewrite(version, "DELETE")
        if roll < 0.88:
            return self.rewrite(version, "UPDATE")
        if roll < 0.96:
            return self.rewrite(version, "MERGE")
        return self.optimize(version)

    # ----------------------------------------------------------------- output
    def write_checkpoint(self, version: int) -> None:
        md = self.metadata
        rows_add: list = [None, None]
        rows_remove: list = [None, None]
        for files in self.live.values():
            for add in files.values():
                rows_add.append(
                    {**add, "partitionValues": list(add["partitionValues"].items()), "tags": None}
                )
                rows_remove.append(None)
        for rem in self.tombstones:
            rows_add.append(None)
            rows_remove.append({**rem, "partitionValues": list(rem["partitionValues"].items())})
        n = len(rows_add)
        protocol = [self.protocol] + [None] * (n - 1)
        metadata = [
            None,
            {
                **md,
                "name": None,
                "description": None,
                "format": {"provider": "parquet", "options": []},
                "configuration": list(md["configuration"].items()),
            },
        ] + [None] * (n - 2)
        schema = self.checkpoint_schema
        table = pa.Table.from_arrays(
            [
                pa.array([None] * n, schema.field("txn").type),
                pa.array(rows_add, schema.field("add").type),
                pa.array(rows_remove, schema.field("remove").type),
                pa.array(metadata, schema.field("metaData").type),
                pa.array(protocol, schema.field("protocol").type),
            ],
            schema=schema,
        )
        path = os.path.join(self.log_dir, f"{version:020d}.checkpoint.parquet")
        pq.write_table(table, path, compression="snappy")
        with open(os.path.join(self.log_dir, "_last_checkpoint"), "wb") as fh:
            fh.write(orjson.dumps({"version": version, "size": n}))
        self.tombstones.clear()

    def run(self) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        for version in range(self.commits):
            self.now += self.rng.randint(5_000, 60_000)
            lines = b"\n".join(orjson.dumps(a) for a in self.actions_for(version)) + b"\n"
            with open(os.path.join(self.log_dir, f"{version:020d}.json"), "wb") as fh:
                fh.write(lines)
            os.utime(os.path.join(self.log_dir, f"{version:020d}.json"), ns=(self.now * 10**6,) * 2)
            if version and version % self.checkpoint_interval == 0:
                self.write_checkpoint(version)


def verify(out: str, commits: int) -> None:
    from deltalake import DeltaTable

    table = DeltaTable(out)
    assert table.version() == commits - 1, (table.version(), commits)
    print(f"deltalake loads it: version {table.version()}, {len(table.file_uris())} live files")


def generate(
    out: str, commits: int = 100_000, seed: int = 7, checkpoint_interval: int = CHECKPOINT_INTERVAL
) -> None:
    """The commits depend only on `seed`; the interval only changes which checkpoints exist."""
    Generator(out, commits, seed, checkpoint_interval).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="table directory to create")
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--checkpoint-interval",
        type=int,
        default=CHECKPOINT_INTERVAL,
        help="a checkpoint every N commits (live files grow with the log, so at 1M commits a "
        "checkpoint per 100 makes generation quadratic: bench_log.py uses 1000 there)",
    )
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
