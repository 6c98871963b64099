"""Summarising a long history on two cores: a forked child takes the later part of the log.

Reading and summarising 100k commit files is CPU-bound Python (orjson, then the reduction of
each commit's actions), so threads do not help; a second process does. The child is forked
after the log was listed (it inherits the listing and every import for free), summarises the
later versions and streams them back in frames of `FRAME_COMMITS` commits, each pickled as
one list per field as soon as it is done (a fraction of the cost of pickling the dataclasses,
and the parent never holds more than a frame of them in transit). The parent summarises the
earlier versions meanwhile, then merges the frames as they come and re-derives the isolation
level of the summaries that depended on table properties the child could not know (the
configuration in force before its first version).
The log-integrity checks need the files active before each commit, so they run in the parent
only: the child sends, beside its summaries, what the checks read of each of its commits
(`integrity_record`), and the parent replays them after its own half; no commit is read twice.

Anything going wrong in the child (an unreadable commit, a failed fork, a killed process, a
frame cut short) makes the parent summarise what it did not receive itself, so errors and
results are exactly those of the sequential path.
"""

from __future__ import annotations

import bisect
import contextlib
import operator
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from audit.core.errors import DeltaAuditError
from audit.core.history.digest import Interner
from audit.core.history.summarize import (
    MetadataTimeline,
    ProtocolTimeline,
    rederive_isolation,
    summarize_log,
)
from audit.core.integrity.checks import IntegrityTap
from audit.core.integrity.refs import FileRef, IntegrityRecord, integrity_record
from audit.core.log import DeltaLog
from audit.core.log.listing import _check_range
from audit.core.model import Commit, CommitSummary

# Below this many commits a fork costs more than it saves.
MIN_PARALLEL_COMMITS = 20_000
# The child's share. The child also pays for pickling (~15 us a commit); the parent, for each
# of the child's commits, unpickles it and replays its integrity record (~17 us together)
# besides summarising its own share (~55 us a commit, 100k bench log, one process): the two
# finish together near 0.55-0.57. (0.45 dated from before the parent replayed the records.)
CHILD_SHARE = 0.55

# The summaries' slots as they are held (paths and metrics packed): sent as they are.
_as_row = operator.attrgetter(*CommitSummary.__slots__)
# Commits per frame the child sends: the parent holds one frame's bytes and objects at a time
# on top of the history (the whole payload at once was ~1.2 KB a commit: 650 MB at 1M). Small
# frames also keep the parent's heap dense: a frame's transient objects (its integrity records,
# the columns) are allocated among the summaries it keeps, and the pools they leave are reused
# only partly. At 100k commits the parent ended 376 MB with frames of 20,000, 325 MB with 5,000.
FRAME_COMMITS = 5_000
# (columns of the summaries' fields, metadata changes, protocol changes, integrity records,
# commit file sizes) of one run of versions.
_Frame = tuple[list[tuple[Any, ...]], MetadataTimeline, ProtocolTimeline, list, dict[int, int]]


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
    received = split
    if child is not None:
        merge = _Merge(log, summaries, metadata_timeline, protocol_timeline, tap, interner)
        received = _receive(*child, merge, split)
    if received <= end:  # the child failed, or stopped early: the rest here, with its errors
        summaries += summarize_log(
            log, received, end, metadata_timeline, protocol_timeline, interner, sink
        )
    return summaries


class _Merge:
    """Takes the child's frames in version order into the parent's history.

    The child summarised with no configuration until its first metaData action: the isolation
    level of its summaries before that is re-derived from the configuration in force before
    the split (the parent's last one).
    """

    def __init__(
        self,
        log: DeltaLog,
        summaries: list[CommitSummary],
        metadata_timeline: MetadataTimeline,
        protocol_timeline: ProtocolTimeline,
        tap: IntegrityTap | None,
        interner: Interner,
    ) -> None:
        self.log, self.summaries, self.tap, self.interner = log, summaries, tap, interner
        self.metadata_timeline, self.protocol_timeline = metadata_timeline, protocol_timeline
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        # None once the child's own configuration took over.
        self.properties: dict[str, str] | None = metadata.configuration if metadata else {}

    def take(self, frame: _Frame) -> int:
        """Merge one frame; the version after its last."""
        columns, metadata, protocol, records, sizes = frame
        from_slots = CommitSummary.from_slots
        later = [from_slots(row) for row in zip(*columns, strict=True)]
        share_version_ints(later, self.log.listing.commit_versions, self.summaries)
        if self.properties is not None:
            first_change = metadata[0][0] if metadata else None
            rederive_isolation(
                (s for s in later if first_change is None or s.version < first_change),
                self.properties,
                self.interner,
            )
            if first_change is not None:
                self.properties = None
        self.log.listing.commit_sizes.update(sizes)
        if self.tap is not None:
            self.tap.replay(records)
        self.metadata_timeline += metadata
        self.protocol_timeline += protocol
        self.summaries += later
        return later[-1].version + 1


def share_version_ints(
    later: list[CommitSummary], versions: list[int], earlier: list[CommitSummary]
) -> None:
    """Point the unpickled summaries' version and read-version ints at objects the history
    holds anyway (the listing's versions; the commit before's version), as the parent's own
    summaries do: an unpickled int is an object of its own (28 B each, ~40 MB at 1M)."""
    if not later:
        return
    at = bisect.bisect_left(versions, later[0].version)
    previous = earlier[-1].version if earlier else None
    for offset, summary in enumerate(later, at):
        if offset < len(versions) and versions[offset] == summary.version:
            summary.version = versions[offset]
        if previous is not None and summary.read_version == previous:
            summary.read_version = previous
        previous = summary.version


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
    """Summarise start..end a frame at a time; each frame is pickled as soon as it is done
    and its objects dropped, and a thread writes the frames out as the parent reads them.

    A failure stops the frames there: the parent does the rest itself and meets the error.
    """
    status = 1
    frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    writer = threading.Thread(target=_write_frames, args=(frames, write_fd), daemon=True)
    writer.start()
    try:
        interner = Interner(share_dicts=True)
        metadata: MetadataTimeline = []
        protocol: ProtocolTimeline = []
        for lo in range(start, end + 1, FRAME_COMMITS):
            hi = min(lo + FRAME_COMMITS - 1, end)
            frames.put(_frame(log, lo, hi, metadata, protocol, interner, integrity))
        status = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent redoes from here
        pass
    finally:
        frames.put(None)
        writer.join()
        # Leave at once: no atexit handlers, no flushing of stdio buffers copied from the parent.
        os._exit(status)


def _frame(
    log: DeltaLog,
    lo: int,
    hi: int,
    metadata: MetadataTimeline,
    protocol: ProtocolTimeline,
    interner: Interner,
    integrity: bool,
) -> bytes:
    """Versions lo..hi summarised and pickled: their summaries as columns (a list per field
    pickles and unpickles several times faster than a tuple per commit), the configuration
    changes among them, their integrity records and file sizes."""
    records: list[IntegrityRecord] = []

    def record(commit: Commit, adds: list[FileRef], removes: list[FileRef]) -> None:
        records.append(integrity_record(commit, adds, removes))

    known = len(metadata), len(protocol)
    summaries = summarize_log(
        log, lo, hi, metadata, protocol, interner, sink=record if integrity else None
    )
    sizes = log.listing.commit_sizes
    frame: _Frame = (
        list(zip(*map(_as_row, summaries), strict=True)),
        metadata[known[0] :],
        protocol[known[1] :],
        records,
        {v: sizes[v] for v in range(lo, hi + 1) if v in sizes},
    )
    return pickle.dumps(frame, pickle.HIGHEST_PROTOCOL)


def _write_frames(frames: queue.SimpleQueue[bytes | None], write_fd: int) -> None:
    with contextlib.suppress(OSError), os.fdopen(write_fd, "wb") as pipe:
        while (payload := frames.get()) is not None:
            pipe.write(payload)
            pipe.flush()
            del payload  # the frame's bytes are not kept once written


def _receive(pid: int, read_fd: int, merge: _Merge, received: int) -> int:
    """Merge the child's frames, from version `received` on, as they arrive; the first
    version not received."""
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            while True:
                try:
                    frame = pickle.load(pipe)
                except Exception:  # noqa: BLE001 - the end, or a frame cut short by a dying child
                    break
                received = merge.take(frame)
    finally:
        _reap(pid, kill=True)  # done with it either way (it exits by itself once it has sent all)
    return received


def _reap(pid: int, *, kill: bool = False) -> int:
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)
