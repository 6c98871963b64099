"""Small Delta tables for tests of every layer."""

from __future__ import annotations

import pyarrow as pa


def rows(n: int = 3, *, day: str = "2024-01-01", start: int = 0) -> pa.Table:
    """`n` rows of (day, id, amount): ids from `start`, amounts derived from the ids so two
    batches with different `start` never hold the same row."""
    return pa.table(
        {
            "day": [day] * n,
            "id": pa.array(range(start, start + n), pa.int64()),
            "amount": pa.array([(start + i) * 7 % 500 for i in range(n)], pa.int64()),
        }
    )
