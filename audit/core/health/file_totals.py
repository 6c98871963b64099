"""Sums over a table's live files that the health document shows, and keeping them current.

A tail step stores the table's health after every chunk: files, bytes, rows, the size
histogram, small files, partitions and deletion vectors are sums over every live file, and
recomputing them was most of a step's CPU on a table of 20,000 files. `FileTotals` holds those
sums; `advance` moves them from one file set to the next by the files that differ (a step's
commits change a few), so the health of the next version costs the difference, not the table.
Every figure is the one the plain loops over the files give (tests/core/test_health_aggregates.py).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from audit.core.model import AddFile, partition_key
from audit.core.numbers import log_int

TOP_PARTITIONS = 20
_NUM_RECORDS = re.compile(r'\s*\{\s*"numRecords"\s*:\s*([0-9]+)\s*[,}]')
_NO_VALUES: dict[str, str | None] = {}


def record_count(add: AddFile) -> int | None:
    """`numRecords` of a file's stats.

    Spark and delta-rs write it as the first key: then it is read without parsing the whole
    stats JSON (a 400k-file table would otherwise parse 400k documents of min/max values to
    read one integer). Any other layout is parsed properly, so a column that happens to be
    named numRecords inside minValues is never mistaken for it.
    """
    stats = add.stats
    if not stats:
        return None
    m = _NUM_RECORDS.match(stats)
    if m:
        return log_int(m.group(1))
    try:
        parsed = orjson.loads(stats)
    except orjson.JSONDecodeError:
        return None
    value = parsed.get("numRecords") if isinstance(parsed, dict) else None
    return log_int(value) if type(value) is int else None


def deleted_rows(add: AddFile) -> int:
    """Rows the file's deletion vector deletes (0 without one)."""
    dv = add.deletion_vector or {}
    return log_int(dv.get("cardinality")) or 0


def live_rows(add: AddFile) -> int | None:
    """The file's rows minus those its deletion vector deletes; None without stats."""
    stats = add.stats
    found = _NUM_RECORDS.match(stats) if stats else None
    digits = found.group(1) if found is not None else ""
    if 0 < len(digits) <= 18 and not add.deletion_vector:
        return int(digits)  # record_count's common case: 18 digits are always in int64's range
    count = record_count(add)
    return None if count is None else count - deleted_rows(add)


def num_records(files: Iterable[AddFile]) -> tuple[int | None, int]:
    """Rows in the live files (minus rows their deletion vectors delete; None when a file has
    no stats) and the number of files without stats, in one pass."""
    total, without = 0, 0
    for f in files:
        rows = live_rows(f)
        if rows is None:
            without += 1
        else:
            total += rows
    return (None if without else total), without


def size_bucket(size: int) -> int:
    """The exponent of the smallest power of two >= size (the histogram's bucket)."""
    return max(int(size) - 1, 0).bit_length()


def histogram(counts: Counter[int]) -> list[dict[str, int]]:
    """Power-of-two buckets, contiguous from the smallest to the largest non-empty one."""
    present = [e for e, n in counts.items() if n]
    if not present:
        return []
    return [
        {"le": 1 << e, "count": counts.get(e, 0)} for e in range(min(present), max(present) + 1)
    ]


def size_histogram(sizes: Iterable[int]) -> list[dict[str, int]]:
    return histogram(Counter(map(size_bucket, sizes)))


def _partition(f: AddFile) -> tuple:
    values = f.partition_values or _NO_VALUES
    # partition_key without a sort of one item (most tables have one partition column).
    return tuple(values.items()) if len(values) < 2 else partition_key(values)


def _sortable(key: tuple) -> tuple:
    return tuple((name, value is None, value or "") for name, value in key)


def ranked_partitions(totals: dict[tuple, list[int]]) -> dict[str, Any]:
    """count / top (by bytes) / skew of per-partition [files, bytes]."""
    # Null partition values sort after the others (None and str do not compare).
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][1], _sortable(kv[0])))
    byte_counts = [v[1] for v in totals.values()]
    median = statistics.median(byte_counts) if byte_counts else 0
    return {
        "count": len(totals),
        "top": [
            {"values": dict(key), "num_files": n, "bytes": b}
            for key, (n, b) in ranked[:TOP_PARTITIONS]
        ],
        "skew": round(max(byte_counts) / median, 3) if median else None,
    }


def partition_health(files: Iterable[AddFile], columns: list[str]) -> dict[str, Any]:
    """count / top / skew of the files' partitions (the health's `partitions` section)."""
    return FileTotals.of(files, 0, bool(columns)).sections()["partitions"]


@dataclass
class FileTotals:
    """The per-file sums of the health for one file set, given the small-file limit and
    whether the table is partitioned (the document's sections: `sections()`)."""

    limit: int
    partitioned: bool
    files: int = 0
    bytes: int = 0
    rows: int = 0  # of the files with stats
    without_stats: int = 0
    buckets: Counter[int] = field(default_factory=Counter)
    small: int = 0
    small_bytes: int = 0
    partitions: dict[tuple, list[int]] = field(default_factory=dict)
    dv_files: int = 0
    dv_rows: int = 0

    @classmethod
    def of(cls, files: Iterable[AddFile], limit: int, partitioned: bool) -> FileTotals:
        totals = cls(limit, partitioned)
        totals.count(files, 1)
        return totals

    def advance(self, before: dict[str, AddFile], after: dict[str, AddFile]) -> None:
        """From the sums of the files `before` to those of `after` (by path; a path whose
        action changed, e.g. a new deletion vector, counts as removed and added)."""
        changed = [p for p, f in after.items() if before.get(p) is not f]
        gone = [before[p] for p in before.keys() - after.keys()]
        self.count(gone + [before[p] for p in changed if p in before], -1)
        self.count([after[p] for p in changed], 1)

    def count(self, files: Iterable[AddFile], sign: int) -> None:
        for f in files:
            size = f.size or 0
            self.files += sign
            self.bytes += sign * size
            rows = live_rows(f)
            if rows is None:
                self.without_stats += sign
            else:
                self.rows += sign * rows
            self.buckets[size_bucket(size)] += sign
            if size < self.limit:
                self.small += sign
                self.small_bytes += sign * size
            if self.partitioned:
                self._count_partition(f, size, sign)
            if f.deletion_vector:
                self.dv_files += sign
                self.dv_rows += sign * deleted_rows(f)

    def _count_partition(self, f: AddFile, size: int, sign: int) -> None:
        key = _partition(f)
        entry = self.partitions.setdefault(key, [0, 0])
        entry[0] += sign
        entry[1] += sign * size
        if entry[0] == 0:
            del self.partitions[key]

    def sections(self) -> dict[str, Any]:
        """The health document's file sections (num_files ... deletion_vectors)."""
        return {
            "num_files": self.files,
            "total_bytes": self.bytes,
            "num_records": None if self.without_stats else self.rows,
            "file_size_histogram": histogram(self.buckets),
            "small_files": {
                "count": self.small,
                "bytes": self.small_bytes,
                "threshold": self.limit,
            },
            "files_without_stats": self.without_stats,
            "partitions": (
                ranked_partitions(self.partitions)
                if self.partitioned
                else {"count": 0, "top": [], "skew": None}
            ),
            "deletion_vectors": {"files": self.dv_files, "deleted_rows": self.dv_rows},
        }
