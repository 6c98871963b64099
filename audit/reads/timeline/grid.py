"""The buckets of a zoomed-out timeline window, counted on a dense grid.

Bucket i of a window [lo, hi] covers versions base + i * width .. base + (i + 1) * width - 1
(cut to the window), so a window has at most (hi - base) // width + 1 of them (about
max_points / 2). Each holds its commits, their highest concurrency and its open findings, as
three NumPy columns: a stored level's cells land by slices and one reshape, where a Python step
per cell and per bucket was most of a cold bucket window's CPU (`audit.reads.timeline.window`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


class BucketGrid:
    def __init__(self, lo: int, hi: int, base: int, width: int) -> None:
        self.lo, self.hi, self.base, self.width = lo, hi, base, width
        size = (hi - base) // width + 1
        self.counts = np.zeros(size, np.int64)
        self.maxima = np.zeros(size, np.int64)
        self.findings = np.zeros(size, np.int64)
        self._cells: list[tuple[int, list[int]]] = []
        self._cell_unit = 0

    def add(self, bucket: int, n: int, max_concurrent: int | None) -> None:
        """`n` commits of at most `max_concurrent` concurrent versions in one bucket."""
        self.counts[bucket] += n
        if max_concurrent and max_concurrent > self.maxima[bucket]:
            self.maxima[bucket] = max_concurrent

    def add_rollups(self, rollups: Iterable[tuple[int, int, int | None]]) -> None:
        """Whole rollups (start, commits, max_concurrent), each inside one bucket."""
        rows = list(rollups)
        if not rows:
            return
        starts, commits, most = (np.array(column, np.int64) for column in _columns(rows))
        buckets = (starts - self.base) // self.width
        np.add.at(self.counts, buckets, commits)
        np.maximum.at(self.maxima, buckets, most)

    def add_cells(self, start: int, flat: list[int], unit: int) -> None:
        """A whole rollup's cells of the `unit` level ([commits, max_concurrent, ...] from
        `start`); every bucket is `width // unit` whole cells (`timeline._bucket_grid`).
        Counted all at once by `buckets()`."""
        self._cells.append(((start - self.base) // unit, flat))
        self._cell_unit = unit

    def add_rows(self, rows: Iterable[Sequence[Any]], operations: set[str]) -> None:
        """Timeline rows ([version, read_version, timestamp, operation, blind_append,
        concurrent_count]); those outside the window are skipped."""
        for r in rows:
            if self.lo <= r[0] <= self.hi:
                self.add((r[0] - self.base) // self.width, 1, r[5])
                operations.add(r[3])

    def set_findings(self, buckets: list[int], counts: list[int]) -> None:
        """The open findings of these buckets (those outside the grid are skipped)."""
        if not buckets:
            return
        index, values = np.array(buckets, np.int64), np.array(counts, np.int64)
        inside = (index >= 0) & (index < len(self.findings))
        self.findings[index[inside]] = values[inside]

    def buckets(self) -> list[list[int]]:
        """[from_v, to_v, commits, max_concurrent, open findings] of each bucket holding
        commits, in version order."""
        self._count_cells()
        held = np.flatnonzero(self.counts)
        starts = np.maximum(self.base + held * self.width, self.lo)
        ends = np.minimum(self.base + (held + 1) * self.width - 1, self.hi)
        columns = (starts, ends, self.counts[held], self.maxima[held], self.findings[held])
        return np.column_stack(columns).tolist()

    def _count_cells(self) -> None:
        if not self._cells:
            return
        per = self.width // self._cell_unit
        size = len(self.counts) * per
        counts = np.zeros(size, np.int64)
        maxima = np.zeros(size, np.int64)
        for first, flat in self._cells:
            cells = np.array(flat, np.int64)
            n = min(len(cells) // 2, size - first)
            counts[first : first + n] = cells[0 : 2 * n : 2]
            maxima[first : first + n] = cells[1 : 2 * n : 2]
        self.counts += counts.reshape(-1, per).sum(axis=1)
        np.maximum(self.maxima, maxima.reshape(-1, per).max(axis=1), out=self.maxima)
        self._cells = []


def _columns(rows: list[tuple[int, int, int | None]]) -> tuple[list, list, list]:
    starts, commits, most = zip(*rows, strict=True)
    return list(starts), list(commits), [m or 0 for m in most]
