"""Commit summaries: what each commit did, which facts the log recorded and which we derived.

`load_history(uri)` reads a table's log once and returns a `History`: one `CommitSummary` per
available commit, the table configuration as it changed over time, and the latest state.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from audit.core.integrity import IntegrityTap
from audit.core.log import DeltaLog, apply_commit, open_log
from audit.core.model import (
    EMPTY_SET,
    AddFile,
    Commit,
    CommitSummary,
    Engine,
    Fact,
    LogListing,
    Metadata,
    PartitionKey,
    Predicate,
    Protocol,
    RemoveFile,
    TableState,
    partition_key,
)
from audit.core.predicates import parse_predicate

ISOLATION_PROPERTY = "delta.isolationLevel"
SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"

# Operations that can be blind appends when they only add files (Spark and delta-rs names).
_APPEND_OPERATIONS = frozenset(
    {
        "WRITE",
        "STREAMING UPDATE",
        "COPY INTO",
        "CREATE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE AS SELECT",
    }
)
# One shared empty set: most commits remove nothing, and an empty frozenset costs 216 bytes.
EMPTY: frozenset[Any] = EMPTY_SET
# Parameters that carry the condition a commit read the table with.
# delta-rs MERGE keeps the join condition in `mergePredicate` (its `predicate` is only the
# partition filter it derived), Spark MERGE in `predicate`: the condition comes first.
_PREDICATE_PARAMETERS = ("mergePredicate", "predicate", "replaceWhere", "condition")


@dataclass
class History:
    """A table's history as the audit needs it. Built by `load_history`."""

    table_uri: str
    listing: LogListing
    state: TableState  # the latest version
    summaries: list[CommitSummary]
    # Versions at which a metaData / protocol action took effect, ascending, with the value.
    metadata_timeline: list[tuple[int, Metadata]] = field(default_factory=list)
    protocol_timeline: list[tuple[int, Protocol]] = field(default_factory=list)
    _by_version: dict[int, CommitSummary] = field(default_factory=dict, repr=False)
    # Log-integrity findings computed while the commits were parsed (None: not computed).
    integrity: list[Any] | None = field(default=None, repr=False, compare=False)
    # The open log, reused by whoever needs to read commits again (the witness); opened lazily
    # for histories rebuilt elsewhere (the Spark path).
    _log: DeltaLog | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_version = {s.version: s for s in self.summaries}

    @property
    def latest_version(self) -> int:
        return self.listing.latest_version

    @property
    def first_available_version(self) -> int:
        return self.listing.first_available_version

    def get_log(self) -> DeltaLog:
        if self._log is None:
            self._log = open_log(self.table_uri)
        return self._log

    def summary(self, version: int) -> CommitSummary | None:
        return self._by_version.get(version)

    def metadata_at(self, version: int) -> Metadata | None:
        return _value_at(self.metadata_timeline, version)

    def protocol_at(self, version: int) -> Protocol | None:
        return _value_at(self.protocol_timeline, version)

    def partition_columns_at(self, version: int) -> list[str]:
        metadata = self.metadata_at(version)
        return list(metadata.partition_columns) if metadata else []

    def properties_at(self, version: int) -> dict[str, str]:
        metadata = self.metadata_at(version)
        return dict(metadata.configuration) if metadata else {}


def _value_at(timeline: list[tuple[int, Any]], version: int) -> Any:
    """The value in force at `version` (the last change at or before it; else the first known)."""
    if not timeline:
        return None
    index = bisect.bisect_right(timeline, version, key=_change_version) - 1
    return timeline[max(index, 0)][1]


def _change_version(change: tuple[int, Any]) -> int:
    return change[0]


# --------------------------------------------------------------------------- loading


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large, long-lived structures.

    Summarising 100k commits allocates millions of containers; each automatic collection
    re-walks the young ones built so far, which more than doubled the time of a large log.
    On the way out the survivors are moved straight to the oldest generation (freeze, then
    unfreeze), so the first collections after the pause do not walk them all again either;
    any cyclic garbage among them is still found by the next full collection.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Only when nobody else froze objects: unfreeze would thaw theirs too.
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_history(uri: str, *, start: int | None = None, end: int | None = None) -> History:
    """Read the log of `uri` and summarise every available commit in [start, end]."""
    with paused_gc():
        log = open_log(uri)
        return history_from_log(log, start=start, end=end)


def history_from_log(log: DeltaLog, *, start: int | None = None, end: int | None = None) -> History:
    with paused_gc():
        return _history_from_log(log, start, end)


def _history_from_log(log: DeltaLog, start: int | None, end: int | None) -> History:
    listing = log.listing
    first = listing.commit_versions[0] if listing.commit_versions else listing.latest_version
    start = first if start is None else max(start, first)
    tap = None
    if start > first:
        # A window (the tail): the state before it, advanced by the window's own commits, so
        # the log is replayed once.
        state = log.snapshot(start - 1)
        metadata_timeline, protocol_timeline = _initial_timelines(state, start)
        commits = _applied(log.iter_commits(start, end), state)
    else:
        state = log.snapshot(end)
        metadata_timeline, protocol_timeline = [], []
        # The whole log: check its integrity on the same parse (audit/core/integrity.py).
        tap = IntegrityTap(log, start)
        commits = tap.observe(log.iter_commits(start, end))
    summaries = list(summarize_commits(commits, metadata_timeline, protocol_timeline))
    if not metadata_timeline and state.metadata is not None:
        metadata_timeline.append((state.version, state.metadata))
    if not protocol_timeline and state.protocol is not None:
        protocol_timeline.append((state.version, state.protocol))
    return History(
        table_uri=log.uri,
        listing=listing,
        state=state,
        summaries=summaries,
        metadata_timeline=metadata_timeline,
        protocol_timeline=protocol_timeline,
        _log=log,
        integrity=tap.findings if tap is not None else None,
    )


def _applied(commits: Iterable[Commit], state: TableState) -> Iterator[Commit]:
    for commit in commits:
        apply_commit(state, commit)
        yield commit


def _initial_timelines(
    state: TableState, start: int
) -> tuple[list[tuple[int, Metadata]], list[tuple[int, Protocol]]]:
    """Seed the config timelines with what was in force before `start`."""
    metadata = [(start - 1, state.metadata)] if state.metadata else []
    protocol = [(start - 1, state.protocol)] if state.protocol else []
    return metadata, protocol


def summarize_commits(
    commits: Iterable[Commit],
    metadata_timeline: list[tuple[int, Metadata]],
    protocol_timeline: list[tuple[int, Protocol]],
) -> Iterator[CommitSummary]:
    """Summarise commits in version order, extending the config timelines as they change."""
    interner = Interner()
    for commit in commits:
        if commit.metadata is not None:
            metadata_timeline.append((commit.version, commit.metadata))
        if commit.protocol is not None:
            protocol_timeline.append((commit.version, commit.protocol))
        # The configuration a commit's writer saw is the one before it (it read an earlier
        # version); a commit that sets the property itself is judged by the new value.
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        yield summarize_commit(commit, metadata.configuration if metadata else {}, interner)


# --------------------------------------------------------------------------- one commit


class Interner:
    """One shared instance per distinct partition key and partition set across a history.

    Most commits of a partitioned table touch one of a few partitions: sharing the tuples and
    frozensets keeps 100k summaries from holding 100k copies of each.
    """

    __slots__ = ("_keys", "_sets", "_texts")

    def __init__(self) -> None:
        self._keys: dict[PartitionKey, PartitionKey] = {}
        self._sets: dict[frozenset[PartitionKey], frozenset[PartitionKey]] = {}
        self._texts: dict[str, str] = {}

    def text(self, value: str | None) -> str | None:
        """One copy of a repeated string (operation, engineInfo, isolation level)."""
        return value if value is None else self._texts.setdefault(value, value)

    def key(self, values: dict[str, str | None] | None) -> PartitionKey:
        key = partition_key(values)
        return self._keys.setdefault(key, key)

    def partitions(self, keys: set[PartitionKey]) -> frozenset[PartitionKey]:
        if not keys:
            return EMPTY
        frozen = frozenset(keys)
        return self._sets.setdefault(frozen, frozen)


def _data_files(
    files: Sequence[AddFile] | Sequence[RemoveFile], interner: Interner
) -> tuple[int, int, frozenset[PartitionKey], frozenset[str]]:
    """Count, bytes, distinct partitions and paths of the data-changing files of `files`."""
    changing = [f for f in files if f.data_change]
    if not changing:
        return 0, 0, EMPTY, EMPTY
    size = 0
    keys: set[PartitionKey] = set()
    for f in changing:
        size += f.size or 0
        keys.add(interner.key(f.partition_values))
    return len(changing), size, interner.partitions(keys), frozenset(f.path for f in changing)


def summarize_commit(
    commit: Commit, properties: dict[str, str] | None = None, interner: Interner | None = None
) -> CommitSummary:
    info = commit.commit_info or {}
    parameters = decode_parameters(info.get("operationParameters"))
    engine = detect_engine(info)
    facts: dict[str, Fact] = {}

    timestamp, facts["timestamp"] = _timestamp(info, commit.file_modification_time)
    read_version = _as_int(info.get("readVersion"))
    facts["read_version"] = "recorded" if read_version is not None else "unknown"

    predicate = _predicate(parameters)
    blind_append = _as_bool(info.get("isBlindAppend"))
    if blind_append is not None:
        facts["blind_append"] = "recorded"
    else:
        blind_append = derive_blind_append(commit, info.get("operation"), parameters, predicate)
        facts["blind_append"] = "derived"

    isolation_level = _as_str(info.get("isolationLevel"))
    if isolation_level is not None:
        facts["isolation_level"] = "recorded"
    else:
        isolation_level = effective_isolation_level(engine, properties or {})
        facts["isolation_level"] = "derived" if isolation_level else "unknown"

    interner = interner or Interner()
    adds, removes = commit.adds, commit.removes
    files_added, bytes_added, added_partitions, added_paths = _data_files(adds, interner)
    files_removed, bytes_removed, removed_partitions, removed_paths = _data_files(removes, interner)
    # Every remove, dataChange or not: the same set when all of them change data.
    removed_paths_all = (
        removed_paths if files_removed == len(removes) else frozenset(r.path for r in removes)
    )
    compacted_paths, compacted_removed_partitions = _compacted_files(
        adds, files_added, removes, files_removed, interner
    )
    metrics, job = info.get("operationMetrics"), info.get("job")
    return CommitSummary(
        version=commit.version,
        timestamp=timestamp,
        operation=interner.text(_as_str(info.get("operation"))),
        operation_parameters=parameters,
        operation_metrics=metrics if isinstance(metrics, dict) else {},
        read_version=read_version,
        isolation_level=interner.text(isolation_level),
        blind_append=blind_append,
        facts=facts,
        engine=engine,
        engine_info=interner.text(_as_str(info.get("engineInfo"))),
        txn_id=_as_str(info.get("txnId")),
        user_id=_as_str(info.get("userId")),
        user_name=_as_str(info.get("userName")),
        job=job if isinstance(job, dict) else None,
        cluster_id=_as_str(info.get("clusterId")),
        files_added=files_added,
        files_removed=files_removed,
        bytes_added=bytes_added,
        bytes_removed=bytes_removed,
        data_change=bool(files_added or files_removed),
        added_partitions=added_partitions,
        removed_partitions=removed_partitions,
        removed_paths=removed_paths,
        removed_paths_all=removed_paths_all,
        added_paths=added_paths,
        predicate=predicate,
        metadata_changed=commit.metadata is not None,
        protocol_changed=commit.protocol is not None,
        app_ids={t.app_id: t.version for t in commit.txns},
        domains=frozenset(d.domain for d in commit.domain_metadata)
        if commit.domain_metadata
        else EMPTY,
        has_deletion_vectors=any(a.deletion_vector for a in adds),
        unknown_actions=tuple(commit.unknown_actions),
        compacted_paths=compacted_paths,
        compacted_removed_partitions=compacted_removed_partitions,
    )


def _compacted_files(
    adds: Sequence[AddFile],
    data_adds: int,
    removes: Sequence[RemoveFile],
    data_removes: int,
    interner: Interner,
) -> tuple[frozenset[str], frozenset[PartitionKey]]:
    """Paths of the adds and partitions of the removes without dataChange (compaction).

    The counts of data-changing files let the common commit (all of them change data) skip
    the second pass.
    """
    paths = (
        EMPTY if data_adds == len(adds) else frozenset(a.path for a in adds if not a.data_change)
    )
    partitions = (
        EMPTY
        if data_removes == len(removes)
        else interner.partitions(
            {interner.key(r.partition_values) for r in removes if not r.data_change}
        )
    )
    return paths, partitions


def decode_parameters(raw: Any) -> dict[str, Any]:
    """operationParameters values are often JSON-encoded strings (`"[\\"p\\"]"`); decode those."""
    if not isinstance(raw, dict):
        return {}
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and value[:1] in ("[", "{"):
            # Not JSON after all (e.g. a predicate starting with "["): keep the text.
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(value)
        decoded[str(key)] = value
    return decoded


def _predicate(parameters: dict[str, Any]) -> Predicate | None:
    for name in _PREDICATE_PARAMETERS:
        value = parameters.get(name)
        if value in (None, "", []):
            continue
        return parse_predicate(value)
    return None


def derive_blind_append(
    commit: Commit, operation: Any, parameters: dict[str, Any], predicate: Predicate | None
) -> bool:
    """A commit of only data-changing adds, in append mode, with no predicate, read nothing."""
    if commit.removes or not commit.adds or predicate is not None:
        return False
    if not all(a.data_change for a in commit.adds):
        return False
    mode = str(parameters.get("mode", "")).lower()
    if mode:
        return mode == "append" or (mode in ("errorifexists", "ignore") and commit.version == 0)
    output_mode = str(parameters.get("outputMode", "")).lower()
    if output_mode:
        return output_mode == "append"
    return str(operation or "").upper() in _APPEND_OPERATIONS


def detect_engine(info: dict[str, Any]) -> Engine:
    engine_info = str(info.get("engineInfo") or "")
    client = str(info.get("clientVersion") or "")
    lowered = f"{engine_info} {client}".lower()
    if "delta-rs" in lowered:
        return "delta-rs"
    if "databricks" in lowered:
        return "databricks"
    if "apache-spark" in lowered or "delta-lake/" in lowered:
        return "spark"
    if engine_info or client:
        return "other"
    # Old Spark versions wrote no engineInfo but always wrote these.
    if "isBlindAppend" in info and (
        "isolationLevel" in info or "readVersion" in info or "clusterId" in info
    ):
        return "spark"
    return "unknown"


def effective_isolation_level(engine: Engine, properties: dict[str, str]) -> str | None:
    """The level a writer of this engine enforces for a table with these properties.

    Spark/Databricks accept `Serializable` and `WriteSerializable` (Databricks defaults to
    WriteSerializable; Delta OSS on Spark writes and enforces Serializable). delta-rs parses only
    the camelCase spellings `serializable` / `writeSerializable` / `snapshotIsolation` and falls
    back to Serializable for anything else, including `WriteSerializable`.
    """
    value = properties.get(ISOLATION_PROPERTY)
    if engine == "delta-rs":
        return {
            "writeSerializable": WRITE_SERIALIZABLE,
            "snapshotIsolation": SNAPSHOT_ISOLATION,
        }.get(value or "", SERIALIZABLE)
    if engine == "databricks":
        return _canonical_level(value) or WRITE_SERIALIZABLE
    if engine == "spark":
        return _canonical_level(value) or SERIALIZABLE
    return _canonical_level(value)


def _canonical_level(value: str | None) -> str | None:
    if not value:
        return None
    return {
        "serializable": SERIALIZABLE,
        "writeserializable": WRITE_SERIALIZABLE,
        "snapshotisolation": SNAPSHOT_ISOLATION,
    }.get(value.strip().lower())


def _timestamp(info: dict[str, Any], file_time: int | None) -> tuple[int | None, Fact]:
    for key in ("inCommitTimestamp", "timestamp"):
        value = _as_int(info.get(key))
        if value is not None:
            return value, "recorded"
    if file_time is not None:
        return file_time, "derived"
    return None, "unknown"


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)
