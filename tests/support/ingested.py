"""Tables registered and tailed to their latest version in-process, as a worker would."""

from __future__ import annotations

from pathlib import Path

from audit.ingest.tables import register_table
from audit.models import Table
from audit.tail.step import tail_once


def ingest_table(path: Path | str, name: str | None = None, *, chunk: int | None = None) -> Table:
    """Register the table and run tail steps until it has caught up (`chunk` commits a step
    when given, else the setting's)."""
    table, _ = register_table(str(path), name=name)
    step = {"chunk": chunk} if chunk is not None else {}
    while tail_once(table.id, **step).more:
        pass
    table.refresh_from_db()
    return table
