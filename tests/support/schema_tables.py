"""A real delta-rs table whose schema evolves: a column added by `schema_mode="merge"`, then
an overwrite that drops it, widens `amount` to double and partitions by `day`."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from tests.support.tables import rows


def evolving_schema_table(path: Path) -> Path:
    """v0 (day, id, amount long); v1 adds note (merge); v2 appends; v3 overwrites: note
    dropped, amount double, partitioned by day."""
    write_deltalake(str(path), rows(2))
    noted = rows(1, start=2).append_column("note", pa.array(["x"]))
    write_deltalake(str(path), noted, mode="append", schema_mode="merge")
    write_deltalake(str(path), rows(1, start=3), mode="append", schema_mode="merge")
    wider = pa.table(
        {
            "day": ["2024-01-02"],
            "id": pa.array([9], pa.int64()),
            "amount": pa.array([1.5], pa.float64()),
        }
    )
    write_deltalake(
        str(path), wider, mode="overwrite", schema_mode="overwrite", partition_by=["day"]
    )
    return path
