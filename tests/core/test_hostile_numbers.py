"""Numbers read from a log: ASCII digits within 64 bits, anything else unknown (None).

The concrete cases that crashed a pass: Unicode digits ("²" passes str.isdigit(), int()
refuses it) in readVersion, operationMetrics, delta.checkpointInterval and num_retries; a
metric past 64 bits; a timestamp past year 9999; an unopenable log during the integrity pass.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.core.audit import audit_history
from audit.core.data.witness import arrow_type_of
from audit.core.errors import DeltaAuditError
from audit.core.explain import explain_conflict
from audit.core.health.compute import activity_from, health_of_history, log_sizes
from audit.core.history.summary import load_history
from audit.core.integrity.checks import integrity_findings
from audit.core.jsonsafe import json_text
from audit.core.numbers import log_int
from audit.core.writers import writer_telemetry
from tests.support.logutil import commit_file, copy_table

TABLE = "golden/basic-with-inserts-updates"  # v0 CREATE + WRITE, v1 UPDATE with metrics


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12, 12),
        ("12", 12),
        ("00000000000000000003", 3),  # a commit file's name
        (" 12 ", 12),
        (5.0, 5),
        (2**63 - 1, 2**63 - 1),
        ("²", None),
        ("①", None),
        ("١٢", None),
        ("+1", None),
        ("-1", None),
        (-1, None),
        (2**63, None),
        (10**27, None),
        (str(10**27), None),
        ("9" * 5000, None),
        (1.5, None),
        (1e27, None),
        (float("nan"), None),
        (float("inf"), None),
        (True, None),
        (None, None),
        ([1], None),
        ({"a": 1}, None),
    ],
)
def test_it_reads_only_ascii_digits_within_64_bits(value: Any, expected: int | None):
    assert log_int(value) == expected


def _read_by_pattern(value: str, signed: bool) -> int | None:
    """log_int's reading of text before its fast path for short digit strings."""
    from audit.core import numbers

    text = value.strip(numbers._BLANKS)
    pattern = numbers._SIGNED if signed else numbers._UNSIGNED
    if len(text) > numbers._MAX_TEXT or not pattern.fullmatch(text):
        return None
    number = int(text)
    low = numbers.INT64_MIN if signed else 0
    return number if low <= number <= numbers.INT64_MAX else None


@settings(max_examples=2000, deadline=None)
@given(
    text=st.one_of(
        st.text(alphabet="0123456789", max_size=25),
        st.text(alphabet="0123456789 -+²١٢.e\t", max_size=25),
        st.text(max_size=25),
        st.integers(0, 10**25).map(str),
    ),
    signed=st.booleans(),
)
def test_its_short_digit_fast_path_reads_as_the_pattern_does(text: str, signed: bool):
    assert log_int(text, signed=signed) == _read_by_pattern(text, signed)


def test_it_takes_a_sign_only_where_negative_makes_sense():
    assert log_int("-7", signed=True) == -7
    assert log_int(-(2**63), signed=True) == -(2**63)
    assert log_int(-(2**63) - 1, signed=True) is None
    assert log_int("--7", signed=True) is None


def _edit_commit_info(path: Path, version: int, **changes: Any) -> None:
    """Set commitInfo keys (a dotted key reaches into a nested object) of one commit file."""
    file = commit_file(path, version)
    lines = file.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "commitInfo" in action:
            for key, value in changes.items():
                *parents, last = key.split(".")
                node = action["commitInfo"]
                for parent in parents:
                    node = node.setdefault(parent, {})
                node[last] = value
            lines[i] = json.dumps(action)  # the stdlib writes ints past 64 bits, orjson not
    file.write_text("\n".join(lines) + "\n")


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return copy_table(TABLE, tmp_path)


def test_it_records_a_unicode_digit_read_version_as_unknown(copy: Path):
    _edit_commit_info(copy, 1, readVersion="²")
    history = load_history(str(copy))
    assert history.summaries[1].read_version is None
    assert history.summaries[1].facts["read_version"] == "unknown"
    audit_history(history)


def test_it_reads_a_unicode_digit_metric_as_unknown(copy: Path):
    _edit_commit_info(copy, 1, **{"operationMetrics.numAddedFiles": "²"})
    history = load_history(str(copy))
    result = audit_history(history)
    assert history.summaries[1].operation_metrics["numAddedFiles"] == "²"  # kept as written
    assert [f.kind for f in result.findings if f.version == 1] == []


def test_it_counts_no_retries_for_a_unicode_digit_num_retries(copy: Path):
    _edit_commit_info(copy, 1, **{"operationMetrics.num_retries": "²"})
    history = load_history(str(copy))
    telemetry = writer_telemetry(history, audit_history(history).commits)
    assert [w["recorded_retries"] for w in telemetry["writers"]] == [0]


def test_it_takes_the_default_for_a_unicode_digit_checkpoint_interval(copy: Path):
    file = commit_file(copy, 0)
    lines = file.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "metaData" in action:
            action["metaData"]["configuration"] = {"delta.checkpointInterval": "²"}
            lines[i] = json.dumps(action)
    file.write_text("\n".join(lines) + "\n")
    checkpoint = health_of_history(load_history(str(copy)))["checkpoint"]
    assert checkpoint["interval"] is None and checkpoint["interval_effective"] == 10


def test_it_keeps_a_timestamp_past_year_9999_and_still_answers_the_health(copy: Path):
    _edit_commit_info(copy, 1, timestamp=str(2**62))
    history = load_history(str(copy))
    # Kept as milliseconds (the ingest stores it without a datetime); the commit hours of the
    # health advice are counted without one either.
    assert history.summaries[1].timestamp == 2**62
    assert sum(activity_from(history.summaries).all_hours) >= 1
    assert health_of_history(history)["recommendations"] is not None


def test_it_reports_an_unopenable_log_during_the_integrity_pass_as_an_error(copy: Path):
    # A window's history is not checked while it is read: the pass opens the log again.
    history = load_history(str(copy), start=1)
    assert history.integrity is None
    shutil.rmtree(copy)
    reopened = dataclasses.replace(history, _log=None)
    with pytest.raises(DeltaAuditError, match="log integrity cannot be checked"):
        integrity_findings(reopened)


@pytest.mark.parametrize(
    "name",
    [
        "0000000000000000000².json",  # str.isdigit() yes, int() no
        "０００００００００００００００００００２.json",  # fullwidth digits: int() takes them
        "99999999999999999999.json",  # twenty ASCII digits past 64 bits
        "0000000000000000000².checkpoint.parquet",
        "99999999999999999999.checkpoint.parquet",
        "00000000000000000000.99999999999999999999.compacted.json",
    ],
)
def test_it_ignores_log_file_names_that_are_no_version(copy: Path, name: str):
    (copy / "_delta_log" / name).write_bytes(b'{"commitInfo": {}}\n')
    history = load_history(str(copy))
    assert history.listing.commit_versions == [0, 1]
    assert history.listing.checkpoints == {}
    assert set(log_sizes(history.get_log())) == {0, 1}
    audit_history(history)
    health_of_history(history)


@pytest.mark.parametrize("delta_type", ["decimal(99,2)", "decimal(١٢,2)", "decimal(0,0)"])
def test_it_reads_a_decimal_arrow_cannot_hold_as_text(delta_type: str):
    assert arrow_type_of(delta_type) == pa.string()


@pytest.mark.parametrize(
    "text",
    [
        "ConcurrentAppendException: Files were added ... committed at version 9999999999999999999.",
        '{"version": 18446744073709551615, "operation": "WRITE"}',
    ],
)
def test_it_reads_a_conflict_version_past_64_bits_as_unknown(text: str):
    result = explain_conflict(text)
    assert json_text(result)
    assert result["conflicting_version"] is None
