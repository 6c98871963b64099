"""Per-writer totals of a table's stored commits, remembered per process and brought up to date
from the versions stored since.

Aggregating every Commit row of a table costs seconds at a million commits (even grouped in
the database: each row's provenance is read for its notebook and cluster), so the writers
view cannot do it per request. Stored commits never change and the ingest stores a table's
versions in order, in one transaction a chunk (`audit.ingest.chunk`), so the totals up to a
version stay true: a request reads the table's highest stored version (one index lookup) and
aggregates only the commits above the remembered one. A table registered again (another
`created_at`) or fewer stored versions than remembered start over.

The totals per writer: commits, first and last commit time, operations, clusters, and commits
per week since `since` (the first week the sparklines of that time showed: later requests
show later weeks only).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, DateTimeField, Max, Min, When
from django.db.models.fields.json import KT
from django.db.models.functions import TruncWeek

from audit.models import Commit, Table

# The stored columns a writer's identity derives from (`provenance.writer_parts`).
WRITER_COLUMNS = ("user_name", "user_id", "job_id", "engine_info", "engine", "notebook")
# Tables remembered per process (least recently used dropped first).
MAX_TABLES = 64
# Clusters kept per writer: a job on a new cluster each run has as many as runs, and the view
# shows the busiest few. Past MAX_CLUSTERS the busiest KEPT_CLUSTERS stay (ties among a
# writer's many one-run clusters were an arbitrary pick before too).
MAX_CLUSTERS, KEPT_CLUSTERS = 256, 64
# Entries (writers, and their operations, clusters and weeks) remembered per process across
# tables: a log chooses its writers' names, operations and times, so a hostile one could
# make a table's totals as large as its commits. Totals over it are used once, not kept.
MAX_ENTRIES = 200_000


@dataclass
class WriterTotals:
    row: dict[str, Any]  # the first grouped row of the writer: its stored identity columns
    commits: int = 0
    first: int | None = None
    last: int | None = None
    operations: Counter = field(default_factory=Counter)
    clusters: Counter = field(default_factory=Counter)
    weeks: Counter = field(default_factory=Counter)  # week start (date) -> commits
    # What the view derives from these, filled by it once (`provenance._shown`); not copied
    # into the next version's totals.
    shown: dict[str, Any] | None = None


@dataclass
class TableTotals:
    version: int | None  # the highest stored version counted (None: no commit yet)
    since: dt.datetime  # commits per week are counted from here
    writers: dict[str, WriterTotals]  # by writer label (`identity_key`)
    order: list[str] | None = None  # the labels as the view lists them, filled by it once
    entries: int = 0  # writers and their counters' keys: what remembering it costs (_remember)


_remembered: OrderedDict[str, TableTotals] = OrderedDict()
_parts: OrderedDict[str, tuple[str, Any]] = OrderedDict()  # table key -> (part key, value)
_computing: dict[str, threading.Lock] = {}  # table key -> held while counting its commits
_lock = threading.Lock()


def _table_key(table: Table) -> str:
    # The URI and registration time too: a table removed and registered again may get the
    # same id (SQLite).
    return f"{table.id}:{table.uri}:{table.created_at.isoformat() if table.created_at else ''}"


def remembered_part(table: Table, key: str, compute: Any) -> Any:
    """What `compute()` returned for the table under `key` (one value a table: another key
    replaces it). The value is shared: callers copy what they change."""
    tkey = _table_key(table)
    with _lock:
        found = _parts.get(tkey)
    if found is not None and found[0] == key:
        return found[1]
    value = compute()
    with _lock:
        _parts[tkey] = (key, value)
        _parts.move_to_end(tkey)
        while len(_parts) > MAX_TABLES:
            _parts.popitem(last=False)
    return value


def table_totals(table: Table, since: dt.datetime, label_of: Any) -> TableTotals:
    """The totals of the table's stored commits, weeks counted from `since` at the latest;
    `label_of(row)`: a grouped row's writer label."""
    key = _table_key(table)
    latest = _latest_version(table.id)
    found = _remembered_at(key, latest, since)
    if found is not None:
        return found
    # One thread of a process counts a table's commits at a time: the others wait for its
    # totals rather than each reading a million rows when a worker starts cold.
    with _lock:
        if len(_computing) > 4 * MAX_TABLES:
            _computing.clear()  # a bound: a lock dropped while held costs one more count
        computing = _computing.setdefault(key, threading.Lock())
    with computing:
        with _lock:
            known = _remembered.get(key)
        if known is not None and known.since <= since and (known.version or -1) >= (latest or 0):
            return known  # counted while this waited (up to `latest` or a version stored since)
        if (
            known is not None
            and known.since <= since
            and known.version is not None
            and latest is not None
            and latest > known.version
        ):
            totals = TableTotals(latest, known.since, _copied(known.writers))
            _add(totals, _grouped(table.id, totals.since, known.version, latest), label_of)
            return _remember(key, totals)
        totals = TableTotals(latest, since, {})
        if latest is not None:
            _add(totals, _grouped(table.id, since, None, latest), label_of)
        return _remember(key, totals)


def _remembered_at(key: str, latest: int | None, since: dt.datetime) -> TableTotals | None:
    """The remembered totals when they are those of version `latest` and weeks from `since`."""
    with _lock:
        known = _remembered.get(key)
        if known is None or latest is None or known.version != latest or known.since > since:
            return None
        _remembered.move_to_end(key, last=True)
        return known


def forget_all() -> None:
    """Drop every remembered table (tests)."""
    with _lock:
        _remembered.clear()
        _parts.clear()
        _computing.clear()


def _copied(writers: dict[str, WriterTotals]) -> dict[str, WriterTotals]:
    out = {}
    for label, w in writers.items():
        out[label] = WriterTotals(
            w.row,
            w.commits,
            w.first,
            w.last,
            w.operations.copy(),
            w.clusters.copy(),
            w.weeks.copy(),
        )
    return out


def _remember(key: str, totals: TableTotals) -> TableTotals:
    totals.entries = sum(
        1 + len(w.operations) + len(w.clusters) + len(w.weeks) for w in totals.writers.values()
    )
    with _lock:
        if totals.entries > MAX_ENTRIES:
            _remembered.pop(key, None)  # counted again by the next request, never kept
            return totals
        _remembered[key] = totals
        _remembered.move_to_end(key, last=True)
        kept = sum(t.entries for t in _remembered.values())
        while len(_remembered) > MAX_TABLES or kept > MAX_ENTRIES:
            kept -= _remembered.popitem(last=False)[1].entries
    return totals


def _latest_version(table_id: int) -> int | None:
    # The (table, version) unique index answers this with one seek, on SQLite and PostgreSQL.
    found = (
        Commit.objects.filter(table_id=table_id)
        .order_by("-version")
        .values_list("version", flat=True)[:1]
    )
    return next(iter(found), None)


def _grouped(table_id: int, since: dt.datetime, above: int | None, upto: int):
    """Commits in (above, upto] grouped by writer columns, cluster, operation and week (None
    before `since`): one pass over the rows, the version range read from the unique index."""
    commits = Commit.objects.filter(table_id=table_id, version__lte=upto)
    if above is not None:
        commits = commits.filter(version__gt=above)
    week = Case(
        When(committed_at__gte=since, then=TruncWeek("committed_at")),
        default=None,
        output_field=DateTimeField(),
    )
    return (
        commits.annotate(
            notebook=KT("provenance__notebook_id"), cluster=KT("provenance__cluster_id"), week=week
        )
        .values(*WRITER_COLUMNS, "operation", "cluster", "week")
        .annotate(n=Count("id"), first=Min("timestamp"), last=Max("timestamp"))
        .order_by()
    )


def _add(totals: TableTotals, rows: Any, label_of: Any) -> None:
    writers = totals.writers
    for row in rows:
        label = label_of(row)
        w = writers.get(label)
        if w is None:
            w = writers[label] = WriterTotals({k: row[k] for k in WRITER_COLUMNS})
        n = row["n"]
        w.commits += n
        w.first = row["first"] if w.first is None else _min(w.first, row["first"])
        w.last = max(w.last or 0, row["last"] or 0) or None
        w.operations[row["operation"] or "(none)"] += n
        if row["cluster"]:
            w.clusters[str(row["cluster"])] += n
            if len(w.clusters) > MAX_CLUSTERS:
                w.clusters = Counter(dict(w.clusters.most_common(KEPT_CLUSTERS)))
        week = row["week"]
        if week is not None:
            w.weeks[week.date() if isinstance(week, dt.datetime) else week] += n


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)
