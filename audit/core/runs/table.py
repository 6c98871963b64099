"""The one front door to the core: a table opened once, its history and its audit.

Callers (the tail, the management commands, the Spark units, the analyses, the benchmarks)
open a table here instead of wiring `open_log`, `history_from_log` and `audit_history` by
hand:

    table = open_table(uri, options=AuditOptions(check_data=False))
    history = table.history()                   # the whole history (or start=, end=)
    result = table.audit(history)               # with the table's options
    history, result, lo = table.audit_window(start, end)   # the tail's window (tailwindow.py)

`AuditedTable` adds no read of its own: each method reads what the function it calls reads,
on the log it was given (the tail passes the log it keeps between ticks, Spark the log over
the driver's listing). Its options are fixed when it is opened, or worked out on first use
(`options` may be a function of the table's URI: the tail asks the database for a table's
read scope only when an audit needs it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from audit.core.audit import AuditResult, audit_history, key_findings
from audit.core.data.dv import DvLimits
from audit.core.history.summary import History, Parallel, history_from_log, paused_gc
from audit.core.incidents.build import incidents_of
from audit.core.incidents.model import Incident
from audit.core.incidents.status import StatusRules
from audit.core.log import DeltaLog
from audit.core.model import Finding
from audit.core.runs.tailwindow import audit_tail_chunk, load_tail_history
from audit.core.runs.unpublished import audit_unpublished
from audit.core.storage.config import ResolvedStorage
from audit.core.storage.stores import open_store

WindowAudit = Callable[[History, tuple[int, int]], AuditResult]


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """What an audit may read and spend. `check_data`: read data files at all (to confirm
    never-existed rows, duplicate keys); `read_roots`: only inside these roots (None: the
    table's own root; storage/roots.py); `sample_rows`: the rows a witness keeps (0: counts
    only; None: the witness's default); `key_columns`: the table's declared key;
    `dv_limits`: what deletion vectors may cost (None: the defaults); `incident_rules`: when a
    recurring incident turns quiet and resolved (None: the defaults)."""

    check_data: bool = True
    read_roots: Sequence[str] | None = None
    sample_rows: int | None = None
    key_columns: tuple[str, ...] = ()
    dv_limits: DvLimits | None = None
    incident_rules: StatusRules | None = None


# The log only: no data file read (the analyses, the advice, the benchmarks of the log).
LOG_ONLY = AuditOptions(check_data=False)

OptionsOf = Callable[[str], AuditOptions]


class AuditedTable:
    """A table's log, opened once, with the options its audits run under."""

    def __init__(self, log: DeltaLog, options: AuditOptions | OptionsOf = AuditOptions()):
        self.log = log
        self._options = options

    @classmethod
    def of(
        cls, history: History, options: AuditOptions | OptionsOf = AuditOptions()
    ) -> AuditedTable:
        """The table `history` was read from (its open log: no new listing)."""
        return cls(history.get_log(), options)

    @property
    def uri(self) -> str:
        return self.log.uri

    @property
    def options(self) -> AuditOptions:
        """The options, worked out once on first use when given as a function of the URI."""
        if not isinstance(self._options, AuditOptions):
            self._options = self._options(self.uri)
        return self._options

    # ------------------------------------------------------------------ the history

    def history(
        self, *, start: int | None = None, end: int | None = None, parallel: Parallel = False
    ) -> History:
        """The history of versions [start, end] (default: every available commit). `parallel`
        lets a whole history be summarised on two processes (one-shot commands only)."""
        return history_from_log(self.log, start=start, end=end, parallel=parallel)

    def window(self, start: int, end: int) -> History:
        """The history that audits versions [start, end] exactly as the whole log does (the
        tail's window: runs/tailwindow.py)."""
        return load_tail_history(self.log, start, end)

    # ------------------------------------------------------------------ the audit

    def audit(
        self, history: History, *, versions: tuple[int, int] | None = None, pause_gc: bool = True
    ) -> AuditResult:
        """`audit_history` under the table's options (`versions`: a window's own commits)."""
        options = self.options
        return audit_history(
            history,
            check_data=options.check_data,
            versions=versions,
            read_roots=options.read_roots,
            sample_rows=options.sample_rows,
            key_columns=options.key_columns,
            pause_gc=pause_gc,
            dv_limits=options.dv_limits,
        )

    def audit_window(
        self, start: int, end: int, run: WindowAudit | None = None
    ) -> tuple[History, AuditResult, int]:
        """The history and audit deciding the findings of new commits [start, end], and the
        first version `lo` whose findings they may change (tailwindow.audit_tail_chunk).
        `run(history, versions)` replaces the table's own windowed audit (the tail keeps its
        lease between the load and the audit)."""
        return audit_tail_chunk(self.log, start, end, run or self._window_audit)

    def _window_audit(self, history: History, versions: tuple[int, int]) -> AuditResult:
        return self.audit(history, versions=versions)

    def key_findings(
        self, history: History, result: AuditResult, keys: Sequence[str]
    ) -> list[Finding]:
        """duplicate_key findings of `keys` for an audit already run without them (the tail's
        table-level refresh), inside the table's read roots and DV limits."""
        options = self.options
        return key_findings(history, result, list(keys), options.read_roots, options.dv_limits)

    # ------------------------------------------------------------------ beyond the audit

    def unpublished(self, now_ms: int) -> dict[str, Any] | None:
        """The report's `unpublished` section: staged commits audited under the same options
        (runs/unpublished.py); None when nothing is staged."""
        return audit_unpublished(self.log, lambda history: self.audit(history), now_ms=now_ms)

    def incidents(
        self, history: History, findings: Sequence[Finding], *, now_ms: int | None = None
    ) -> list[Incident]:
        """The incidents of `findings`, their damage read inside the table's read roots."""
        options = self.options
        return incidents_of(
            history,
            findings,
            check_data=options.check_data,
            read_roots=options.read_roots,
            now_ms=now_ms,
            rules=options.incident_rules or StatusRules(),
        )


def open_table(
    uri: str | os.PathLike[str],
    *,
    storage: ResolvedStorage | None = None,
    options: AuditOptions | OptionsOf = AuditOptions(),
) -> AuditedTable:
    """List the log at `uri` (with `storage`'s credentials; None: the per-root config).
    Raises DeltaAuditError when it is no readable table."""
    with paused_gc():  # a long log's listing is many young objects, none of them garbage
        return AuditedTable(DeltaLog(open_store(uri, storage)), options)
