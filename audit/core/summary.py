"""Commit summaries: what each commit did, which facts the log recorded and which we derived.

`load_history(uri)` reads a table's log once and returns a `History`: one `CommitSummary` per
available commit, the table configuration as it changed over time, and the latest state.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from audit.core.log import DeltaLog, apply_commit, open_log
from audit.core.model import (
    Commit,
    CommitSummary,
    Engine,
    Fact,
    LogListing,
    Metadata,
    PartitionKey,
    Predicate,
    Protocol,
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
    index = bisect.bisect_right([v for v, _ in timeline], version) - 1
    return timeline[max(index, 0)][1]


# --------------------------------------------------------------------------- loading


def load_history(uri: str, *, start: int | None = None, end: int | None = None) -> History:
    """Read the log of `uri` and summarise every available commit in [start, end]."""
    log = open_log(uri)
    return history_from_log(log, start=start, end=end)


def history_from_log(log: DeltaLog, *, start: int | None = None, end: int | None = None) -> History:
    listing = log.listing
    first = listing.commit_versions[0] if listing.commit_versions else listing.latest_version
    start = first if start is None else max(start, first)
    if start > first:
        # A window (the tail): the state before it, advanced by the window's own commits, so
        # the log is replayed once.
        state = log.snapshot(start - 1)
        metadata_timeline, protocol_timeline = _initial_timelines(state, start)
        commits = _applied(log.iter_commits(start, end), state)
    else:
        state = log.snapshot(end)
        metadata_timeline, protocol_timeline = [], []
        commits = log.iter_commits(start, end)
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
    for commit in commits:
        if commit.metadata is not None:
            metadata_timeline.append((commit.version, commit.metadata))
        if commit.protocol is not None:
            protocol_timeline.append((commit.version, commit.protocol))
        # The configuration a commit's writer saw is the one before it (it read an earlier
        # version); a commit that sets the property itself is judged by the new value.
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        yield summarize_commit(commit, metadata.configuration if metadata else {})


# --------------------------------------------------------------------------- one commit


def summarize_commit(commit: Commit, properties: dict[str, str] | None = None) -> CommitSummary:
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

    data_adds = [a for a in commit.adds if a.data_change]
    data_removes = [r for r in commit.removes if r.data_change]
    return CommitSummary(
        version=commit.version,
        timestamp=timestamp,
        operation=_as_str(info.get("operation")),
        operation_parameters=parameters,
        operation_metrics=info.get("operationMetrics")
        if isinstance(info.get("operationMetrics"), dict)
        else {},
        read_version=read_version,
        isolation_level=isolation_level,
        blind_append=blind_append,
        facts=facts,
        engine=engine,
        engine_info=_as_str(info.get("engineInfo")),
        txn_id=_as_str(info.get("txnId")),
        user_id=_as_str(info.get("userId")),
        user_name=_as_str(info.get("userName")),
        job=info.get("job") if isinstance(info.get("job"), dict) else None,
        cluster_id=_as_str(info.get("clusterId")),
        files_added=len(data_adds),
        files_removed=len(data_removes),
        bytes_added=sum(a.size or 0 for a in data_adds),
        bytes_removed=sum(r.size or 0 for r in data_removes),
        data_change=bool(data_adds or data_removes),
        added_partitions=_partitions(a.partition_values for a in data_adds),
        removed_partitions=_partitions(r.partition_values for r in data_removes),
        removed_paths=frozenset(r.path for r in data_removes),
        removed_paths_all=frozenset(r.path for r in commit.removes),
        added_paths=frozenset(a.path for a in data_adds),
        predicate=predicate,
        metadata_changed=commit.metadata is not None,
        protocol_changed=commit.protocol is not None,
        app_ids={t.app_id: t.version for t in commit.txns},
        domains=frozenset(d.domain for d in commit.domain_metadata),
        has_deletion_vectors=any(a.deletion_vector for a in commit.adds),
        unknown_actions=tuple(commit.unknown_actions),
    )


def _partitions(values: Iterable[dict[str, str | None] | None]) -> frozenset[PartitionKey]:
    return frozenset(partition_key(v) for v in values)


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
