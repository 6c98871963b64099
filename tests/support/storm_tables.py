"""Random concurrent workloads: threads of real delta-rs writers racing on one table.

`build_storm(path, seed)` creates a table (partitioned or not, under one of the isolation
settings) and lets 2-4 threads each try ten random operations at once: appends (blind or not,
some with application transactions), predicated and unconditional deletes, updates, merges,
overwrites (whole or of one partition), compactions, schema changes, restores and checkpoints.
A third of the operations run on a snapshot loaded a few versions back (a stale writer); delta-
rs's own conflict checker refuses some of them and lets the rest through, as it would in
production. Now and then a hand-built overwrite or delete that records no read version lands
(the shape Spark and older writers leave), written only if its version is still free.

Threads make the log differ from run to run: a test keeps the table (pytest's tmp_path) so a
failing history can be audited again by hand.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from tests.support.hand_commits import put_commit_if_absent
from tests.support.revealing_tables import random_stale_removes
from tests.support.scenarios import BLIND, WRITE_SERIALIZABLE, rows

SETTINGS = (WRITE_SERIALIZABLE, None, {"delta.isolationLevel": "serializable"})


def build_storm(path: str, seed: int, *, operations: int = 10) -> None:
    rng = random.Random(seed)
    partitioned = rng.random() < 0.7
    write_deltalake(
        path,
        rows("p0", [0, 1]),
        partition_by=["day"] if partitioned else None,
        configuration=rng.choice(SETTINGS),
    )
    threads = [
        threading.Thread(target=_writer, args=(path, seed * 100 + n, operations, partitioned))
        for n in range(rng.randint(2, 4))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _writer(path: str, seed: int, operations: int, partitioned: bool) -> None:
    rng = random.Random(seed)
    for _ in range(operations):
        table = DeltaTable(path)
        if rng.random() < 0.3 and table.version() > 0:  # a stale writer
            table.load_as_version(rng.randint(max(0, table.version() - 8), table.version()))
        try:
            _operation(path, table, rng, partitioned)
        except Exception:  # noqa: BLE001  (a conflict refused by delta-rs: a writer gives up)
            continue


def _operation(path: str, table: DeltaTable, rng: random.Random, partitioned: bool) -> None:
    day = f"p{rng.randint(0, 2)}"
    batch = rows(day, [rng.randint(0, 50) for _ in range(rng.randint(1, 3))])
    roll = rng.random()
    if roll < 0.3:
        blind = BLIND if rng.random() < 0.5 else None
        write_deltalake(table, batch, mode="append", schema_mode="merge", commit_properties=blind)
    elif roll < 0.45:
        where = f"day = '{day}' AND id < {rng.randint(0, 50)}" if rng.random() < 0.7 else None
        table.delete(where)
    elif roll < 0.55:
        table.update({"value": "'u'"}, predicate=f"day = '{day}'")
    elif roll < 0.65:
        merge = table.merge(
            batch, "t.id = s.id AND t.day = s.day", source_alias="s", target_alias="t"
        )
        merge.when_matched_update_all().when_not_matched_insert_all().execute()
    elif roll < 0.72:
        one_day = partitioned and rng.random() < 0.5
        predicate = f"day = '{day}'" if one_day else None
        write_deltalake(table, batch, mode="overwrite", predicate=predicate)
    elif roll < 0.8:
        table.optimize.compact()
    elif roll < 0.85:
        wider = batch.append_column("extra", pa.array(["x"] * batch.num_rows, pa.string()))
        write_deltalake(table, wider, mode="append", schema_mode="merge")
    elif roll < 0.88:
        table.create_checkpoint()
    elif roll < 0.91 and table.version() > 1:
        table.restore(rng.randint(0, table.version() - 1))
    elif roll < 0.95:
        app = Transaction(f"app{rng.randint(0, 1)}", rng.randint(0, 9))
        properties = CommitProperties(app_transactions=[app])
        write_deltalake(
            table, batch, mode="append", schema_mode="merge", commit_properties=properties
        )
    else:
        _stale_write_if_free(Path(path), rng)


def _stale_write_if_free(path: Path, rng: random.Random) -> None:
    """A hand-built destructive commit without a read version, at the next version, written
    only if no writer took that version meanwhile."""
    put_commit_if_absent(path, *random_stale_removes(path, rng))
