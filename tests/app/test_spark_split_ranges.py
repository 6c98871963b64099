"""A long table split into version ranges gives the Python path's commits and findings.

The units and the driver's merge run here without a Spark session (what a task runs on each
unit, then what the driver does with the rows): the Spark job adds only the transport
(tests/e2e/test_spark.py runs it whole). The tables are those whose findings land before the
commit that reveals them (tests/support/revealing_tables.py): a range must keep the finding
when it holds the revealing commit, even when the finding's version lies in an earlier range.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from audit.core import serialize
from audit.core.audit import audit_history
from audit.core.errors import DeltaAuditError
from audit.core.history.summary import load_history
from audit.core.integrity.checks import MAX_FINDINGS_PER_KIND
from audit.core.vocab import INTEGRITY_KINDS
from tests.support import revealing_tables, storm_tables
from tests.support.hand_commits import base_actions, changed_add, write_commit
from tests.support.paths import DELTA_TABLES

pytestmark = pytest.mark.slow


def split_outcome(uri: str, chunk: int, check_data: bool = True) -> Any:
    """The table's outcome with every range of `chunk` commits run as a task runs it."""
    from workers.spark.job import decode_row, outcome_from_units, plan_table
    from workers.spark.units import DataReads, unit_rows

    plan = plan_table(uri, chunk)
    rows = []
    for unit in plan.units:
        for row in unit_rows(unit, plan.listing, DataReads(check=check_data), paths=True):
            rows.append(decode_row(row))
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


@pytest.mark.parametrize("storm", range(4))
def test_it_equals_the_python_path_on_random_concurrent_workloads_in_ranges(storm, tmp_path):
    uri = str(tmp_path / "storm")
    storm_tables.build_storm(uri, seed=storm)
    history = load_history(uri)
    assert len(history.summaries) >= 6, "the storm wrote too little"
    want = comparable(history, audit_history(history))
    for chunk in (1, 2, 5):
        outcome = split_outcome(uri, chunk)
        assert outcome.error is None, outcome.error
        assert comparable(outcome.history, outcome.audit) == want, f"ranges of {chunk}"


def data_tables() -> list[str]:
    return sorted(str(p.parent) for p in DELTA_TABLES.glob("*/**/_delta_log") if p.is_dir())


def python_path(uri: str) -> dict[str, Any] | str:
    try:
        history = load_history(uri)
        return comparable(history, audit_history(history))
    except DeltaAuditError as err:
        return str(err).strip().splitlines()[0]


@pytest.mark.parametrize("chunk", [1, 3])
@pytest.mark.parametrize("uri", data_tables(), ids=lambda u: "/".join(Path(u).parts[-2:]))
def test_it_merges_the_ranges_whole_history_findings_as_the_python_path_has_them(uri, chunk):
    """Every real table in ranges of 1 and 3 commits: hotspots, integrity (checked from each
    range's checkpointed state), missing read versions, storms, settings, all as one audit."""
    want = python_path(uri)
    try:
        outcome = split_outcome(uri, chunk)
    except DeltaAuditError as err:  # planning refuses what the Python path refuses
        assert str(err).strip().splitlines()[0] == want
        return
    if isinstance(want, str):
        assert outcome.error == want
        return
    assert outcome.error is None, outcome.error
    assert comparable(outcome.history, outcome.audit) == want
    assert outcome.history.state.version == load_history(uri).state.version


def _add(template: dict[str, Any], version: int, name: str, **changes: Any) -> dict[str, Any]:
    return changed_add(template, path=f"{name}.parquet", modificationTime=version, **changes)


def _gone(add: dict[str, Any]) -> dict[str, Any]:
    return {"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True}}


def build_broken_log(path: Path, *, before_window: bool) -> None:
    """Appends (v2..v320) with integrity findings in many ranges: a duplicate of a file added
    just before it, removes of unknown paths, a second remove, more metric lies than the
    per-kind cap, and a rewrite that drops rows of files added before its window. With
    `before_window`, also findings that depend on the history before a range's window (a
    duplicate of v0's file, a remove without a read version)."""
    template = base_actions(path)[0]
    added: dict[int, dict[str, Any]] = {}
    for v in range(2, 321):
        info: dict[str, Any] = {"readVersion": v - 1, "isBlindAppend": True}
        actions: list[dict[str, Any]] = []
        if v == 40:
            actions = [_add(template, v, "f38")]  # f38 is live: a duplicate (added at v38)
            info = {"readVersion": 37}  # read before f38 landed: v38 is in its window
        elif v == 50:
            actions = [_gone({"path": "ghost.parquet"})]
            info = {"operation": "DELETE", "readVersion": v - 1}
        elif v in (60, 70):
            actions = [_gone(added[55]["add"])]  # the second one removes what is gone
            info = {"operation": "DELETE", "readVersion": v - 1}
        elif v == 300:
            info = {"operation": "OPTIMIZE", "readVersion": v - 1}
            actions = [{**_gone(added[u]["add"])} for u in (298, 299)]
            for a in actions:
                a["remove"]["dataChange"] = False
            actions.append(_add(template, v, "opt", dataChange=False, stats=_stats(999)))
        elif before_window and v == 200:
            actions = [changed_add(template)]  # v0's file again: added before any window
        elif before_window and v == 210:
            actions = [_gone({"path": "ghost2.parquet"})]
            info = {"operation": "DELETE"}  # no read version
        else:
            added[v] = _add(template, v, f"f{v}")
            actions = [added[v]]
            if 80 <= v < 290:  # 210 lies: more than MAX_FINDINGS_PER_KIND
                info["operationMetrics"] = {"numAddedFiles": 5}
        write_commit(path, v, *actions, info=info)


def _stats(records: int) -> str:
    return json.dumps({"numRecords": records, "minValues": {}, "maxValues": {}, "nullCount": {}})


@pytest.mark.parametrize("before_window", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 100])
def test_it_checks_log_integrity_range_by_range_as_the_whole_log_does(
    before_window, chunk, tmp_path, monkeypatch
):
    from audit.core.runs import range_partials, split_history, tailwindow

    monkeypatch.setattr(split_history, "GUESS", 0)  # windows as short as the rules allow
    monkeypatch.setattr(tailwindow, "GUESS", 0)
    build_broken_log(tmp_path, before_window=before_window)
    history = load_history(str(tmp_path))
    want = comparable(history, audit_history(history, check_data=False))
    kinds = Counter(f["kind"] for f in want["findings"] if f["kind"] in INTEGRITY_KINDS)
    assert kinds["metrics_mismatch"] == MAX_FINDINGS_PER_KIND
    assert kinds["duplicate_active_file"] == 1 + before_window
    assert kinds["remove_of_unknown_file"] == 2 + before_window
    assert kinds["row_count_changed_by_rewrite"] == 1
    fallbacks = []
    merged = range_partials.integrity_unresolved
    monkeypatch.setattr(
        range_partials,
        "integrity_unresolved",
        lambda parts: fallbacks.append(merged(parts := list(parts))) or fallbacks[-1],
    )
    outcome = split_outcome(str(tmp_path), chunk, check_data=False)
    assert outcome.error is None, outcome.error
    assert comparable(outcome.history, outcome.audit) == want
    # Only what needs the history before a window sends the driver over the whole log. (In
    # ranges of 100, v200 and v210 share one whose window reaches back to v0: v210's read
    # version is derived from files older than it, so that range checks from the first commit.)
    assert fallbacks == [before_window and chunk < 100]
