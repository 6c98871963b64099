"""An incident's status: open, growing, quiet or resolved. Pure: the history, the incident and,
when the app has them, its acknowledgement facts.

- resolved: the cause is gone (the isolation setting now says what every writer understands;
  the table is now Serializable for a stale write WriteSerializable let through; the writer
  stopped writing), or the cause has not recurred for `resolve_ms`;
- quiet: no recurrence in the last `quiet_versions` versions and `quiet_ms` (both);
- growing: new occurrences since it was acknowledged (the app's fact);
- open: otherwise.

A cause that describes the table as it is now (orphan files, commit times, duplicate keys, a
faulty log, missing files) has no recurrence to wait for: it is open while its findings are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.core.anomalies.settings import setting_understood
from audit.core.history.summary import History
from audit.core.incidents.causes import ISOLATION_PROPERTY, writer_parts, writer_text
from audit.core.incidents.model import Acknowledgement, Incident, occurrences
from audit.core.vocab import Engine, IncidentCause, IncidentStatus

HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class StatusRules:
    """The declared periods (defaults; the app passes its settings)."""

    quiet_versions: int = 100
    quiet_ms: int = HOUR_MS
    resolve_ms: int = 7 * 24 * HOUR_MS


# Causes that recur commit after commit; the others describe the table's present state.
RECURRING = frozenset(
    {
        IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE,
        IncidentCause.STALE_WRITE_UNCHECKED,
        IncidentCause.ISOLATION_SETTING_IGNORED,
        IncidentCause.CONTENTION,
        IncidentCause.METADATA_RACE,
    }
)
_STALE = frozenset(
    {IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE, IncidentCause.STALE_WRITE_UNCHECKED}
)


@dataclass(frozen=True, slots=True)
class Status:
    status: IncidentStatus
    quiet_since: int | None = None  # the last occurrence, when quiet or resolved
    because: str = ""  # why it is resolved


def incident_status(
    incident: Incident,
    history: History,
    *,
    now_ms: int,
    rules: StatusRules = StatusRules(),
    acknowledged: Acknowledgement | None = None,
    writers: WriterIndex | None = None,
) -> Status:
    """The status of one incident at `now_ms`. `writers` (shared by a table's incidents) lets a
    stale write be resolved by its writer having stopped writing."""
    last = occurrences(incident)[-1]
    removed = cause_removed(incident, history)
    if removed:
        return Status(IncidentStatus.RESOLVED, last, removed)
    if incident.key.cause in RECURRING:
        quiet = _quiet(incident, history, last, now_ms, rules, writers or WriterIndex(history))
        if quiet is not None:
            return quiet
    acked = acknowledged.version if acknowledged is not None else None
    if acked is not None and last > acked:
        return Status(IncidentStatus.GROWING)
    return Status(IncidentStatus.OPEN)


def _quiet(
    incident: Incident,
    history: History,
    last: int,
    now_ms: int,
    rules: StatusRules,
    writers: WriterIndex,
) -> Status | None:
    """Quiet, or resolved by a long quiet or a writer gone; None while it still recurs."""
    summary = history.summary(last)
    last_ms = summary.timestamp if summary is not None else None
    since_ms = now_ms - last_ms if last_ms is not None else rules.resolve_ms
    if history.latest_version - last < rules.quiet_versions or since_ms < rules.quiet_ms:
        return None
    if incident.key.cause in _STALE and not writers.committed_after(incident.key.writer, last):
        return Status(IncidentStatus.RESOLVED, last, "its writer has not written since")
    if since_ms >= rules.resolve_ms:
        return Status(IncidentStatus.RESOLVED, last, "no recurrence in the declared period")
    return Status(IncidentStatus.QUIET, last)


def cause_removed(incident: Incident, history: History) -> str:
    """Why the cause can no longer act on the table, or "" while it can."""
    key = incident.key
    value = history.state.properties.get(ISOLATION_PROPERTY)
    if key.cause == IncidentCause.ISOLATION_SETTING_IGNORED:
        engine = key.writer.removeprefix("engine=")
        if value is None:
            return f"{ISOLATION_PROPERTY} is no longer set"
        if setting_understood(engine, str(value)):
            return f"{ISOLATION_PROPERTY} is now {str(value)[:60]!r}, which {engine} parses"
        return ""
    if key.cause == IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE and value is not None:
        engine = incident.writer.get("engine", "")
        kind = Engine.DELTA_RS if "delta-rs" in engine else Engine.SPARK
        if str(value).strip().lower() == "serializable" and setting_understood(kind, str(value)):
            return f"the table is now {ISOLATION_PROPERTY} = {str(value)!r}"
    return ""


class WriterIndex:
    """Who committed since when, looked up from the latest version back; each commit's writer
    is worked out once per distinct set of provenance fields (a table has few writers)."""

    def __init__(self, history: History):
        self.history = history
        self._texts: dict[tuple, str] = {}

    def committed_after(self, writer: str, version: int) -> bool:
        for summary in reversed(self.history.summaries):
            if summary.version <= version:
                return False
            if self._text(summary) == writer:
                return True
        return False

    def _text(self, summary: Any) -> str:
        job = summary.job if isinstance(summary.job, dict) else None
        key = (
            summary.engine_info,
            summary.engine,
            summary.user_name,
            summary.user_id,
            None if job is None else job.get("jobId"),
            id(summary.provenance),
            tuple(sorted(summary.app_ids)),
        )
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = writer_text(writer_parts(summary))
        return text
