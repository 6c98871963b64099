"""Reducing a commit file's add and remove actions straight from their parsed JSON.

A summary keeps only counts, sizes, partitions and paths of a commit's files. `parse_commit`
builds an `AddFile` / `RemoveFile` object per action first, which for a whole history is most
of the work of reading it and is thrown away at once. `digest_commit` reduces the action dicts
directly into `FileFacts` and parses the rare actions (metaData, protocol, txn, ...) exactly as
`parse_commit` does.

It only takes the common, well-formed case: anything unusual (a blank line, a line that is not
an object, an action without a path, a file that is not JSON) returns None, and the caller
takes the exact path, `parse_commit`, which raises the error naming the line. Both paths give
equal summaries (tests/core/test_fast_summaries_equal_the_exact_ones.py compares them on every table in tests/data).
"""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import unquote

import orjson

from audit.core.integrity.refs import FileRef
from audit.core.log.actions import _Malformed
from audit.core.log.coerce import _partition_values
from audit.core.log.commits import _SlowPath, load_actions, split_actions
from audit.core.model import (
    EMPTY_SET,
    SHARED_EMPTY_DICT,
    Commit,
    PartitionKey,
    PartitionValues,
    partition_key,
)
from audit.core.numbers import INT64_MAX

# Entries of the shared-dict cache before it starts afresh: the common values (a few facts
# combinations, the parameters of appends) are back after a few commits.
_SHARED_LIMIT = 4096
_EMPTY_DICT = SHARED_EMPTY_DICT  # the summary keeps no copy of it (commit_record.py)
# No paths: one shared list, never written (the summary packs it to None).
_NO_PATHS: list[str] = []
# A remove's FileRef has no stats and no row id.
_NO_STATS = (None, None)
# Equal to no partitionValues: what `_partition` leaves to compare with when its values
# cannot stand for their key.
_UNEQUAL = object()
# tuple.__new__ called directly: a NamedTuple's __new__ is a Python function, and the walk
# below builds one FileRef per action.
_new_tuple = tuple.__new__


class Interner:
    """One shared instance per distinct partition key and partition set across a history.

    Most commits of a partitioned table touch one of a few partitions: sharing the tuples and
    frozensets keeps 100k summaries from holding 100k copies of each.
    """

    __slots__ = ("_keys", "_sets", "_texts", "_dicts", "last_partition")

    def __init__(self, share_dicts: bool = False) -> None:
        self._keys: dict[PartitionKey, PartitionKey] = {}
        self._sets: dict[frozenset[PartitionKey], frozenset[PartitionKey]] = {}
        self._texts: dict[str, str] = {}
        # Shared dicts (facts, decoded operation parameters) only for histories nobody edits in
        # place: the Spark job re-derives facts on its summaries, so its interner shares none.
        self._dicts: dict[Any, Any] | None = {} if share_dicts else None
        # The last partitionValues digested and their key (digest._partition).
        self.last_partition: tuple[Any, PartitionKey] = (_UNEQUAL, ())

    @property
    def shares_dicts(self) -> bool:
        return self._dicts is not None

    def empty_dict(self) -> dict[Any, Any]:
        """An empty dict: one shared instance when dicts are shared (most commits have no txn)."""
        return _EMPTY_DICT if self._dicts is not None else {}

    def cached(self, key: Any) -> Any:
        """What `remember` stored under `key` (None: nothing, or dicts are not shared)."""
        return None if self._dicts is None else self._dicts.get(key)

    def remember(self, key: Any, value: Any) -> Any:
        """Keep `value` for `key` (bounded: a log of unique values must not grow the cache)."""
        shared = self._dicts
        if shared is not None:
            if len(shared) >= _SHARED_LIMIT:
                shared.clear()
            shared[key] = value
        return value

    def text(self, value: str | None) -> str | None:
        """One copy of a repeated string (operation, engineInfo, isolation level)."""
        return value if value is None else self._texts.setdefault(value, value)

    def key(self, values: PartitionValues | None) -> PartitionKey:
        key = partition_key(values)
        return self._keys.setdefault(key, key)

    def partitions(self, keys: set[PartitionKey]) -> frozenset[PartitionKey]:
        if not keys:
            return EMPTY_SET
        frozen = frozenset(keys)
        return self._sets.setdefault(frozen, frozen)


class FileFacts(NamedTuple):
    """What a summary keeps of a commit's add and remove actions."""

    files_added: int  # dataChange adds
    bytes_added: int
    added_partitions: frozenset[PartitionKey]
    added_paths: list[str]  # paths: in action order, packed by the summary
    files_removed: int  # dataChange removes
    bytes_removed: int
    removed_partitions: frozenset[PartitionKey]
    removed_paths: list[str]
    removed_paths_all: list[str]  # every remove, dataChange or not
    compacted_paths: list[str]  # adds without dataChange
    compacted_removed_partitions: frozenset[PartitionKey]  # removes without dataChange
    has_deletion_vectors: bool
    num_adds: int  # every add, dataChange or not
    num_removes: int


def digest_commit(version: int, data: bytes, interner: Interner) -> tuple[Commit, FileFacts] | None:
    """The commit without its add/remove objects, and the facts of its files; None if unusual.

    The returned `Commit` carries everything but `adds` and `removes` (left empty).
    """
    digested = digest_refs(version, data, interner)
    return None if digested is None else digested[:2]


def digest_refs(
    version: int, data: bytes, interner: Interner
) -> tuple[Commit, FileFacts, list[FileRef], list[FileRef]] | None:
    """As `digest_commit`, plus the adds and removes as integrity refs, built on the same pass
    over the actions (the integrity checks read them: one parse, one walk)."""
    try:
        actions = load_actions(data)
    except orjson.JSONDecodeError:
        return None
    if not actions:
        return None
    commit = Commit(version)
    try:
        adds, removes = split_actions(actions, commit, None)
        added = _add_side(adds, interner)
        removed = _remove_side(removes, interner)
    except (_SlowPath, _Malformed):
        return None
    return commit, _facts(added, removed, len(adds), len(removes), interner), added[6], removed[6]


def _facts(
    added: tuple[Any, ...],
    removed: tuple[Any, ...],
    num_adds: int,
    num_removes: int,
    interner: Interner,
) -> FileFacts:
    """The `FileFacts` of what `_add_side` and `_remove_side` gathered."""
    files_added, bytes_added, added_keys, added_paths, compacted, has_dv, _ = added
    files_removed, bytes_removed, removed_keys, removed_paths, kept, kept_keys, _ = removed
    partitions = interner.partitions
    # Paths stay lists in action order: the summary packs them (model.pack_paths).
    if not files_removed:
        removed_paths = _NO_PATHS
    # Built as a plain tuple: the NamedTuple's own __new__ is a Python call per commit.
    return _new_tuple(
        FileFacts,
        (
            files_added,
            bytes_added,
            partitions(added_keys),
            added_paths if files_added else _NO_PATHS,
            files_removed,
            bytes_removed,
            partitions(removed_keys),
            removed_paths,
            # Every remove, dataChange or not: the same list when all of them change data.
            removed_paths if not kept else removed_paths + kept,
            compacted if compacted else _NO_PATHS,
            EMPTY_SET if not kept else partitions(kept_keys),
            has_dv,
            num_adds,
            num_removes,
        ),
    )


def _add_side(adds: list[dict[str, Any]], interner: Interner) -> tuple[Any, ...]:
    """Count, bytes, partitions and paths of the data-changing adds, the paths of the others
    (compaction: dataChange is the boolean false), whether one carries a deletion vector, and
    every add as a FileRef, coerced as integrity_refs.refs_of_actions does (one walk)."""
    count = total = 0
    keys: set[PartitionKey] = set()
    paths: list[str] = []
    compacted: list[str] = []
    refs: list[FileRef] = []
    has_dv = False
    last_values, last_key = interner.last_partition
    for item in adds:
        get = item.get
        path = get("path")
        if type(path) is not str or not path:
            raise _Malformed("add action without a path")
        if "%" in path:  # as _decode_path
            path = unquote(path)
        change, dv, stats, row_id = (
            get("dataChange"),
            get("deletionVector"),
            get("stats"),
            get("baseRowId"),
        )
        if type(dv) is not dict:
            dv = None
        elif dv:
            has_dv = True
        refs.append(
            _new_tuple(
                FileRef,
                (
                    path,
                    change if type(change) is bool else True,
                    dv,
                    stats if type(stats) is str else None,
                    row_id if type(row_id) is int else None,
                ),
            )
        )
        if change is False:
            compacted.append(path)
            continue
        count += 1
        size = get("size")
        if type(size) is int and 0 <= size <= INT64_MAX:
            total += size
        values = get("partitionValues")
        if values != last_values:  # most adds of a commit (and of a log) share one partition
            last_values, last_key = _partition(values, interner)
        keys.add(last_key)
        paths.append(path)
    interner.last_partition = (last_values, last_key)
    return count, total, keys, paths, compacted, has_dv, refs


def _remove_side(removes: list[dict[str, Any]], interner: Interner) -> tuple[Any, ...]:
    """Count, bytes, partitions and paths of the data-changing removes, paths and partitions
    of the others, and every remove as a FileRef (as `_add_side`)."""
    count = total = 0
    keys: set[PartitionKey] = set()
    paths: list[str] = []
    kept: list[str] = []
    kept_keys: set[PartitionKey] = set()
    refs: list[FileRef] = []
    last_values, last_key = interner.last_partition
    for item in removes:
        get = item.get
        path = get("path")
        if type(path) is not str or not path:
            raise _Malformed("remove action without a path")
        if "%" in path:
            path = unquote(path)
        change, dv = get("dataChange"), get("deletionVector")
        refs.append(
            _new_tuple(
                FileRef,
                (path, change if type(change) is bool else True, dv if type(dv) is dict else None)
                + _NO_STATS,
            )
        )
        values = get("partitionValues")
        if values != last_values:
            last_values, last_key = _partition(values, interner)
        if change is False:
            kept.append(path)
            kept_keys.add(last_key)
            continue
        count += 1
        size = get("size")
        if type(size) is int and 0 <= size <= INT64_MAX:
            total += size
        keys.add(last_key)
        paths.append(path)
    interner.last_partition = (last_values, last_key)
    return count, total, keys, paths, kept, kept_keys, refs


def _partition(values: Any, interner: Interner) -> tuple[Any, PartitionKey]:
    """The partition key of an action's partitionValues, and what later actions compare their
    own with to reuse it: the values themselves when they are a well-formed object (all text
    or null: a dict equal to it then has the same key) or null, else a marker equal to nothing."""
    coerced = _partition_values(values)
    key = interner.key(coerced)
    return (values if coerced is values or values is None else _UNEQUAL), key
