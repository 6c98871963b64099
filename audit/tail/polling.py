"""Which tables a tail pass visits, and how often idle ones are looked at (idle backoff).

Each pass (beat, every AUDIT_TAIL_INTERVAL_SECONDS) decides per table, cheapest first:

- a table with a change notice no tail step has answered for two intervals (its step found the
  table busy, expired in the queue or died with its worker: notifications.py) is due at once;
- an idle table (no commit for AUDIT_IDLE_AFTER_SECONDS, by the commits' own timestamps) is
  skipped until AUDIT_IDLE_INTERVAL_SECONDS have passed since it was last looked at; its first
  new commit makes it active again, back at the base interval;
- a table not OK, or not fully checked for AUDIT_FULL_CHECK_SECONDS (AUDIT_IDLE_FULL_CHECK_SECONDS
  when idle), or with stale table-level findings, goes to a worker tick (one listing request);
- otherwise one HEAD on its next commit file answers "anything new?".

So an idle table costs one request per visit, and visits of idle tables are rarer: at the
default 5 s interval, 17,280 visits a day become about 2,100 (see bench/bench_objstore.py).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from audit.models import Table
from audit.tail import kept_logs
from audit.tail.notifications import notify_queues, under_notified_root


def is_idle(last_commit_at: datetime | None, now: datetime) -> bool:
    after = settings.AUDIT_IDLE_AFTER_SECONDS
    if after <= 0 or last_commit_at is None:
        return False
    return last_commit_at < now - timedelta(seconds=after)


_FIELDS = (
    "id",
    "uri",
    "status",
    "last_seen_version",
    "last_tail_at",
    "table_findings_dirty",
    "last_commit_at",
    "probed_at",
    "notified_at",
)
_SKIP, _DUE, _PROBE, _LOOKED = "skip", "due", "probe", "looked"


@dataclass(frozen=True)
class _Pass:
    """What one pass compares each table's row against."""

    now: datetime
    notified_roots: list[str]
    findings_before: datetime
    idle_visit_before: datetime
    unanswered_before: datetime

    @classmethod
    def at(cls, now: datetime) -> _Pass:
        return cls(
            now=now,
            notified_roots=[root for root, _queue in notify_queues()],
            findings_before=now - timedelta(seconds=settings.AUDIT_TABLE_FINDINGS_SECONDS),
            idle_visit_before=now - timedelta(seconds=settings.AUDIT_IDLE_INTERVAL_SECONDS),
            # The drain dispatched a step at once; one still unanswered after this is redone.
            unanswered_before=now - timedelta(seconds=2 * settings.AUDIT_TAIL_INTERVAL_SECONDS),
        )


def tables_due(now: datetime | None = None) -> list[int]:
    this = _Pass.at(now or timezone.now())
    rows = (
        Table.objects.exclude(status__in=(Table.Status.PAUSED, Table.Status.GONE))
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=this.now))
        .values_list(*_FIELDS, named=True)
    )
    due, visited, probes = [], [], []
    for row in rows:
        verdict = _verdict(row, this)
        if verdict == _SKIP:
            continue
        visited.append(row.id)
        if verdict == _DUE:
            due.append(row.id)
        elif verdict == _PROBE:
            last_seen = row.last_seen_version
            probes.append((row.id, row.uri, (last_seen if last_seen is not None else -1) + 1))
    due += _probe(probes)
    if visited:
        Table.objects.filter(id__in=visited).update(probed_at=this.now)
    return due


def _verdict(row: Any, this: _Pass) -> str:
    """Skip the table, tail it (due), probe it for its next commit, or only note the look."""
    if (
        row.notified_at is not None
        and row.notified_at < this.unanswered_before
        and row.status == Table.Status.OK  # a table in error is retried at its visits, below
    ):
        return _DUE
    # Tables whose store sends change notifications are not probed: treated as idle,
    # they only get the (rare) full check, the safety net for a lost notification.
    on_notice = bool(this.notified_roots) and under_notified_root(row.uri, this.notified_roots)
    # A table never stored yet (its ingest still to run, or its first step expired in the
    # queue) is no idle table: backed off, a fleet's first wave took a minute per retry.
    idle = (on_notice and row.last_tail_at is not None) or is_idle(row.last_commit_at, this.now)
    if idle and row.probed_at is not None and row.probed_at > this.idle_visit_before:
        return _SKIP  # backed off: looked at less than AUDIT_IDLE_INTERVAL_SECONDS ago
    full_every = (
        max(settings.AUDIT_FULL_CHECK_SECONDS, settings.AUDIT_IDLE_FULL_CHECK_SECONDS)
        if idle
        else settings.AUDIT_FULL_CHECK_SECONDS
    )
    last_tail_at = row.last_tail_at
    needs_full_check = (
        row.status != Table.Status.OK
        or last_tail_at is None
        or last_tail_at < this.now - timedelta(seconds=full_every)
    )
    needs_findings = (
        row.table_findings_dirty
        and last_tail_at is not None
        and last_tail_at < this.findings_before
    )
    if needs_full_check or needs_findings:
        return _DUE
    return _LOOKED if on_notice else _PROBE


def _probe(probes: list[tuple[int, str, int]]) -> list[int]:
    """Tables whose next commit file exists. One HEAD each, run concurrently: a pass over
    hundreds of tables must fit in one tail interval, and each probe is a network round trip."""
    if len(probes) <= 1:
        return [tid for tid, uri, version in probes if kept_logs.has_commit(uri, version)]
    workers = min(settings.AUDIT_PROBE_THREADS, len(probes))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tail-probe") as pool:
        found = pool.map(lambda p: kept_logs.has_commit(p[1], p[2]), probes)
        return [probe[0] for probe, hit in zip(probes, found, strict=True) if hit]
