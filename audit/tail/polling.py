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
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from audit.models import Table
from audit.tail import logs as tailing
from audit.tail.notifications import notify_queues, under_notified_root


def is_idle(last_commit_at: datetime | None, now: datetime) -> bool:
    after = settings.AUDIT_IDLE_AFTER_SECONDS
    if after <= 0 or last_commit_at is None:
        return False
    return last_commit_at < now - timedelta(seconds=after)


def tables_due(now: datetime | None = None) -> list[int]:
    now = now or timezone.now()
    rows = (
        Table.objects.exclude(status__in=(Table.Status.PAUSED, Table.Status.GONE))
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .values_list(
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
    )
    findings_before = now - timedelta(seconds=settings.AUDIT_TABLE_FINDINGS_SECONDS)
    idle_visit_before = now - timedelta(seconds=settings.AUDIT_IDLE_INTERVAL_SECONDS)
    # The drain dispatched a step at once; one still unanswered after this is redone.
    unanswered_before = now - timedelta(seconds=2 * settings.AUDIT_TAIL_INTERVAL_SECONDS)
    notified = [root for root, _queue in notify_queues()]
    due, visited, probes = [], [], []
    for row in rows:
        table_id, uri, status, last_seen, last_tail_at, dirty, last_commit_at, probed_at = row[:8]
        notice = row[8]
        if notice is not None and notice < unanswered_before and status == Table.Status.OK:
            due.append(table_id)  # (a table in error is retried at its visits, below)
            continue
        # Tables whose store sends change notifications are not probed: treated as idle,
        # they only get the (rare) full check, the safety net for a lost notification.
        on_notice = bool(notified) and under_notified_root(uri, notified)
        idle = on_notice or is_idle(last_commit_at, now)
        if idle and probed_at is not None and probed_at > idle_visit_before:
            continue  # backed off: looked at less than AUDIT_IDLE_INTERVAL_SECONDS ago
        visited.append(table_id)
        full_every = (
            max(settings.AUDIT_FULL_CHECK_SECONDS, settings.AUDIT_IDLE_FULL_CHECK_SECONDS)
            if idle
            else settings.AUDIT_FULL_CHECK_SECONDS
        )
        needs_full_check = (
            status != Table.Status.OK
            or last_tail_at is None
            or last_tail_at < now - timedelta(seconds=full_every)
        )
        needs_findings = dirty and last_tail_at is not None and last_tail_at < findings_before
        if needs_full_check or needs_findings:
            due.append(table_id)
        elif not on_notice:
            probes.append((table_id, uri, (last_seen if last_seen is not None else -1) + 1))
    due += _probe(probes)
    if visited:
        Table.objects.filter(id__in=visited).update(probed_at=now)
    return due


def _probe(probes: list[tuple[int, str, int]]) -> list[int]:
    """Tables whose next commit file exists. One HEAD each, run concurrently: a pass over
    hundreds of tables must fit in one tail interval, and each probe is a network round trip."""
    if len(probes) <= 1:
        return [tid for tid, uri, version in probes if tailing.has_commit(uri, version)]
    workers = min(settings.AUDIT_PROBE_THREADS, len(probes))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tail-probe") as pool:
        found = pool.map(lambda p: tailing.has_commit(p[1], p[2]), probes)
        return [probe[0] for probe, hit in zip(probes, found, strict=True) if hit]
