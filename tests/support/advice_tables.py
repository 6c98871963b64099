"""Tables whose concurrent writers rewrite by date: what the partitioning advice learns from."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def day_rows(day_index: int, n: int = 50) -> pa.Table:
    day = dt.date(2024, 1, 1) + dt.timedelta(days=day_index)
    start = day_index * n
    return pa.table(
        {"date": [day] * n, "id": pa.array(range(start, start + n), pa.int64()), "value": [1] * n}
    )


def build_concurrent_date_rewrites(path: str, rounds: int = 3) -> None:
    """Unpartitioned; one file per day; DELETE date < X and UPDATE date > X from the same snapshot."""
    for day in range(20):
        write_deltalake(path, day_rows(day), mode="append")
    for k in range(rounds):
        deleter, updater = DeltaTable(path), DeltaTable(path)
        deleter.delete(f"date < '2024-01-0{3 + k}'::date")
        updater.update(predicate=f"date > '2024-01-1{5 - k}'::date", updates={"value": "value + 1"})
