"""When, and over which history, the tail recomputes a table's incidents.

The core groups findings into incidents (audit/core/incidents/) from the findings and the
history they were found in; the tail recomputes a table's incidents from its stored open
findings and stores them (audit/ingest/incidents.py), so they end equal to the one-shot
`audit --json`'s `incidents`. It does so only when they can have changed:

- after a chunk whose findings changed (opened or resolved), over the chunk's own window
  when it holds every version the open findings name, else over a window loaded from the
  earliest of them, unless that is more than `CHUNK_LOAD_LIMIT` versions (the whole-table
  refresh, due soon after every chunk, does it then). This one does without the last
  `ENGINES_SEEN` commits: the refresh that follows settles the prevent statements' spelling;
- at every whole-table refresh (audit/tail/step.py), over the whole history it loaded: new
  commits move the damage (rows wrong now), the quiet periods and the writers;
- when a stored incident's `recheck_at` has passed (its status changes with time alone: quiet,
  then resolved), on the table's idle step.

The window must hold the findings' versions and the versions they name (a stale commit's
damage reads the files its winners added), and the last `ENGINES_SEEN` commits (the prevent
statements spell a setting for every engine among them): then the core answers as it does
over the whole history (the refresh and the recheck load such a window).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from django.db import transaction
from django.utils import timezone

from audit.core.history.summary import History
from audit.core.incidents.build import incidents_of
from audit.core.incidents.model import Incident, occurrences
from audit.core.incidents.status import RECURRING, StatusRules
from audit.core.model import Finding
from audit.core.runs.table import AuditedTable
from audit.core.vocab import IncidentStatus
from audit.ingest.incidents import (
    StoredIncidents,
    acknowledgements,
    open_findings,
    store_incidents,
    unresolved_incidents,
)
from audit.ingest.lease import TableLease
from audit.models import Table

logger = logging.getLogger(__name__)

# Versions a chunk's recompute may load beyond its own window.
CHUNK_LOAD_LIMIT = 10_000
# The core's prevent statements read the engines of the last 1,000 commits (statements.py).
ENGINES_SEEN = 1000


def first_needed(findings: Sequence[Finding], first: int, end: int, *, engines: bool = True) -> int:
    """The first version a history must start at for the incidents of `findings` at `end`
    (`engines`: with the last ENGINES_SEEN commits, for the prevent statements' spelling)."""
    lo = max(end - ENGINES_SEEN + 1, first) if engines else end
    for f in findings:
        lo = min(lo, f.version, *f.related_versions)
    return max(lo, first)


def covers(history: History, lo: int, end: int) -> bool:
    summaries = history.summaries
    if not summaries or summaries[-1].version != end:
        return False
    return summaries[0].version <= lo


def refresh_incidents(
    table: Table,
    tailed: AuditedTable,
    end: int | None,
    *,
    history: History | None = None,
    load_limit: int | None = None,
    lease: TableLease | None = None,
) -> StoredIncidents | None:
    """Recompute and store the table's incidents at version `end` (None when nothing was done:
    nothing to group, or a window over `load_limit` versions left to the whole-table refresh).
    `history` is one the caller has at hand (used when it holds every version needed)."""
    if end is None:
        return None
    found = open_findings(table.id)
    if not found.findings and not unresolved_incidents(table.id):
        return None
    versions = tailed.log.listing.commit_versions
    # A chunk's regrouping (a load limit) does without the last commits' engines: the
    # whole-table refresh that follows it spells the prevent statements for all of them.
    exact = load_limit is None
    lo = first_needed(found.findings, versions[0] if versions else 0, end, engines=exact)
    if history is None or not covers(history, lo, end):
        if load_limit is not None and end - lo + 1 > load_limit:
            return None
        history = tailed.history(start=lo, end=end)
    now_ms = int(time.time() * 1000)
    rules = tailed.options.incident_rules or StatusRules()
    try:
        incidents = incidents_of(
            history,
            found.findings,
            check_data=tailed.options.check_data,
            read_roots=tailed.options.read_roots,
            now_ms=now_ms,
            rules=rules,
            acknowledged=acknowledgements(table.id),
        )
    except Exception:  # a bug of ours on an odd log must not stop the table's tail
        logger.exception("table %s: incidents not recomputed", table.id)
        return None
    recheck = {i.id: recheck_at(i, history, now_ms, rules) for i in incidents}
    with transaction.atomic():
        (lease or TableLease(table.id)).keep()  # first: a lost lease stores nothing
        return store_incidents(table.id, incidents, found, now=timezone.now(), recheck_at=recheck)


def recheck_at(
    incident: Incident, history: History, now_ms: int, rules: StatusRules
) -> datetime | None:
    """When the incident's status changes with time alone (no new commit), or None: a
    recurring cause far enough back in versions turns quiet after `quiet_ms`, and resolved
    after `resolve_ms`."""
    if incident.key.cause not in RECURRING or incident.status == IncidentStatus.RESOLVED:
        return None
    last = occurrences(incident)[-1]
    summary = history.summary(last)
    if summary is None or summary.timestamp is None:
        return None
    if incident.status == IncidentStatus.QUIET:
        at = summary.timestamp + rules.resolve_ms
    elif history.latest_version - last >= rules.quiet_versions:
        at = summary.timestamp + rules.quiet_ms
    else:
        return None  # new commits are needed first: their refresh recomputes it
    # Past already: the status computed now took it into account.
    return datetime.fromtimestamp(at / 1000, tz=UTC) if at > now_ms else None
