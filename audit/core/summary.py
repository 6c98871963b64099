"""Commit summaries: what each commit did, which facts the log recorded and which we derived.

`load_history(uri)` reads a table's log once and returns a `History`: one `CommitSummary` per
available commit, the table configuration as it changed over time, and the latest state.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from audit.core.digest import FileFacts, Interner, digest_commit
from audit.core.log import (
    DeltaLog,
    apply_commit,
    iter_commit_files,
    open_log,
    parse_commit,
    set_file_time,
)
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

# The fields summarize_digest passes positionally, in order. Checked at import so a field added
# to CommitSummary anywhere but the end fails loudly instead of shifting values.
_SUMMARY_FIELDS = (
    "version",
    "timestamp",
    "operation",
    "operation_parameters",
    "operation_metrics",
    "read_version",
    "isolation_level",
    "blind_append",
    "facts",
    "engine",
    "engine_info",
    "txn_id",
    "user_id",
    "user_name",
    "job",
    "cluster_id",
    "files_added",
    "files_removed",
    "bytes_added",
    "bytes_removed",
    "data_change",
    "added_partitions",
    "removed_partitions",
    "removed_paths",
    "removed_paths_all",
    "added_paths",
    "predicate",
    "metadata_changed",
    "protocol_changed",
    "app_ids",
    "domains",
    "has_deletion_vectors",
    "unknown_actions",
    "compacted_paths",
    "compacted_removed_partitions",
)
if tuple(f.name for f in fields(CommitSummary))[: len(_SUMMARY_FIELDS)] != _SUMMARY_FIELDS:
    raise ImportError("CommitSummary fields changed: update summary._SUMMARY_FIELDS and the call")


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


def load_history(
    uri: str, *, start: int | None = None, end: int | None = None, parallel: bool = False
) -> History:
    """Read the log of `uri` and summarise every available commit in [start, end].

    `parallel` lets a whole history be summarised on two processes (see parallel.py): for
    one-shot commands, not for long-running servers and workers that should not fork.
    """
    with paused_gc():
        log = open_log(uri)
        return history_from_log(log, start=start, end=end, parallel=parallel)


def history_from_log(
    log: DeltaLog, *, start: int | None = None, end: int | None = None, parallel: bool = False
) -> History:
    with paused_gc():
        return _history_from_log(log, start, end, parallel)


def _history_from_log(
    log: DeltaLog, start: int | None, end: int | None, parallel: bool = False
) -> History:
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
        commits = None
    if commits is None and parallel:
        from audit.core.parallel import summarize_log_parallel  # it builds on this module

        summaries = summarize_log_parallel(log, start, end, metadata_timeline, protocol_timeline)
    elif commits is None:  # the whole history: straight from the files (see digest.py)
        summaries = summarize_log(log, start, end, metadata_timeline, protocol_timeline)
    else:
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


def summarize_log(
    log: DeltaLog,
    start: int | None,
    end: int | None,
    metadata_timeline: list[tuple[int, Metadata]],
    protocol_timeline: list[tuple[int, Protocol]],
    interner: Interner | None = None,
) -> list[CommitSummary]:
    """`summarize_commits` over the commit files start..end, without building file objects.

    Each file goes through `digest_commit`; the rare one it declines is parsed exactly by
    `parse_commit`, which also raises the error naming a malformed line.
    """
    store, listing = log.store, log.listing
    interner = interner or Interner()
    summaries: list[CommitSummary] = []
    append = summaries.append
    for version, data in iter_commit_files(store, listing, start, end):
        digested = digest_commit(version, data, interner)
        if digested is None:
            commit = parse_commit(version, data)
            files = file_facts_of(commit, interner)
        else:
            commit, files = digested
        set_file_time(store, commit, listing)
        if commit.metadata is not None:
            metadata_timeline.append((version, commit.metadata))
        if commit.protocol is not None:
            protocol_timeline.append((version, commit.protocol))
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        append(
            summarize_digest(commit, files, metadata.configuration if metadata else {}, interner)
        )
    return summaries


def rederive_isolation(
    summaries: Iterable[CommitSummary], properties: dict[str, str], interner: Interner
) -> None:
    """Re-derive the isolation level of summaries built without the table's properties.

    For summaries made before the configuration in force was known (a range summarised apart
    from the commits before it): the same rule `summarize_digest` applies.
    """
    for summary in summaries:
        if summary.facts["isolation_level"] != "recorded":
            level = effective_isolation_level(summary.engine, properties)
            summary.isolation_level = interner.text(level)
            summary.facts["isolation_level"] = "derived" if level else "unknown"


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


def file_facts_of(commit: Commit, interner: Interner) -> FileFacts:
    """The `FileFacts` of a parsed commit (digest.file_facts does this from the raw dicts)."""
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
    return FileFacts(
        files_added,
        bytes_added,
        added_partitions,
        added_paths,
        files_removed,
        bytes_removed,
        removed_partitions,
        removed_paths,
        removed_paths_all,
        compacted_paths,
        compacted_removed_partitions,
        any(a.deletion_vector for a in adds),
        len(adds),
        len(removes),
    )


def summarize_commit(
    commit: Commit, properties: dict[str, str] | None = None, interner: Interner | None = None
) -> CommitSummary:
    interner = interner or Interner()
    return summarize_digest(commit, file_facts_of(commit, interner), properties, interner)


def summarize_digest(
    commit: Commit,
    files: FileFacts,
    properties: dict[str, str] | None,
    interner: Interner,
) -> CommitSummary:
    """The summary of `commit` whose add/remove actions were reduced to `files`.

    `commit.adds` and `commit.removes` are not read (digest_commit leaves them empty).
    """
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
        blind_append = _derive_blind_append(
            commit.version, files, info.get("operation"), parameters, predicate
        )
        facts["blind_append"] = "derived"

    isolation_level = _as_str(info.get("isolationLevel"))
    if isolation_level is not None:
        facts["isolation_level"] = "recorded"
    else:
        isolation_level = effective_isolation_level(engine, properties or {})
        facts["isolation_level"] = "derived" if isolation_level else "unknown"

    metrics, job = info.get("operationMetrics"), info.get("job")
    # Positional, in _SUMMARY_FIELDS order: a call naming 38 keywords costs several times the
    # positional one, and this runs once per commit.
    return CommitSummary(
        commit.version,  # version
        timestamp,  # timestamp
        interner.text(_as_str(info.get("operation"))),  # operation
        parameters,  # operation_parameters
        metrics if isinstance(metrics, dict) else {},  # operation_metrics
        read_version,  # read_version
        interner.text(isolation_level),  # isolation_level
        blind_append,  # blind_append
        facts,  # facts
        engine,  # engine
        interner.text(_as_str(info.get("engineInfo"))),  # engine_info
        _as_str(info.get("txnId")),  # txn_id
        _as_str(info.get("userId")),  # user_id
        _as_str(info.get("userName")),  # user_name
        job if isinstance(job, dict) else None,  # job
        _as_str(info.get("clusterId")),  # cluster_id
        files.files_added,  # files_added
        files.files_removed,  # files_removed
        files.bytes_added,  # bytes_added
        files.bytes_removed,  # bytes_removed
        bool(files.files_added or files.files_removed),  # data_change
        files.added_partitions,  # added_partitions
        files.removed_partitions,  # removed_partitions
        files.removed_paths,  # removed_paths
        files.removed_paths_all,  # removed_paths_all
        files.added_paths,  # added_paths
        predicate,  # predicate
        commit.metadata is not None,  # metadata_changed
        commit.protocol is not None,  # protocol_changed
        {t.app_id: t.version for t in commit.txns},  # app_ids
        frozenset(d.domain for d in commit.domain_metadata)  # domains
        if commit.domain_metadata
        else EMPTY,
        files.has_deletion_vectors,  # has_deletion_vectors
        tuple(commit.unknown_actions),  # unknown_actions
        files.compacted_paths,  # compacted_paths
        files.compacted_removed_partitions,  # compacted_removed_partitions
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
    return _derive_blind_append(
        commit.version, file_facts_of(commit, Interner()), operation, parameters, predicate
    )


def _derive_blind_append(
    version: int,
    files: FileFacts,
    operation: Any,
    parameters: dict[str, Any],
    predicate: Predicate | None,
) -> bool:
    if files.num_removes or not files.num_adds or predicate is not None:
        return False
    if files.files_added != files.num_adds:  # an add without dataChange
        return False
    mode = str(parameters.get("mode", "")).lower()
    if mode:
        return mode == "append" or (mode in ("errorifexists", "ignore") and version == 0)
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
