"""What becomes of log numbers at the edges (audit/core/numbers.py): a time outside the calendar
is an unknown time wherever it becomes a date, a read version below -1 is unknown, a staged
commit's name past 64 bits or in other digits names no version, and `clamp` puts a sum into a
column's range."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from audit.core.anomalies.hotspots import _day
from audit.core.explain.untrusted import iso
from audit.core.facts.timestamps import TimestampFacts
from audit.core.history.summary import load_history
from audit.core.integrity.catalog import staged_versions
from audit.core.log import open_log
from audit.core.log.discovery import latest_log_version
from audit.core.log.staged import find_unpublished
from audit.core.numbers import INT64_MAX, INT64_MIN, clamp, log_version, ms_datetime
from audit.core.wording.orphans import hour_iso, orphan_files_text
from audit.core.wording.timetravel import timestamps_out_of_order_text
from tests.support import staged_tables
from tests.support.logutil import commit_file, copy_table

FAR = 10**17  # ms: the year 3170843


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        (0, dt.datetime(1970, 1, 1, tzinfo=dt.UTC)),
        (1_700_000_000_000, dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)),
        ("1700000000000", dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)),
        (-86_400_000, dt.datetime(1969, 12, 31, tzinfo=dt.UTC)),
        (253_402_214_399_999, dt.datetime(9999, 12, 30, 23, 59, 59, 999000, tzinfo=dt.UTC)),
        (253_402_214_400_000, None),  # the calendar's last day: no time zone may pass it
        (-62_135_596_800_000, None),  # 0001-01-01, likewise
        (FAR, None),
        (-FAR, None),
        (INT64_MAX, None),
        (2**70, None),
        (1e400, None),
        ("²", None),
        (True, None),
        (None, None),
    ],
)
def test_it_turns_only_times_of_the_calendar_into_dates(ms: Any, expected: dt.datetime | None):
    assert ms_datetime(ms) == expected


def test_it_words_a_time_outside_the_calendar_as_unknown():
    facts = TimestampFacts(times=[], enablement_version=None, skewed=[1], max_skew_ms=FAR)
    facts.intervals = [(1_700_000_000_000, FAR, 0, 1)]
    text = timestamps_out_of_order_text(facts)
    assert "2023-11-14 22:13:20.000Z to an unknown time" in text.explanation
    assert "3170843" not in text.summary + text.explanation
    assert hour_iso(FAR) == "unknown"
    assert (
        "unknown to 2023-11-14T22:00Z"
        in orphan_files_text(1, 10, FAR, 1_700_000_000_000, False).summary
    )
    assert _day(FAR) == _day(-FAR) == "unknown"
    assert iso(FAR) == "an unknown time"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, 3), ("3", 3), (0, 0), (-1, -1), (-7, None), ("-7", None), (INT64_MIN, None),
     (2**63, None), (1.5, None), (True, None), ("²", None)],
)  # fmt: skip
def test_it_reads_no_version_below_minus_one(value: Any, expected: int | None):
    assert log_version(value) == expected


@pytest.mark.parametrize("read_version", [-7, -(2**63), "-2"])
def test_it_records_a_read_version_below_minus_one_as_unknown(tmp_path: Path, read_version: Any):
    path = copy_table("golden/basic-with-inserts-updates", tmp_path)
    file = commit_file(path, 1)
    lines = file.read_text().splitlines()
    info = json.loads(lines[0])
    info["commitInfo"]["readVersion"] = read_version
    file.write_text("\n".join([json.dumps(info), *lines[1:]]) + "\n")
    summary = load_history(str(path)).summaries[1]
    assert (summary.read_version, summary.facts["read_version"]) == (None, "unknown")


def test_it_keeps_a_read_version_of_minus_one_as_recorded():
    """Delta's golden table records readVersion -1 at v0: the one-shot report keeps it."""
    from tests.support.logutil import table

    summary = load_history(str(table("golden/deltalog-commit-info"))).summaries[0]
    assert (summary.read_version, summary.facts["read_version"]) == (-1, "recorded")


@pytest.mark.parametrize(
    "name",
    [
        "99999999999999999999.0f3c0000-0000-4000-8000-000000000000.json",  # past 64 bits
        "0000000000000000000٥.0f3c0000-0000-4000-8000-000000000000.json",  # int() takes it
        "０００００００００００００００００００６.0f3c0000-0000-4000-8000-000000000000.json",
    ],
)
def test_it_reads_no_version_from_a_staged_name_past_64_bits_or_in_other_digits(
    tmp_path: Path, name: str
):
    staged_tables.build(tmp_path)
    (tmp_path / "_delta_log" / "_staged_commits" / name).write_text('{"commitInfo": {}}\n')
    found = find_unpublished(open_log(str(tmp_path)).store, 3)
    assert found.staged_versions == [4, 5] and found.lag_versions == 2
    assert staged_versions(open_log(str(tmp_path)).store) == [3, 4, 5]


@pytest.mark.parametrize(
    ("value", "low", "high", "expected"),
    [
        (2**63, INT64_MIN, INT64_MAX, INT64_MAX),
        (2 * 2**62 + 5, INT64_MIN, INT64_MAX, INT64_MAX),
        (-(2**64), INT64_MIN, INT64_MAX, INT64_MIN),
        (7, INT64_MIN, INT64_MAX, 7),
        (2**31, -(2**31), 2**31 - 1, 2**31 - 1),
        (-3, 0, 2**31 - 1, 0),
    ],
)
def test_it_clamps_a_sum_into_a_column_range(value: int, low: int, high: int, expected: int):
    assert clamp(value, low, high) == expected


def test_it_finds_no_version_in_a_discovered_log_name_past_64_bits_or_in_other_digits():
    names = ["00000000000000000003.json", "99999999999999999999.json", "0000000000000000000٥.json"]
    names.append("99999999999999999999.checkpoint.parquet")
    assert latest_log_version(names) == 3
