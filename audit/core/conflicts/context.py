"""Per-history facts the conflict rules ask for: table config at a version, partition matchers,
row-level concurrency. Cached, because every concurrent pair asks again."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from audit.core.conflicts.matchers import (
    PartitionMatcher,
    partition_matcher,
    pins_matcher,
    simple_partition_pins,
)
from audit.core.model import CommitSummary, Metadata, Predicate
from audit.core.vocab import Engine

if TYPE_CHECKING:
    from audit.core.history.summary import History

# Databricks Runtime versions from which row-level concurrency applies (reference page).
ROW_LEVEL_RUNTIME = (14, 2)
CLUSTERED_ROW_LEVEL_RUNTIME = (13, 3)


class TableContext:
    """Per-history caches: config per version, partition matchers, read scopes."""

    def __init__(self, history: History):
        self.history = history
        self._matchers: dict[tuple[str, tuple[str, ...]], PartitionMatcher | None] = {}
        self._pinned: dict[tuple[tuple[str, str], ...], PartitionMatcher] = {}
        self._types: dict[int, dict[str, str]] = {}
        self._states: dict[int, tuple[bool, bool]] = {}
        self._rlc_engine: dict[str | None, bool] = {}
        self.clustered = bool(history.state.clustering_columns)
        summaries = history.summaries
        self._first = summaries[0].version if summaries else 0
        # Index by version offset; gaps (missing commits) stay None. A whole log's versions
        # are in a row: its list of summaries is that index already (no copy of 1M entries).
        last = summaries[-1].version if summaries else -1
        self._by_offset: list[CommitSummary | None]
        if all(s.version == self._first + i for i, s in enumerate(summaries)):
            self._by_offset = summaries
        else:
            self._by_offset = [None] * (last - self._first + 1)
            for s in summaries:
                self._by_offset[s.version - self._first] = s
        # Versions that can conflict with a commit that read nothing.
        self.special_versions = [
            s.version
            for s in summaries
            if s.protocol_changed or s.metadata_changed or s.app_ids or s.domains
        ]

    def summary(self, version: int) -> CommitSummary | None:
        index = version - self._first
        if 0 <= index < len(self._by_offset):
            return self._by_offset[index]
        return None

    def metadata_at(self, version: int) -> Metadata | None:
        return self.history.metadata_at(version)

    def partition_columns_at(self, version: int) -> list[str]:
        metadata = self.metadata_at(version)
        return list(metadata.partition_columns) if metadata else []

    def properties_at(self, version: int) -> dict[str, str]:
        metadata = self.metadata_at(version)
        return metadata.configuration if metadata else {}

    def partition_types(self, metadata: Metadata | None) -> dict[str, str]:
        if metadata is None:
            return {}
        key = id(metadata)
        if key not in self._types:
            self._types[key] = partition_types_of(metadata)
        return self._types[key]

    def deletion_vectors_at(self, version: int) -> bool:
        return self._state_at(version)[0]

    def _state_at(self, version: int) -> tuple[bool, bool]:
        """(deletion vectors on, partitioned) at `version`: read once per metadata in force,
        as every concurrent window asks again (60k windows of a contended 100k log)."""
        metadata = self.metadata_at(version)
        key = id(metadata)  # the history's timeline keeps each metadata alive
        found = self._states.get(key)
        if found is None:
            config = metadata.configuration if metadata else {}
            value = config.get("delta.enableDeletionVectors", "")
            partitioned = bool(metadata.partition_columns) if metadata else False
            found = self._states[key] = (str(value).strip().lower() == "true", partitioned)
        return found

    def matcher(self, predicate: Predicate, read_version: int) -> PartitionMatcher | None:
        metadata = self.metadata_at(read_version)
        columns = tuple(metadata.partition_columns) if metadata else ()
        text = predicate.sql or predicate.raw
        types = self.partition_types(metadata)
        pins = simple_partition_pins(predicate.sql, columns, types)
        if pins is not None:  # fast path: `p = 'x' AND ...` needs no SQL parsing
            if not pins:
                return None
            pinned = self._pinned.get(pins)
            if pinned is None:
                pinned = self._pinned[pins] = pins_matcher(pins)
            return pinned
        key = (text, columns)
        if key not in self._matchers:
            self._matchers[key] = partition_matcher(
                predicate, list(columns), self.partition_types(metadata)
            )
        return self._matchers[key]

    def row_level_concurrency(self, txn: CommitSummary, read_version: int) -> bool:
        """Deletion vectors on an unpartitioned table, or liquid clustering, on Databricks ≥ 14.2."""
        dv, partitioned = self._state_at(read_version)
        unpartitioned = not partitioned
        if not ((dv and unpartitioned) or self.clustered):
            return False
        if txn.engine_info not in self._rlc_engine:
            runtime = databricks_runtime(txn.engine_info or "")
            needed = (
                CLUSTERED_ROW_LEVEL_RUNTIME
                if self.clustered and not unpartitioned
                else ROW_LEVEL_RUNTIME
            )
            self._rlc_engine[txn.engine_info] = (
                txn.engine == Engine.DATABRICKS and runtime >= needed
            )
        return self._rlc_engine[txn.engine_info]


def partition_types_of(metadata: Metadata) -> dict[str, str]:
    """Partition column -> Delta type name ("string", "date", "decimal(10,2)", ...)."""
    wanted = {c.lower(): c for c in metadata.partition_columns}
    if not wanted or not metadata.schema_string:
        return {}
    try:
        schema = orjson.loads(metadata.schema_string)
    except orjson.JSONDecodeError:
        return {}
    types: dict[str, str] = {}
    for f in schema.get("fields", []) if isinstance(schema, dict) else []:
        if isinstance(f, dict) and str(f.get("name", "")).lower() in wanted:
            kind = f.get("type")
            types[wanted[str(f["name"]).lower()]] = kind if isinstance(kind, str) else "string"
    return types


def databricks_runtime(engine_info: str) -> tuple[int, int]:
    """`Databricks-Runtime/14.3.x-photon-scala2.12` -> (14, 3); anything else -> (0, 0)."""
    marker = "databricks-runtime/"
    lowered = engine_info.lower()
    if marker not in lowered:
        return (0, 0)
    parts = lowered.split(marker, 1)[1].split()[0].split(".") if lowered.split(marker, 1)[1] else []
    try:
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0)
    except (ValueError, IndexError):
        return (0, 0)
