"""The vocabulary's values: severities and their one rank, engines, isolation levels, kinds."""

from __future__ import annotations

import pytest

from audit.core import model
from audit.core import severity as sev
from audit.core.errors import CAUSES
from audit.core.history.commit_summary import (
    SERIALIZABLE,
    WRITE_SERIALIZABLE,
    detect_engine,
    effective_isolation_level,
)
from audit.core.report import worst_severity
from audit.core.vocab import (
    SEVERITY_ORDER,
    SEVERITY_RANK,
    Engine,
    FindingKind,
    IsolationLevel,
    Severity,
)


def test_it_keeps_the_vocabulary_values():
    assert SERIALIZABLE is IsolationLevel.SERIALIZABLE == "Serializable"
    assert WRITE_SERIALIZABLE == "WriteSerializable"
    assert SEVERITY_RANK == {"info": 0, "warning": 1, "critical": 2}
    assert "warning" in SEVERITY_RANK
    assert CAUSES == ("access_denied", "not_found", "unreachable", "other")
    assert detect_engine({"engineInfo": "delta-rs.0.17"}) == "delta-rs"
    assert effective_isolation_level(Engine.SPARK, {}) == "Serializable"


def test_it_ranks_each_severity_by_its_one_rank():
    assert [SEVERITY_RANK[s] for s in SEVERITY_ORDER] == [s.rank for s in SEVERITY_ORDER]
    assert worst_severity([_finding("info"), _finding("critical"), _finding("warning")]) == (
        "critical"
    )


@pytest.mark.parametrize(
    "severity",
    [
        sev.never_existed_severity(True),
        sev.reorder_severity(False),
        sev.hotspot_severity(4, 0),
        sev.derived_fact_severity(),
        sev.integrity_severity("duplicate_active_file"),
        sev.dv_integrity_severity("count"),
        sev.duplicate_key_severity(),
    ],
)
def test_it_gives_severities_as_vocabulary_members(severity):
    assert type(severity) is Severity


def test_it_keeps_the_critical_integrity_kinds_critical():
    assert sev.integrity_severity("duplicate_active_file") == "critical"
    assert sev.integrity_severity(FindingKind.REMOVE_OF_UNKNOWN_FILE) == "critical"
    assert sev.integrity_severity("metrics_mismatch") == "warning"


def test_it_accepts_dynamic_health_kinds_in_a_finding():
    finding = model.Finding("health_small_files", "warning", 3, [], True, "s", "e")
    assert finding.key == ("health_small_files", 3, ())
    assert model.Finding(FindingKind.ORPHAN_FILES, "warning", 1, [], True, "", "").kind == (
        "orphan_files"
    )


def _finding(severity: str) -> model.Finding:
    return model.Finding("missed_conflict", severity, 1, [], True, "s", "e")
