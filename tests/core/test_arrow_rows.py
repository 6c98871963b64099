"""The Arrow schemas written as one spec line each, and the rows they carry (pure, no database)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from audit.core import report, serialize
from audit.core.model import Finding


def test_a_spec_line_is_the_schema_it_names():
    assert serialize.arrow_schema("a:str b:int c:bool d:ints").equals(
        pa.schema(
            [
                ("a", pa.string()),
                ("b", pa.int64()),
                ("c", pa.bool_()),
                ("d", pa.list_(pa.int64())),
            ]
        )
    )


def test_an_unknown_column_type_is_refused():
    with pytest.raises(KeyError):
        serialize.arrow_schema("a:float")


def test_the_summary_schema_keeps_its_columns_and_order():
    assert serialize.SUMMARY_COLUMNS[0] == "version"
    assert serialize.SUMMARY_COLUMNS[-1] == "nested"
    assert serialize.SUMMARY_SCHEMA.field("has_deletion_vectors").type == pa.bool_()
    assert serialize.FINDING_SCHEMA.names == ["kind", "severity", "version", "confirmed", "nested"]


@pytest.mark.parametrize(
    "finding",
    [
        Finding("missed_conflict", "warning", 3, [1, 2], True, "s", "e", {"w": 1}, {"d": [1]}),
        Finding("conflict_hotspot", "info", 0, [], False, "", ""),
    ],
)
def test_a_finding_row_round_trips(finding):
    assert serialize.finding_from_row(serialize.finding_to_row(finding)) == finding


def test_the_report_finding_fields_keep_their_order():
    f = Finding("missed_conflict", "critical", 7, (5, 6), True, "sum", "why", {"w": 1})
    entry = report.finding_entry(f)
    names = "kind severity version related_versions confirmed summary witness explanation"
    assert list(entry) == names.split()
    assert entry["related_versions"] == [5, 6]
    assert report.finding_head(f) == {k: entry[k] for k in list(entry)[:6]}
