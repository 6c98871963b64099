"""conflicts/rules.py: one function per Delta check, applied in ConflictChecker's order."""

from __future__ import annotations

import dataclasses

from audit.core.conflicts import rules
from audit.core.conflicts.scope import ReadScope
from audit.core.vocab import ConflictException, FindingKind, Severity
from audit.core.wording import FindingText
from tests.support.scenarios import summary

A = {"day": "a"}
TABLE = ReadScope("table", reason="unpartitioned table")


def _txn(**kwargs):
    return summary(5, "DELETE", read_version=1, removes={"a0": A}, predicate="day = 'a'", **kwargs)


def _winner(**kwargs):
    return summary(3, adds={"a1": A}, **kwargs)


def test_each_check_fires_alone():
    assert rules.check_protocol(_winner(protocol_changed=True)).serializable == (
        ConflictException.PROTOCOL_CHANGED
    )
    assert rules.check_metadata(_winner(metadata_changed=True)).rule == "metadata"
    assert rules.check_app_transactions(
        _txn(app_ids={"s": 1}), _winner(app_ids={"s": 2})
    ).write_serializable == (ConflictException.CONCURRENT_TRANSACTION)
    assert rules.check_added_files(_txn(), _winner(blind_append=False), TABLE).serializable
    assert rules.check_deleted_read_files(_txn(), summary(3, "DELETE", removes={"a0": A}), TABLE)
    assert rules.check_deleted_deleted_files(_txn(), summary(3, "DELETE", removes={"a0": A}))


def test_the_first_failing_check_decides_in_delta_order():
    winner = _winner(protocol_changed=True, metadata_changed=True, app_ids={"s": 2})
    txn = _txn(app_ids={"s": 1})
    assert rules.recheck(txn, winner, TABLE).rule == "protocol"
    winner.protocol_changed = False
    assert rules.recheck(txn, winner, TABLE).rule == "metadata"
    winner.metadata_changed = False
    assert rules.recheck(txn, winner, TABLE).rule == "txn"  # before any file check
    winner.app_ids = {}
    assert rules.recheck(txn, winner, TABLE).rule == "append"


def test_row_tracking_is_reconciled_never_raised():
    txn = dataclasses.replace(_txn(), domains=frozenset({"delta.rowTracking"}))
    winner = dataclasses.replace(summary(3), domains=frozenset({"delta.rowTracking"}))
    assert rules.check_domain_metadata(txn, winner) is None
    assert rules.check_row_tracking(txn, winner) is None
    other = dataclasses.replace(winner, domains=frozenset({"delta.rowTracking", "app.x"}))
    assert rules.check_domain_metadata(dataclasses.replace(txn, domains=other.domains), other)


def test_finding_text_builds_the_finding_unchanged():
    text = FindingText("a summary", "an explanation")
    finding = text.finding(FindingKind.MISSED_CONFLICT, Severity.WARNING, 7, [5, 6])
    assert (finding.summary, finding.explanation) == ("a summary", "an explanation")
    assert finding.kind == "missed_conflict" and finding.confirmed and finding.details == {}
    assert finding.witness is None and finding.related_versions == [5, 6]
