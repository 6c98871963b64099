"""The health's per-file aggregates (row count, size histogram, partitions) answer what the
plain loops they replaced answered (kept here as the reference), on hostile and ordinary
files alike: stats with numRecords first or not, huge or padded counts, no stats, deletion
vectors with odd cardinalities, sizes of 0 and None, partitions of 0, 1 and 2 columns."""

from __future__ import annotations

import random

from audit.core.health.file_totals import (
    FileTotals,
    deleted_rows,
    num_records,
    partition_health,
    ranked_partitions,
    record_count,
    size_histogram,
)
from audit.core.model import AddFile, partition_key

STATS = [
    '{"numRecords":10,"minValues":{"a":1}}',
    '{"numRecords": 7}',
    ' { "numRecords" : 000000000000000000000042 , "x": 1}',
    '{"numRecords":999999999999999999}',
    '{"numRecords":9223372036854775807}',
    '{"numRecords":9223372036854775808}',
    '{"numRecords":123456789012345678901234567890}',
    '{"minValues":{"numRecords":5},"numRecords":3}',
    '{"numRecords":-1}',
    '{"numRecords":1.5}',
    "not json",
    "",
    None,
    '{"numRecords":0}',
]
DVS = [None, {}, {"cardinality": 2}, {"cardinality": "3"}, {"cardinality": -1}, {"x": 1}]
PARTITIONS = [{}, {"day": "1"}, {"day": None}, {"day": "2", "h": "1"}, {"h": "1", "day": "2"}]


def _files(seed: int, n: int = 400) -> list[AddFile]:
    rng = random.Random(seed)
    return [
        AddFile(
            f"f{i}",
            dict(rng.choice(PARTITIONS)),
            rng.choice([None, 0, 1, 2, 3, 1 << 20, 999]),
            stats=rng.choice(STATS),
            deletion_vector=rng.choice(DVS),
        )  # fmt: skip
        for i in range(n)
    ]


def _reference_records(files):
    total, without = 0, 0
    for f in files:
        count = record_count(f)
        if count is None:
            without += 1
            total = None
        elif total is not None:
            total += count - deleted_rows(f)
    return total, without


def _reference_histogram(sizes):
    counts: dict[int, int] = {}
    for size in sizes:
        exponent = max(int(size) - 1, 0).bit_length()
        counts[exponent] = counts.get(exponent, 0) + 1
    if not counts:
        return []
    return [{"le": 1 << e, "count": counts.get(e, 0)} for e in range(min(counts), max(counts) + 1)]


def _reference_partitions(files):
    """The per-partition totals keyed by partition_key (the ranking is shared)."""
    totals: dict[tuple, list[int]] = {}
    for f in files:
        entry = totals.setdefault(partition_key(f.partition_values), [0, 0])
        entry[0] += 1
        entry[1] += f.size or 0
    return ranked_partitions(totals)


def test_they_answer_what_the_plain_loops_answered():
    for seed in range(30):
        files = _files(seed)
        with_stats = [f for f in files if record_count(f) is not None]
        for chosen in (files, with_stats, with_stats[:50], []):
            assert num_records(chosen) == _reference_records(chosen), seed
        sizes = [f.size or 0 for f in files]
        assert size_histogram(iter(sizes)) == _reference_histogram(sizes)
        for columns in (["day"], ["day", "h"]):
            assert partition_health(files, columns) == _reference_partitions(files)
    assert num_records(with_stats)[0] is not None  # the fast path counted something


def test_kept_sums_moved_by_the_changed_files_equal_sums_afresh():
    rng = random.Random(11)
    files = {f.path: f for f in _files(1, 300)}
    for columns in (["day"], []):
        kept = FileTotals.of(files.values(), 1000, bool(columns))
        before = dict(files)
        for step in range(60):
            after = dict(before)
            for path in rng.sample(sorted(after), rng.randrange(0, 8)):  # removes
                del after[path]
            for i in range(rng.randrange(0, 8)):  # adds, some to a path just removed
                new = _files(1000 * step + i, 1)[0]
                new.path = rng.choice([f"n{step}-{i}", *sorted(before)[:3]])
                after[new.path] = new
            if after and rng.random() < 0.3:  # an action replaced in place (a new DV)
                path = rng.choice(sorted(after))
                after[path] = AddFile(path, after[path].partition_values, 7, stats=None,
                                      deletion_vector={"cardinality": 1})  # fmt: skip
            kept.advance(before, after)
            fresh = FileTotals.of(after.values(), 1000, bool(columns))
            assert kept.sections() == fresh.sections(), step
            assert fresh.sections()["partitions"] == (
                _reference_partitions(list(after.values()))
                if columns
                else {"count": 0, "top": [], "skew": None}
            )
            assert fresh.sections()["num_records"] == _reference_records(after.values())[0]
            before = after
