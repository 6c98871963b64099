"""A long table split into version ranges gives the Python path's commits and findings.

The units and the driver's merge run here without a Spark session (what a task runs on each
unit, then what the driver does with the rows): the Spark job adds only the transport
(tests/e2e/test_spark.py runs it whole). The tables are those whose findings land before the
commit that reveals them (tests/support/revealing_tables.py): a range must keep the finding
when it holds the revealing commit, even when the finding's version lies in an earlier range.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from audit.core import serialize
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from tests.support import revealing_tables

pytestmark = pytest.mark.slow


def split_outcome(uri: str, chunk: int, check_data: bool = True) -> Any:
    """The table's outcome with every range of `chunk` commits run as a task runs it."""
    from workers.spark.job import outcome_from_units, plan_table
    from workers.spark.units import DataReads, unit_rows

    plan = plan_table(uri, chunk)
    rows = []
    for unit in plan.units:
        for row in unit_rows(unit, plan.listing, DataReads(check=check_data), paths=True):
            rows.append({**row, "payload": pickle.loads(row["payload"])})
    return outcome_from_units(uri, rows, plan.listing, True)


def comparable(history: Any, result: Any) -> dict[str, Any]:
    return {
        "summaries": history.summaries,
        "audits": {v: serialize.commit_audit_to_json(a) for v, a in result.commits.items()},
        "findings": [serialize.finding_to_row(f) for f in result.findings],
    }


@pytest.mark.parametrize("chunk", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(revealing_tables.BUILDERS))
def test_it_keeps_findings_a_later_range_reveals(name, chunk, tmp_path):
    uri = str(tmp_path / name)
    planted = revealing_tables.BUILDERS[name](uri)
    history = load_history(uri)
    want = comparable(history, audit_history(history))
    outcome = split_outcome(uri, chunk)
    assert outcome.error is None, outcome.error
    assert comparable(outcome.history, outcome.audit) == want
    found = {(f.kind, f.version, tuple(f.related_versions)) for f in outcome.audit.findings}
    planted_finding = ("concurrent_metadata_change", planted["metadata_change"])
    assert (*planted_finding, tuple(planted["in_flight"])) in found, found


@pytest.mark.parametrize("seed", range(8))
def test_it_equals_the_python_path_on_random_short_histories_in_ranges_of_1(seed, tmp_path):
    uri = str(tmp_path / "random")
    revealing_tables.build_random_history(uri, seed=seed)
    history = load_history(uri)
    outcome = split_outcome(uri, 1)
    assert outcome.error is None, outcome.error
    assert comparable(outcome.history, outcome.audit) == comparable(history, audit_history(history))
