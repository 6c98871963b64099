"""Contention telemetry per writer, and the `retry_storm` finding.

A writer is who the log says committed (`audit.core.history.writer_identity`): engineInfo,
userName/userId, the job and notebook ids Databricks records, and the `txn` appIds an
idempotent writer (streaming, foreachBatch) declares. From the audited history this module derives, per writer: commits,
operations, how far behind its read version was (the number of commits that landed while it
ran), the retries the writer itself recorded (delta-rs `num_retries`), and per writer pair how
many commits ran concurrently and how many of those Delta's rules call conflicts. Idempotent
`txn` versions that repeat or go backwards are listed: a streaming writer replaying a batch.

Pure: `writer_telemetry(history, result)` over summaries and the audit's per-commit results.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from audit.core import severity as sev
from audit.core.conflicts.audits import has_window
from audit.core.cycles import render_partitions
from audit.core.history.writer_identity import identity_key, identity_of
from audit.core.model import CommitSummary, Finding
from audit.core.numbers import log_int
from audit.core.vocab import FindingKind
from audit.core.wording.writers import retry_storm_text

# Read-version distance buckets: commits that landed between a commit's read and its commit.
DISTANCE_BUCKETS = ((0, "0"), (1, "1"), (4, "2-4"), (9, "5-9"), (99, "10-99"))
DISTANCE_OVER = "100+"
# Concurrent peers visited per commit when tallying writer pairs (bounds hostile readVersions).
MAX_PEERS_PER_COMMIT = 1_000
MAX_TXN_ANOMALIES = 100
MAX_PAIRS = 100


def writer_of(summary: CommitSummary) -> str:
    """The writer of a commit as one string: the one identity the writers view and the
    incident causes use (`audit.core.history.writer_identity`; run and cluster ids are not
    part of it: a job's retries in new runs are still one writer)."""
    return identity_key(identity_of(summary))


def distance_bucket(distance: int) -> str:
    for top, label in DISTANCE_BUCKETS:
        if distance <= top:
            return label
    return DISTANCE_OVER


def _retries(summary: CommitSummary) -> int:
    value = summary.operation_metrics.get(
        "num_retries", summary.operation_metrics.get("numRetries")
    )
    return log_int(value) or 0


@dataclass
class WriterStats:
    writer: str
    engine: str
    commits: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    distance: Counter[str] = field(default_factory=Counter)
    max_distance: int = 0
    recorded_retries: int = 0
    first_version: int | None = None
    last_version: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None

    def add(self, s: CommitSummary, distance: int | None) -> None:
        self.commits += 1
        self.operations[s.operation or "UNKNOWN"] += 1
        if distance is not None:
            self.distance[distance_bucket(distance)] += 1
            self.max_distance = max(self.max_distance, distance)
        else:
            self.distance["unknown"] += 1
        self.recorded_retries += _retries(s)
        if self.first_version is None:
            self.first_version, self.first_timestamp = s.version, s.timestamp
        self.last_version, self.last_timestamp = s.version, s.timestamp

    def as_dict(self) -> dict[str, Any]:
        order = [label for _, label in DISTANCE_BUCKETS] + [DISTANCE_OVER, "unknown"]
        return {
            "writer": self.writer,
            "engine": self.engine,
            "commits": self.commits,
            "operations": dict(self.operations.most_common()),
            "read_version_distance": {k: self.distance[k] for k in order if self.distance[k]},
            "max_read_version_distance": self.max_distance,
            "recorded_retries": self.recorded_retries,
            "first_version": self.first_version,
            "last_version": self.last_version,
            "first_timestamp": self.first_timestamp,
            "last_timestamp": self.last_timestamp,
        }


def writer_telemetry(history: Any, commits: dict[int, Any]) -> dict[str, Any]:
    """Per-writer contention over a history; `commits` is AuditResult.commits (CommitAudit)."""
    names = {s.version: writer_of(s) for s in history.summaries}
    writers: dict[str, WriterStats] = {}
    pairs: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for s in history.summaries:
        name = names[s.version]
        stats = writers.get(name) or writers.setdefault(name, WriterStats(name, s.engine))
        audit = commits.get(s.version)
        read = audit.read_version if audit is not None else s.read_version
        stats.add(s, s.version - read - 1 if read is not None and read < s.version else None)
        if audit is None:
            continue
        conflicts = audit.conflicts
        for w in list(audit.concurrent_versions)[:MAX_PEERS_PER_COMMIT]:
            peer = names.get(w)
            if peer is None:
                continue
            tally = pairs[(peer, name)]
            tally[0] += 1
            tally[1] += 1 if w in conflicts else 0
    pair_rows = [
        {"earlier": a, "later": b, "concurrent_commits": n, "conflicting_commits": c}
        for (a, b), (n, c) in sorted(pairs.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ][:MAX_PAIRS]
    return {
        "writers": [w.as_dict() for w in sorted(writers.values(), key=lambda w: -w.commits)],
        "pairs": pair_rows,
        "txn_anomalies": txn_anomalies(history.summaries),
    }


def txn_anomalies(summaries: Iterable[CommitSummary]) -> list[dict[str, Any]]:
    """Idempotent `txn` versions that repeat or go backwards, per appId."""
    last: dict[str, tuple[int, int]] = {}  # appId -> (txn version, commit version)
    out: list[dict[str, Any]] = []
    for s in summaries:
        for app_id, txn_version in s.app_ids.items():
            prev = last.get(app_id)
            if prev is not None and txn_version <= prev[0] and len(out) < MAX_TXN_ANOMALIES:
                out.append(
                    {
                        "app_id": app_id,
                        "kind": "repeat" if txn_version == prev[0] else "backwards",
                        "txn_version": txn_version,
                        "previous_txn_version": prev[0],
                        "version": s.version,
                        "previous_version": prev[1],
                    }
                )
            last[app_id] = (txn_version, s.version)
    return out


# --------------------------------------------------------------------------- retry storms

# One writer, this many reading commits (not blind appends) of one operation on the same
# partitions within RETRY_STORM_WINDOW_MS, most of them racing other commits or recording
# retries: the shape of a job whose attempts keep losing conflicts and running again.
RETRY_STORM_MIN_COMMITS = 3
RETRY_STORM_WINDOW_MS = 60_000


def _burst_key(s: CommitSummary) -> tuple[str, str, frozenset] | None:
    if s.blind_append or s.timestamp is None or not s.data_change:
        return None
    return (writer_of(s), s.operation or "UNKNOWN", s.partitions_touched)


class StormMember(NamedTuple):
    """What the retry-storm rule reads of one commit (a split history's ranges send these)."""

    version: int
    timestamp: int
    retries: int
    contended: bool


StormKey = tuple[str, str, frozenset]


def storm_members(
    summaries: Iterable[CommitSummary], commits: dict[int, Any]
) -> dict[StormKey, list[StormMember]]:
    """The commits that may form a storm, per (writer, operation, partitions), in version order."""
    groups: dict[StormKey, list[StormMember]] = defaultdict(list)
    for s in summaries:
        key = _burst_key(s)
        if key is not None:
            retries = _retries(s)
            contended = retries > 0 or has_window(commits, s.version)
            groups[key].append(StormMember(s.version, s.timestamp, retries, contended))
    return groups


def retry_storm_findings(history: Any, commits: dict[int, Any]) -> list[Finding]:
    return storm_findings(storm_members(history.summaries, commits))


def storm_findings(groups: dict[StormKey, list[StormMember]]) -> list[Finding]:
    findings = []
    for key, members in groups.items():
        for burst in _bursts(members):
            contended = [s for s in burst if s.contended]
            if 2 * len(contended) >= len(burst):
                findings.append(_storm_finding(key, burst, contended))
    return findings


def _bursts(members: list[StormMember]) -> Iterable[list[StormMember]]:
    """Maximal runs whose consecutive commits are at most the window apart."""
    run: list[StormMember] = []
    for s in sorted(members, key=lambda m: (m.timestamp, m.version)):
        if run and s.timestamp - run[-1].timestamp > RETRY_STORM_WINDOW_MS:
            if len(run) >= RETRY_STORM_MIN_COMMITS:
                yield run
            run = []
        run.append(s)
    if len(run) >= RETRY_STORM_MIN_COMMITS:
        yield run


def _storm_finding(
    key: StormKey, burst: list[StormMember], contended: list[StormMember]
) -> Finding:
    writer, operation, partitions = key
    where = render_partitions(partitions)
    seconds = (burst[-1].timestamp - burst[0].timestamp) / 1000
    retries = sum(s.retries for s in burst)
    text = retry_storm_text(writer, operation, where, len(burst), seconds, len(contended), retries)
    return text.finding(
        FindingKind.RETRY_STORM,
        sev.retry_storm_severity(),
        burst[0].version,
        [s.version for s in burst[1:]],
        confirmed=retries > 0,
        witness={
            "writer": writer,
            "operation": operation,
            "partitions": where,
            "versions": [s.version for s in burst],
            "seconds": seconds,
            "recorded_retries": retries,
        },
    )
