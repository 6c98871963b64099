"""An incident's status over a history: open, quiet, resolved (by a declared period, by its
writer gone, by its cause removed), growing since it was acknowledged."""

from __future__ import annotations

from audit.core.incidents.causes import writer_parts, writer_text
from audit.core.incidents.model import Acknowledgement, CauseKey, Incident
from audit.core.incidents.status import StatusRules, incident_status
from audit.core.model import Finding
from audit.core.vocab import IncidentCause as C
from tests.support.scenarios import history, summary

T0 = 1_700_000_000_000
HOUR = 3_600_000
RULES = StatusRules(quiet_versions=10, quiet_ms=HOUR, resolve_ms=24 * HOUR)
STALE_AT = 3


def _history(commits: int, *, properties=None, stale_writer: str = "job-a", later: str = "job-b"):
    """v0..v{commits-1}, one a second; the stale commit at STALE_AT by `stale_writer`, the
    others by `later`."""
    summaries = [
        summary(
            v,
            engine_info=f"Apache-Spark/3.5.0 {stale_writer if v == STALE_AT else later}",
            timestamp=T0 + v * 1000,
        )
        for v in range(commits)
    ]
    return history(summaries, properties=properties)


def _stale(h, cause=C.STALE_WRITE_WRITE_SERIALIZABLE) -> Incident:
    writer = writer_text(writer_parts(h.summary(STALE_AT)))
    finding = Finding("never_existed_snapshot", "critical", STALE_AT, [2], True, "s", "e")
    return Incident(CauseKey(cause, writer, "DELETE", "whole table"), [finding])


def _status(incident, h, now_ms, **kwargs):
    return incident_status(incident, h, now_ms=now_ms, rules=RULES, **kwargs)


def test_it_is_open_while_the_cause_is_recent():
    h = _history(30)
    assert _status(_stale(h), h, T0 + 60_000).status == "open"
    # Enough versions since, but not enough time: still open.
    assert _status(_stale(h), h, T0 + HOUR // 2).status == "open"


def test_it_is_quiet_after_the_declared_versions_and_time():
    h = _history(30, later="job-a")  # the same writer keeps writing, without recurrence
    status = _status(_stale(h), h, T0 + 2 * HOUR)
    assert (status.status, status.quiet_since) == ("quiet", STALE_AT)


def test_it_is_resolved_after_the_longer_declared_period():
    h = _history(30, later="job-a")
    status = _status(_stale(h), h, T0 + 25 * HOUR)
    assert (status.status, status.because) == ("resolved", "no recurrence in the declared period")


def test_it_is_resolved_when_its_writer_stopped_writing():
    h = _history(30)  # job-a wrote only the stale commit; job-b wrote on
    status = _status(_stale(h), h, T0 + 2 * HOUR)
    assert (status.status, status.because) == ("resolved", "its writer has not written since")


def test_it_is_resolved_when_the_table_became_serializable():
    h = _history(5, properties={"delta.isolationLevel": "Serializable"})
    status = _status(_stale(h), h, T0 + 10_000)
    assert status.status == "resolved" and "Serializable" in status.because
    # A cause WriteSerializable did not let through is not removed by it.
    assert _status(_stale(h, C.STALE_WRITE_UNCHECKED), h, T0 + 10_000).status == "open"


def test_an_ignored_setting_is_resolved_once_every_writer_parses_it():
    key = CauseKey(C.ISOLATION_SETTING_IGNORED, "engine=delta-rs", "", "x=WriteSerializable")
    finding = Finding("isolation_setting_ignored", "warning", 0, [], True, "s", "e")
    still = _history(5, properties={"delta.isolationLevel": "WriteSerializable"})
    assert _status(Incident(key, [finding]), still, T0).status == "open"
    fixed = _history(5, properties={"delta.isolationLevel": "writeSerializable"})
    assert _status(Incident(key, [finding]), fixed, T0).status == "resolved"


def test_it_grows_with_occurrences_after_its_acknowledgement():
    h = _history(30)
    incident = _stale(h)
    acked = _status(incident, h, T0 + 60_000, acknowledged=Acknowledgement(version=STALE_AT))
    assert acked.status == "open"
    incident.findings.append(Finding("never_existed_snapshot", "critical", 20, [19], True, "", ""))
    grown = _status(incident, h, T0 + 60_000, acknowledged=Acknowledgement(version=STALE_AT))
    assert grown.status == "growing"


def test_a_cause_that_describes_the_table_now_stays_open():
    h = _history(30)
    orphans = Incident(
        CauseKey(C.ORPHAN_FILES), [Finding("orphan_files", "warning", 1, [], True, "", "")]
    )
    assert _status(orphans, h, T0 + 100 * HOUR).status == "open"
