"""Demo tables written by real concurrent deltalake writers, so the product has something to show.

    python -m audit.demo create ./demo-tables          # create the tables with a first burst
    python -m audit.demo write ./demo-tables [--interval 2] [--duration 0]   # keep committing

Tables:
- `orders_partitioned`: partitioned by day, `delta.isolationLevel=writeSerializable` (the
  spelling delta-rs understands). Appends race DELETEs and overwrites of the same partition, which
  produces WriteSerializable reorders and, with stale overwrites, never-existed snapshots.
- `events_sequential`: one writer, appends and the odd delete: a clean history.
- `metrics_ws_ignored`: `delta.isolationLevel=WriteSerializable` (Spark's spelling), which
  delta-rs does not understand and silently treats as Serializable; concurrent writers.

Commit conflicts raised by deltalake are expected (the losing writer gives up) and counted.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit.core.vocab import FindingKind, IsolationLevel

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


def _rows(day: str, n: int = 5, start: int = 0) -> pa.Table:
    ids = [start + i for i in range(n)]
    return pa.table(
        {
            "day": [day] * n,
            "id": pa.array(ids, pa.int64()),
            "amount": pa.array([random.randint(1, 500) for _ in ids], pa.int64()),
        }
    )


def _metric_rows(n: int = 5) -> pa.Table:
    return pa.table(
        {
            "host": [random.choice(["a", "b", "c"]) for _ in range(n)],
            "value": pa.array([random.random() for _ in range(n)], pa.float64()),
        }
    )


# --------------------------------------------------------------------------- one round each


def _as(**who: str) -> CommitProperties:
    """Who a demo commit says wrote it (commitInfo `userName`, or a custom `job`): the writers
    view tells the demo's jobs and people apart, as a real lake's provenance does."""
    return CommitProperties(custom_metadata=who)


INGEST = _as(job="ingest-orders")
ANALYST = _as(userName="analyst@example.org")
CLEANUP = _as(userName="cleanup@example.org")
EVENTS = _as(job="events-loader")
COLLECTOR = _as(job="metrics-collector")
RETENTION = _as(job="retention-sweep")


def _race(actions: list[Callable[[], object]], errors: Counter[str]) -> None:
    """Run writers at the same time; a commit conflict is a normal outcome of a race."""
    barrier = threading.Barrier(len(actions))

    def run(action: Callable[[], object]) -> None:
        barrier.wait()
        try:
            action()
        except Exception as err:  # noqa: BLE001 - deltalake raises several conflict types
            errors[type(err).__name__] += 1

    threads = [threading.Thread(target=run, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def round_partitioned(path: Path, errors: Counter[str]) -> None:
    day = random.choice(DAYS[:2])
    uri = str(path)
    _race(
        [
            lambda: write_deltalake(
                uri,
                _rows(day, start=random.randint(0, 900)),
                mode="append",
                commit_properties=INGEST,
            ),
            lambda: write_deltalake(
                uri,
                _rows(day, start=random.randint(0, 900)),
                mode="append",
                commit_properties=INGEST,
            ),
            lambda: DeltaTable(uri).delete(
                f"day = '{day}' AND amount < 250", commit_properties=CLEANUP
            ),
        ],
        errors,
    )
    if random.random() < 0.3:  # a stale full overwrite racing an append
        _race(
            [
                lambda: write_deltalake(
                    uri, _rows(DAYS[2]), mode="append", commit_properties=INGEST
                ),
                lambda: write_deltalake(
                    uri, _rows(DAYS[0], n=3), mode="overwrite", commit_properties=ANALYST
                ),
            ],
            errors,
        )


def round_sequential(path: Path, errors: Counter[str]) -> None:
    uri = str(path)
    try:
        if random.random() < 0.8:
            write_deltalake(
                uri,
                _rows(random.choice(DAYS), start=random.randint(0, 900)),
                mode="append",
                commit_properties=EVENTS,
            )
        else:
            DeltaTable(uri).delete("amount < 50", commit_properties=RETENTION)
    except Exception as err:  # noqa: BLE001
        errors[type(err).__name__] += 1


def round_ws_ignored(path: Path, errors: Counter[str]) -> None:
    uri = str(path)
    _race(
        [
            lambda: write_deltalake(
                uri, _metric_rows(), mode="append", commit_properties=COLLECTOR
            ),
            lambda: DeltaTable(uri).delete("value < 0.2", commit_properties=RETENTION),
        ],
        errors,
    )


# --------------------------------------------------------------------------- the tables


def _create_partitioned(path: Path) -> None:
    write_deltalake(
        str(path),
        _rows(DAYS[0]),
        partition_by=["day"],
        configuration={"delta.isolationLevel": "writeSerializable"},
        commit_properties=INGEST,
    )


def _create_sequential(path: Path) -> None:
    write_deltalake(str(path), _rows(DAYS[0]), commit_properties=EVENTS)


def _create_ws_ignored(path: Path) -> None:
    write_deltalake(
        str(path),
        _metric_rows(),
        configuration={"delta.isolationLevel": IsolationLevel.WRITE_SERIALIZABLE},
        commit_properties=COLLECTOR,
    )


TABLES: dict[str, tuple[Callable[[Path], None], Callable[[Path, Counter[str]], None]]] = {
    "orders_partitioned": (_create_partitioned, round_partitioned),
    "events_sequential": (_create_sequential, round_sequential),
    "metrics_ws_ignored": (_create_ws_ignored, round_ws_ignored),
}


# Finding kinds each demo table is expected to show once ingested (`scripts/run.sh --check`).
EXPECTED_KINDS: dict[str, set[str]] = {
    "orders_partitioned": {
        FindingKind.WRITE_SERIALIZABLE_REORDER,
        FindingKind.NEVER_EXISTED_SNAPSHOT,
    },
    "events_sequential": set(),  # a clean, sequential history
    "metrics_ws_ignored": {FindingKind.ISOLATION_SETTING_IGNORED},
}


def create_demo_tables(root: Path, rounds: int = 8) -> list[Path]:
    """Create the demo tables under `root` (kept if they exist) and write a first burst."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    errors: Counter[str] = Counter()
    for name, (create, round_) in TABLES.items():
        path = root / name
        if not (path / "_delta_log").exists():
            create(path)
            for _ in range(rounds):
                round_(path, errors)
        paths.append(path)
    return paths


def keep_writing(root: Path, *, interval: float = 2.0, duration: float = 0.0) -> Counter[str]:
    """One round per table every `interval` seconds, for `duration` seconds (0 = forever)."""
    errors: Counter[str] = Counter()
    deadline = time.monotonic() + duration if duration > 0 else None
    while deadline is None or time.monotonic() < deadline:
        for name, (_create, round_) in TABLES.items():
            path = root / name
            if (path / "_delta_log").exists():
                round_(path, errors)
        time.sleep(interval)
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m audit.demo", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="create the demo tables")
    create.add_argument("root", type=Path)
    write = sub.add_parser("write", help="keep committing to the demo tables")
    write.add_argument("root", type=Path)
    write.add_argument("--interval", type=float, default=2.0)
    write.add_argument("--duration", type=float, default=0.0, help="seconds; 0 = until killed")
    args = parser.parse_args(argv)
    if args.command == "create":
        for path in create_demo_tables(args.root):
            print(path.resolve())
        return 0
    with contextlib.suppress(KeyboardInterrupt):
        keep_writing(args.root, interval=args.interval, duration=args.duration)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
