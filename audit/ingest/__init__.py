"""The single place that writes Commit and Finding rows for a table's history.

The Celery tail step (audit.tail.step) and the Spark path (workers.spark.tasks) both store
through `chunk.store_history_chunk`. The parts: `tables` (registration, the table row and its
lock), `chunk` (one chunk in one transaction), `commits` (Commit row values), `bulkload`
(inserting them), `findings` (upserting Finding rows), `rollup_store` (CommitRollup rows),
`plan` (which versions next). Callers import from those modules; this package hands on only
the names the command line and the data migrations use.
"""

from __future__ import annotations

from audit.ingest.rollup_store import rebuild_rollups
from audit.ingest.tables import register_table

__all__ = ["rebuild_rollups", "register_table"]
