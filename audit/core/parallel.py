"""Summarising a long history on two cores: a forked child takes the later part of the log.

Reading and summarising 100k commit files is CPU-bound Python (orjson, then the reduction of
each commit's actions), so threads do not help; a second process does. The child is forked
after the log was listed (it inherits the listing and every import for free), summarises the
later versions and sends them back pickled as plain tuples (a third of the cost of pickling
the dataclasses). The parent summarises the earlier versions meanwhile, then takes the
child's summaries and re-derives the isolation level of those that depended on table
properties the child could not know (the configuration in force before its first version).
The log-integrity checks need the files active before each commit, so they run in the parent
only: the child sends, beside its summaries, what the checks read of each of its commits
(`integrity_record`), and the parent replays them after its own half; no commit is read twice.

Anything going wrong in the child (an unreadable commit, a failed fork, a killed process)
makes the parent summarise that range itself, so errors and results are exactly those of
the sequential path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import os
import pickle
import signal
import time
from collections.abc import Callable
from typing import Any

from audit.core.digest import Interner
from audit.core.errors import DeltaAuditError
from audit.core.integrity import IntegrityTap
from audit.core.integrity_refs import FileRef, IntegrityRecord, integrity_record
from audit.core.log import DeltaLog, _check_range
from audit.core.model import Commit, CommitSummary
from audit.core.summary import (
    MetadataTimeline,
    ProtocolTimeline,
    rederive_isolation,
    summarize_log,
)

# Below this many commits a fork costs more than it saves.
MIN_PARALLEL_COMMITS = 20_000
# The child's share. The child also pays for pickling (~15 us a commit); the parent, for each
# of the child's commits, unpickles it and replays its integrity record (~17 us together)
# besides summarising its own share (~55 us a commit, 100k bench log, one process): the two
# finish together near 0.55-0.57. (0.45 dated from before the parent replayed the records.)
CHILD_SHARE = 0.55

_FIELDS = tuple(f.name for f in dataclasses.fields(CommitSummary))
_as_row = operator.attrgetter(*_FIELDS)


def spare_core(sample_seconds: float = 0.1) -> bool:
    """True when a second process would get a core of its own right now.

    On a loaded machine the child only competes with the parent (Linux autogroup scheduling
    gives a session one share, however many processes it runs) and its pickling is pure
    overhead: measured at load 5-6 on 2 cores, the forked path took 8-11 s against 6-7 s.
    "Right now" is a short sample of the kernel's CPU counters: the 1-minute load average
    lags by a minute, so it kept an idle machine on one process after any burst (e.g. the
    bench's own deltalake run just before) and forked on a machine that had just got busy.
    The load average is the fallback where /proc/stat cannot be read.
    """
    cores = os.cpu_count() or 1
    if cores < 2:
        return False
    before = _cpu_times()
    if before is not None:
        time.sleep(sample_seconds)
        after = _cpu_times()
        if after is not None:
            return cores - busy_cores(before, after, cores) >= IDLE_NEEDED
    try:
        return os.getloadavg()[0] <= cores - 1
    except OSError:
        return False


# Idle cores needed to fork: one for the parent and most of one for the child. With less, the
# two processes share what is left (autogroup: a session's processes share one slice) and the
# child's pickling and the parent's replay make the pair slower than one process.
IDLE_NEEDED = 1.5


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs from /proc/stat's first line; None if unreadable."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def busy_cores(before: tuple[int, int], after: tuple[int, int], cores: int) -> float:
    """Cores in use between two `_cpu_times` readings (0 when no time passed)."""
    total = after[1] - before[1]
    return cores * (after[0] - before[0]) / total if total > 0 else 0.0


def summarize_log_parallel(
    log: DeltaLog,
    start: int | None,
    end: int | None,
    metadata_timeline: MetadataTimeline,
    protocol_timeline: ProtocolTimeline,
    tap: IntegrityTap | None = None,
    when: Callable[[], bool] | None = None,
) -> list[CommitSummary]:
    """`summarize_log` over start..end, on two processes when the range is long enough (and
    `when()` agrees, asked only then).

    `tap` observes every commit in version order (the child's through its records)."""
    interner = Interner(share_dicts=True)
    sink = tap.observe_refs if tap is not None else None
    versions = log.listing.commit_versions
    start = versions[0] if start is None and versions else start
    end = versions[-1] if end is None and versions else end
    # Short, or an error the plain path will report, or no core to spare.
    if not _splittable(log, start, end) or (when is not None and not when()):
        return summarize_log(log, start, end, metadata_timeline, protocol_timeline, interner, sink)
    assert start is not None and end is not None
    count = end - start + 1
    split = end + 1 - int(count * CHILD_SHARE)
    child = _fork_child(log, split, end, tap is not None)
    try:
        summaries = summarize_log(
            log, start, split - 1, metadata_timeline, protocol_timeline, interner, sink
        )
    except BaseException:
        if child is not None:
            _reap(child[0], kill=True)
            os.close(child[1])
        raise
    received = _receive(*child) if child is not None else None
    if received is None:  # the child failed: do its part here, with its errors
        summaries += summarize_log(
            log, split, end, metadata_timeline, protocol_timeline, interner, sink
        )
        return summaries
    rows, child_metadata, child_protocol, records, sizes = received
    log.listing.commit_sizes.update(sizes)
    if tap is not None:
        tap.replay(records)
    later = [CommitSummary(*row) for row in rows]
    # The child summarised with no configuration until its first metaData action.
    metadata = metadata_timeline[-1][1] if metadata_timeline else None
    first_change = child_metadata[0][0] if child_metadata else end + 1
    rederive_isolation(
        (s for s in later if s.version < first_change),
        metadata.configuration if metadata else {},
        interner,
    )
    metadata_timeline += child_metadata
    protocol_timeline += child_protocol
    summaries += later
    return summaries


def _splittable(log: DeltaLog, start: int | None, end: int | None) -> bool:
    if start is None or end is None or end - start + 1 < MIN_PARALLEL_COMMITS:
        return False
    if not hasattr(os, "fork"):
        return False
    try:
        _check_range(log.listing, start, end)
    except DeltaAuditError:
        return False
    return True


def _fork_child(log: DeltaLog, start: int, end: int, integrity: bool) -> tuple[int, int] | None:
    """Fork a child summarising start..end into a pipe: (pid, read end), or None."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # pragma: no cover - the child; its result is checked through the parent
        os.close(read_fd)
        _child_main(log, start, end, write_fd, integrity)
    os.close(write_fd)
    return pid, read_fd


def _child_main(log: DeltaLog, start: int, end: int, write_fd: int, integrity: bool) -> None:
    status = 1
    try:
        metadata: MetadataTimeline = []
        protocol: ProtocolTimeline = []
        records: list[IntegrityRecord] = []

        def record(commit: Commit, adds: list[FileRef], removes: list[FileRef]) -> None:
            records.append(integrity_record(commit, adds, removes))

        summaries = summarize_log(
            log, start, end, metadata, protocol, sink=record if integrity else None
        )
        payload = pickle.dumps(
            (
                [_as_row(s) for s in summaries],
                metadata,
                protocol,
                records,
                log.listing.commit_sizes,
            ),
            pickle.HIGHEST_PROTOCOL,
        )
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)
        status = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent redoes this range
        pass
    finally:
        # Leave at once: no atexit handlers, no flushing of stdio buffers copied from the parent.
        os._exit(status)


def _receive(pid: int, read_fd: int) -> tuple[list[tuple[Any, ...]], list, list, list, dict] | None:
    with os.fdopen(read_fd, "rb") as pipe:
        payload = pipe.read()
    if _reap(pid) != 0 or not payload:
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a truncated payload: redo the range
        return None


def _reap(pid: int, *, kill: bool = False) -> int:
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)
