"""CommitRollup rows: everything the timeline reads, packed per block of ROLLUP_SIZE versions.

A 1,000,000-commit table has about 1,000 rollups. Each holds, besides its aggregates
(commits, max concurrency, blind appends, timestamps, operations):

- `rows`: the timeline rows of its versions (version, read_version, timestamp, operation,
  blind_append, concurrent_count) as JSON text, one list per field (`pack_rows`), so a
  2,000-version window decodes three short texts instead of fetching 2,000 Commit rows through
  the ORM;
- `cells`: per-cell `[commits, max_concurrent, ...]` (flat) at the widths of `cell_widths()`
  (64 and 8 versions at the real size), so a bucket of any zoom level is a sum of at most
  a few thousand cells, never a scan of the commits.

Stored commits never change, so a rollup is recomputed only when the ingest stores versions in
its block (in the same transaction) or `rebuild_rollups` runs. Everything here is derived from
the Commit rows alone, so a replay cannot double-count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from audit import models as audit_models

# (version, read_version, timestamp, operation, blind_append, concurrent_count)
ROW_FIELDS = (
    "version",
    "read_version",
    "timestamp",
    "operation",
    "blind_append",
    "concurrent_count",
)
# The finer levels, as fractions of ROLLUP_SIZE (1024 -> 64 and 8 versions a cell).
CELL_FRACTIONS = (16, 128)


def rollup_size() -> int:
    return audit_models.ROLLUP_SIZE  # read at call time: tests shrink it


def cell_widths(size: int | None = None) -> list[int]:
    """The stored cell widths, coarsest first; levels narrower than 2 versions are skipped
    (the rows serve them)."""
    size = rollup_size() if size is None else size
    return [size // f for f in CELL_FRACTIONS if size // f >= 2]


def pack_rollups(table_id: int, rows: Iterable[tuple], rollup_model: type, size: int) -> list:
    """Unsaved `rollup_model` instances for `rows` (ROW_FIELDS tuples, ascending versions)."""
    # A data migration's historical model may predate `rows` and `cells`.
    fields = {f.name for f in rollup_model._meta.get_fields()}
    out = []
    for start, block in _blocks(rows, size):
        values = {k: v for k, v in _aggregate(block, start, size).items() if k in fields}
        out.append(rollup_model(table_id=table_id, bucket_start=start, **values))
    return out


def _blocks(rows: Iterable[tuple], size: int) -> Iterator[tuple[int, list[tuple]]]:
    start, block = None, []
    for row in rows:
        row_start = row[0] // size * size
        if row_start != start:
            if block:
                yield start, block
            start, block = row_start, []
        block.append(row)
    if block:
        yield start, block


def _aggregate(block: list[tuple], start: int, size: int) -> dict[str, Any]:
    operations: dict[str, int] = {}
    timestamps = [r[2] for r in block if r[2] is not None]
    max_concurrent = 0
    for r in block:
        operations[r[3]] = operations.get(r[3], 0) + 1
        max_concurrent = max(max_concurrent, r[5] or 0)
    cells = {}
    for width in cell_widths(size):
        flat = [0] * (2 * (size // width))
        for r in block:
            i = 2 * ((r[0] - start) // width)
            flat[i] += 1
            flat[i + 1] = max(flat[i + 1], r[5] or 0)
        cells[str(width)] = flat
    return {
        "commits": len(block),
        "max_concurrent": max_concurrent,
        "blind_appends": sum(1 for r in block if r[4] is True),
        "min_timestamp": min(timestamps) if timestamps else None,
        "max_timestamp": max(timestamps) if timestamps else None,
        "operations": operations,
        "rows": pack_rows(block),
        "cells": orjson.dumps(cells).decode(),
    }


def pack_rows(block: list[tuple]) -> str:
    """A block's timeline rows (ROW_FIELDS tuples) as JSON text, by column: `{"columns":
    [versions, read_versions, timestamps, operations, blind_appends, concurrent_counts]}`.
    Six lists of plain values decode several times faster than a list per row (a 2,000-version
    window decoded ~3,000 row lists: a third of its cold request)."""
    columns = columns_of(block)
    columns[4] = [None if b is None else bool(b) for b in columns[4]]
    return orjson.dumps({"columns": columns}).decode()


def columns_of(rows: list) -> list[list]:
    """The ROW_FIELDS columns of timeline rows (six empty lists for none). Raises ValueError
    for rows of different lengths."""
    return [list(column) for column in zip(*rows, strict=True)] or [[] for _ in ROW_FIELDS]


# Decoded `rows` texts, per process, under the text itself (`block_columns`).
_BLOCKS: dict[str, tuple[tuple, ...]] = {}
DECODED_BLOCKS = 128  # ~190 KB each (the text and its values): a 130,000-version stretch


def block_columns(text: str) -> tuple[tuple, ...]:
    """`unpack_columns(text)` as tuples, remembered per process under the text: decoding a
    block's ~44 KB was a third of a cold 2,000-version window's CPU, and hashing and comparing
    the text costs a fifth of it. Never stale: the key is all the value depends on, so a
    rollup rewritten by the ingest (or rebuilt) is a new key. Tuples: callers cannot change a
    block another request reads."""
    found = _BLOCKS.get(text)
    if found is None:
        if len(_BLOCKS) >= DECODED_BLOCKS:
            _BLOCKS.clear()  # a bound, not a policy: decoding a block again is cheap
        found = _BLOCKS[text] = tuple(map(tuple, unpack_columns(text)))
    return found


def unpack_columns(text: str) -> list[list]:
    """The six ROW_FIELDS columns of a rollup's `rows` text: by column (`pack_rows`), or a
    list per row as rollups were packed before (read as they are, until rebuilt)."""
    try:
        data = orjson.loads(text) if text else []
    except orjson.JSONDecodeError:  # not what pack_rows wrote: the caller reads the commits
        data = []
    if isinstance(data, dict):
        columns = data.get("columns")
        if (
            isinstance(columns, list)
            and len(columns) == len(ROW_FIELDS)
            and all(isinstance(c, list) and len(c) == len(columns[0]) for c in columns)
        ):
            return columns
        return [[] for _ in ROW_FIELDS]  # not what pack_rows wrote: the commits are read
    try:
        columns = columns_of(data)
    except (TypeError, ValueError):  # not rows of one length: the caller reads the commits
        return [[] for _ in ROW_FIELDS]
    return columns if len(columns) == len(ROW_FIELDS) else [[] for _ in ROW_FIELDS]


def unpack_cells(text: str, width: int) -> list[int]:
    return orjson.loads(text).get(str(width), []) if text else []
