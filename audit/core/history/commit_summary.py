"""One commit's summary: what it did, which facts the log recorded and which we derived.

`summarize_digest` turns a commit whose add/remove actions were reduced to `FileFacts`
(digest.py, straight from the JSON; or `file_facts_of`, from parsed file objects) into a
`CommitSummary`. The rules that fill what a log leaves out live here too: the engine from
`engineInfo`, the isolation level an engine enforces for the table's properties, whether a
commit was a blind append. `summary.py` runs them over a whole history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from audit.core.history.digest import FileFacts, Interner
from audit.core.history.provenance import DEFINED_KEYS, commit_extra, commit_times, share_key
from audit.core.model import (
    EMPTY_SET,
    SUMMARY_FIELDS,
    AddFile,
    Commit,
    CommitSummary,
    PartitionKey,
    Predicate,
    RemoveFile,
    pack_parameters,
)
from audit.core.numbers import INT64_MAX, INT64_MIN, log_int, log_version
from audit.core.predicates import parse_predicate
from audit.core.vocab import Engine, IsolationLevel, Operation, ReadVersionFact

ISOLATION_PROPERTY = "delta.isolationLevel"
SERIALIZABLE = IsolationLevel.SERIALIZABLE
WRITE_SERIALIZABLE = IsolationLevel.WRITE_SERIALIZABLE
SNAPSHOT_ISOLATION = IsolationLevel.SNAPSHOT_ISOLATION

# Operations that can be blind appends when they only add files (Spark and delta-rs names).
_APPEND_OPERATIONS = frozenset(
    {
        Operation.WRITE,
        Operation.STREAMING_UPDATE,
        Operation.COPY_INTO,
        Operation.CREATE_TABLE_AS_SELECT,
        Operation.CREATE_OR_REPLACE_TABLE_AS_SELECT,
    }
)
# Members bound once for the per-commit code: in Python 3.11 reading
# `ReadVersionFact.RECORDED` goes through the enum metaclass (~160 ns, 15 times a global),
# and a summary reads several.
_RECORDED, _DERIVED, _UNKNOWN = (
    ReadVersionFact.RECORDED,
    ReadVersionFact.DERIVED,
    ReadVersionFact.UNKNOWN,
)
_SPARK, _DATABRICKS, _DELTA_RS = Engine.SPARK, Engine.DATABRICKS, Engine.DELTA_RS
_OTHER_ENGINE, _UNKNOWN_ENGINE = Engine.OTHER, Engine.UNKNOWN
# One shared empty set: most commits remove nothing, and an empty frozenset costs 216 bytes.
EMPTY: frozenset[Any] = EMPTY_SET
# Marks the facts entries of the interner's shared dicts (other keys are tuples of pairs).
_FACTS = "facts"
# Parameters that carry the condition a commit read the table with.
# delta-rs MERGE keeps the join condition in `mergePredicate` (its `predicate` is only the
# partition filter it derived), Spark MERGE in `predicate`: the condition comes first.
_PREDICATE_PARAMETERS = ("mergePredicate", "predicate", "replaceWhere", "condition")

# commitInfo keys that give a commit no provenance: the defined ones but those commit_extra
# keeps (client version, user metadata, notebook, job, tags) and the in-commit timestamp.
_NO_PROVENANCE_KEYS = DEFINED_KEYS - {
    "clientVersion",
    "userMetadata",
    "notebook",
    "job",
    "tags",
    "inCommitTimestamp",
}
# detect_engine's answers by (engineInfo, clientVersion) when those are text or absent and
# name a writer: a log repeats a few of them. Bounded, as the interner's shared dicts.
_ENGINES: dict[tuple[str | None, str | None], Engine] = {}
_ENGINES_LIMIT = 4096

# summarize_digest passes the fields positionally, in SUMMARY_FIELDS order (a call naming 36
# keywords costs several times the positional one, and this runs once per commit).
if SUMMARY_FIELDS[-1] != "provenance" or len(SUMMARY_FIELDS) != 36:
    raise ImportError("CommitSummary fields changed: update summarize_digest's call")


def _data_files(
    files: Sequence[AddFile] | Sequence[RemoveFile], interner: Interner
) -> tuple[int, int, frozenset[PartitionKey], list[str]]:
    """Count, bytes, distinct partitions and paths (in action order: the summary packs them,
    see model.pack_paths) of the data-changing files of `files`."""
    changing = [f for f in files if f.data_change]
    if not changing:
        return 0, 0, EMPTY, []
    size = 0
    keys: set[PartitionKey] = set()
    for f in changing:
        size += f.size or 0
        keys.add(interner.key(f.partition_values))
    return len(changing), size, interner.partitions(keys), [f.path for f in changing]


def file_facts_of(commit: Commit, interner: Interner) -> FileFacts:
    """The `FileFacts` of a parsed commit (digest.file_facts does this from the raw dicts)."""
    adds, removes = commit.adds, commit.removes
    files_added, bytes_added, added_partitions, added_paths = _data_files(adds, interner)
    files_removed, bytes_removed, removed_partitions, removed_paths = _data_files(removes, interner)
    # Every remove, dataChange or not: the same set when all of them change data.
    removed_paths_all = (
        removed_paths if files_removed == len(removes) else [r.path for r in removes]
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
    commit: Commit, files: FileFacts, properties: dict[str, str] | None, interner: Interner
) -> CommitSummary:
    """The summary of `commit` whose adds and removes were reduced to `files` (not read)."""
    info = commit.commit_info or {}
    parameters, predicate, shared = _parameters(info.get("operationParameters"), interner)
    engine = detect_engine(info)
    timestamp, timestamp_fact = _timestamp(info, commit.file_modification_time)
    read_version = log_version(info.get("readVersion"))  # -7 reads as unknown
    blind_append, blind_append_fact = _blind_append(
        commit.version, info, files, parameters, predicate
    )
    isolation_level, isolation_fact = _isolation_level(info, engine, properties)
    read_version_fact = _RECORDED if read_version is not None else _UNKNOWN
    facts = _facts(timestamp_fact, read_version_fact, blind_append_fact, isolation_fact, interner)
    metrics, job = info.get("operationMetrics"), info.get("job")
    domains, txns = commit.domain_metadata, commit.txns
    # Positional, in _SUMMARY_FIELDS order: a call naming 38 keywords costs several times the
    # positional one, and this runs once per commit.
    return CommitSummary(
        commit.version,  # version
        timestamp,  # timestamp
        interner.text(_as_str(info.get("operation"))),  # operation
        parameters if shared else pack_parameters(parameters),  # operation_parameters
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
        {t.app_id: t.version for t in txns} if txns else interner.empty_dict(),  # app_ids
        frozenset(d.domain for d in domains) if domains else EMPTY,  # domains
        files.has_deletion_vectors,  # has_deletion_vectors
        tuple(commit.unknown_actions),  # unknown_actions
        files.compacted_paths,  # compacted_paths
        files.compacted_removed_partitions,  # compacted_removed_partitions
        _provenance(info, commit.file_modification_time, interner),  # provenance
    )


def _provenance(
    info: dict[str, Any], file_time: int | None, interner: Interner
) -> dict[str, Any] | None:
    """What the commit says of who wrote it beyond the summary's fields; one shared dict per
    distinct set of values (a writer repeats its client version on every commit). The times
    of a commit are its own: they join a copy, never the shared dict."""
    if info.keys() <= _NO_PROVENANCE_KEYS:
        return None  # most commits: commit_extra and commit_times would find nothing
    extra = commit_extra(info)
    key = share_key(extra)
    if key is not None:
        cached = interner.cached(key)
        extra = cached if cached is not None else interner.remember(key, extra)
    times = commit_times(info, file_time)
    return extra if times is None else {**(extra or {}), **times}


def _parameters(raw: Any, interner: Interner) -> tuple[dict[str, Any], Predicate | None, bool]:
    """The decoded operationParameters, the predicate they carry, and whether the dict is
    one an earlier commit had (shared: the summary keeps it; else it keeps its text).

    Most commits of a log repeat a few parameter sets (an append's mode and partitionBy):
    those are decoded and parsed once and shared when the interner shares dicts. Only
    all-text parameters are cached by their items: `True == 1` would mix up other values.
    """
    key = None
    if type(raw) is dict and interner.shares_dicts:
        for value in raw.values():
            if type(value) is not str:
                break
        else:
            key = tuple(raw.items())
            cached = interner.cached(key)
            if cached is not None:
                return (*cached, True)
    parameters = decode_parameters(raw)
    result = parameters, _predicate(parameters)
    if key is not None:
        interner.remember(key, result)
    return (*result, False)


def _facts(
    timestamp: ReadVersionFact,
    read_version: ReadVersionFact,
    blind_append: ReadVersionFact,
    isolation: ReadVersionFact,
    interner: Interner,
) -> dict[str, ReadVersionFact]:
    """How a summary's facts were obtained: one of a handful of dicts, shared when allowed."""
    key = (_FACTS, timestamp, read_version, blind_append, isolation)
    cached = interner.cached(key)
    if cached is not None:
        return cached
    facts = {
        "timestamp": timestamp,
        "read_version": read_version,
        "blind_append": blind_append,
        "isolation_level": isolation,
    }
    return interner.remember(key, facts)


def _blind_append(
    version: int,
    info: dict[str, Any],
    files: FileFacts,
    parameters: dict[str, Any],
    predicate: Predicate | None,
) -> tuple[bool, ReadVersionFact]:
    """commitInfo.isBlindAppend when recorded, else derived from what the commit did."""
    recorded = _as_bool(info.get("isBlindAppend"))
    if recorded is not None:
        return recorded, _RECORDED
    derived = _derive_blind_append(version, files, info.get("operation"), parameters, predicate)
    return derived, _DERIVED


def _isolation_level(
    info: dict[str, Any], engine: Engine, properties: dict[str, str] | None
) -> tuple[str | None, ReadVersionFact]:
    """commitInfo.isolationLevel when recorded, else the level the engine enforces."""
    recorded = _as_str(info.get("isolationLevel"))
    if recorded is not None:
        return recorded, _RECORDED
    level = effective_isolation_level(engine, properties or {})
    return level, _DERIVED if level else _UNKNOWN


def _compacted_files(
    adds: Sequence[AddFile],
    data_adds: int,
    removes: Sequence[RemoveFile],
    data_removes: int,
    interner: Interner,
) -> tuple[list[str], frozenset[PartitionKey]]:
    """Paths (in action order) of the adds and partitions of the removes without dataChange (compaction).

    The counts of data-changing files let the common commit (all of them change data) skip
    the second pass.
    """
    paths = [] if data_adds == len(adds) else [a.path for a in adds if not a.data_change]
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
            # try/except, not contextlib.suppress: a context manager per value costs more.
            try:  # noqa: SIM105
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                pass  # not JSON after all (e.g. a predicate starting with "["): keep the text
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
    raw = info.get("engineInfo"), info.get("clientVersion")
    # Neither set: the answer depends on other keys, not cached.
    cacheable = (raw[0] or raw[1]) and _hashable_texts(raw)
    if cacheable:
        cached = _ENGINES.get(raw)
        if cached is not None:
            return cached
    engine = _detect_engine(info)
    if cacheable:
        if len(_ENGINES) >= _ENGINES_LIMIT:
            _ENGINES.clear()
        _ENGINES[raw] = engine
    return engine


def _hashable_texts(values: tuple[Any, Any]) -> bool:
    first, second = values
    return (first is None or type(first) is str) and (second is None or type(second) is str)


def _detect_engine(info: dict[str, Any]) -> Engine:
    engine_info = str(info.get("engineInfo") or "")
    client = str(info.get("clientVersion") or "")
    lowered = f"{engine_info} {client}".lower()
    if "delta-rs" in lowered:
        return _DELTA_RS
    if "databricks" in lowered:
        return _DATABRICKS
    if "apache-spark" in lowered or "delta-lake/" in lowered:
        return _SPARK
    if engine_info or client:
        return _OTHER_ENGINE
    # Old Spark versions wrote no engineInfo but always wrote these.
    if "isBlindAppend" in info and (
        "isolationLevel" in info or "readVersion" in info or "clusterId" in info
    ):
        return _SPARK
    return _UNKNOWN_ENGINE


def effective_isolation_level(engine: Engine, properties: dict[str, str]) -> str | None:
    """The level a writer of this engine enforces for a table with these properties.

    Spark/Databricks accept `Serializable` and `WriteSerializable` (Databricks defaults to
    WriteSerializable; Delta OSS on Spark writes and enforces Serializable). delta-rs parses only
    the camelCase spellings `serializable` / `writeSerializable` / `snapshotIsolation` and falls
    back to Serializable for anything else, including `WriteSerializable`.
    """
    value = properties.get(ISOLATION_PROPERTY)
    if engine == _DELTA_RS:
        return {
            "writeSerializable": WRITE_SERIALIZABLE,
            "snapshotIsolation": SNAPSHOT_ISOLATION,
        }.get(value or "", SERIALIZABLE)
    if engine == _DATABRICKS:
        return _canonical_level(value) or WRITE_SERIALIZABLE
    if engine == _SPARK:
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


def _timestamp(info: dict[str, Any], file_time: int | None) -> tuple[int | None, ReadVersionFact]:
    value = info.get("timestamp")
    # The common commit first: no in-commit timestamp, a JSON int (as log_int takes it).
    if type(value) is int and INT64_MIN <= value <= INT64_MAX and "inCommitTimestamp" not in info:
        return value, _RECORDED
    for key in ("inCommitTimestamp", "timestamp"):
        value = _as_int(info.get(key))
        if value is not None:
            return value, _RECORDED
    if file_time is not None:
        return file_time, _DERIVED
    return None, _UNKNOWN


def _as_int(value: Any) -> int | None:
    # Signed: timestamps before 1970 and a readVersion of -1 are written by some writers.
    return log_int(value, signed=True)


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _as_str(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    return value if isinstance(value, str) else str(value)
