"""Elle-style cycles on anomaly findings: every edge re-justified from the raw log.

The scenario tables are written by real delta-rs writers (tests/support/scenarios.py); the checks below
read each commit file again (not the audit's summaries) to confirm each edge's facts.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from audit.core.audit import audit_history
from audit.core.cycles import Cycle, Edge, classify
from audit.core.history.summary import load_history
from audit.core.wording.cycles import cycle_sentence
from tests.support import scenarios

ANOMALY_KINDS = {"never_existed_snapshot", "write_serializable_reorder"}
BUILDERS = [
    fn
    for name, fn in inspect.getmembers(scenarios, inspect.isfunction)
    if name.startswith("build_")
]


def _actions(table: Path, version: int) -> list[dict]:
    text = (table / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _info(table: Path, version: int) -> dict:
    return next((a["commitInfo"] for a in _actions(table, version) if "commitInfo" in a), {})


def _files(table: Path, version: int, kind: str) -> list[dict]:
    return [a[kind] for a in _actions(table, version) if kind in a]


def _partition_label(values: dict) -> str:
    if not values:
        return "whole table"
    return "/".join(f"{c}={v}" for c, v in sorted(values.items()))


def _check_rw(table: Path, edge: dict, finding_version: int) -> None:
    txn, writer = edge["from"], edge["to"]
    ev = edge["evidence"]
    assert writer < txn == finding_version
    read = ev["read_version"]
    if ev["read_version_fact"] == "recorded":
        assert _info(table, txn)["readVersion"] == read
    if read is not None:
        assert read < writer, "the reader saw the writer: no anti-dependency"
    added = {a["path"] for a in _files(table, writer, "add")}
    assert ev["writer_files"] and set(ev["writer_files"]) <= added
    # The writer's files lie in the partitions the edge names.
    labels = {_partition_label(a["partitionValues"]) for a in _files(table, writer, "add")}
    if ev["compaction"]:
        labels |= {
            _partition_label(r.get("partitionValues") or {})
            for r in _files(table, writer, "remove")
        }
    assert any(label in edge["item"] for label in labels) or edge["item"] == "the table"


def _check_ww(table: Path, edge: dict, finding_version: int) -> None:
    writer, txn = edge["from"], edge["to"]
    assert writer < txn == finding_version
    if edge["item"] == "table version":
        return  # every commit writes the table's next version; the log orders them
    for version in (writer, txn):
        touched = {
            _partition_label(f.get("partitionValues") or {})
            for kind in ("add", "remove")
            for f in _files(table, version, kind)
        }
        assert any(label in edge["item"] for label in touched), (version, edge["item"], touched)


@pytest.mark.slow
def test_every_anomaly_in_the_scenarios_has_a_justified_cycle(tmp_path):
    checked = 0
    for build in BUILDERS:
        table = tmp_path / build.__name__
        build(str(table))
        result = audit_history(load_history(str(table)))
        for finding in result.findings:
            if finding.kind not in ANOMALY_KINDS:
                continue
            witness = finding.witness or {}
            cycle = witness.get("cycle")
            assert cycle, (build.__name__, finding.kind, finding.version)
            assert witness["anomaly"] in ("G-single", "G2-item", "G1c")
            assert witness["weakest_level_violated"] in ("Serializable", "WriteSerializable")
            assert {e["to"] for e in cycle if e["type"] == "rw"} <= set(finding.related_versions)
            for edge in cycle:
                assert edge["why"]
                {"rw": _check_rw, "ww": _check_ww}[edge["type"]](table, edge, finding.version)
            # The edges close: every rw T->W is answered by a W->T.
            for edge in cycle:
                if edge["type"] == "rw":
                    assert any(e["from"] == edge["to"] and e["to"] == edge["from"] for e in cycle)
            checked += 1
    assert checked >= 8  # the scenarios hold at least this many anomaly findings


def test_reorder_cycle_reads_as_one_sentence(tmp_path):
    facts = scenarios.build_ws_reorder_matching(str(tmp_path))
    result = audit_history(load_history(str(tmp_path)))
    (reorder,) = [f for f in result.findings if f.kind == "write_serializable_reorder"]
    assert reorder.witness["cycle_sentence"] == (
        f"v{facts['delete_version']} read v{facts['read_version']} and did not see "
        f"v{facts['append_version']}'s append to day=2024-01-01, yet committed after it: an rw "
        f"anti-dependency v3\u2192v2 with v2 ww\u2192v3 forms a G-single cycle, forbidden under "
        "Serializable (Adya: PL-2+ (Consistent View))."
    )
    # Existing witness keys stay.
    assert "exceptions" in reorder.details


def test_a_commit_that_saw_the_writer_has_no_cycle(tmp_path):
    scenarios.build_sequential(str(tmp_path))
    result = audit_history(load_history(str(tmp_path)))
    assert not [f for f in result.findings if f.kind in ANOMALY_KINDS]


def test_classification_counts_anti_dependencies():
    rw = Edge(3, 2, "rw", "day=1")
    ww = Edge(2, 3, "ww", "day=1")
    wr = Edge(2, 3, "wr", "day=1")
    assert classify([rw, ww])[0] == "G-single"
    assert classify([rw, Edge(2, 3, "rw", "day=2")])[0] == "G2-item"
    assert classify([ww, wr])[0] == "G1c"
    sentence = cycle_sentence(Cycle([ww, wr], "G1c", "PL-2 (Read Committed)", "WriteSerializable"))
    assert "G1c" in sentence
