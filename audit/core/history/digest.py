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

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from audit.core.integrity.refs import FileRef
from audit.core.log.actions import _file_path, _Malformed
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


class Interner:
    """One shared instance per distinct partition key and partition set across a history.

    Most commits of a partitioned table touch one of a few partitions: sharing the tuples and
    frozensets keeps 100k summaries from holding 100k copies of each.
    """

    __slots__ = ("_keys", "_sets", "_texts", "_dicts")

    def __init__(self, share_dicts: bool = False) -> None:
        self._keys: dict[PartitionKey, PartitionKey] = {}
        self._sets: dict[frozenset[PartitionKey], frozenset[PartitionKey]] = {}
        self._texts: dict[str, str] = {}
        # Shared dicts (facts, decoded operation parameters) only for histories nobody edits in
        # place: the Spark job re-derives facts on its summaries, so its interner shares none.
        self._dicts: dict[Any, Any] | None = {} if share_dicts else None

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
    commit = Commit(version=version)
    add_refs: list[FileRef] = []
    remove_refs: list[FileRef] = []
    try:
        adds, removes = split_actions(actions, commit, None)
        files = file_facts(adds, removes, interner, (add_refs, remove_refs))
        return commit, files, add_refs, remove_refs
    except (_SlowPath, _Malformed):
        return None


def file_facts(
    adds: list[dict[str, Any]],
    removes: list[dict[str, Any]],
    interner: Interner,
    refs: tuple[list[FileRef], list[FileRef]] | None = None,
) -> FileFacts:
    """Reduce add/remove action dicts as summary._data_files does their objects.

    Sets are filled in action order, as there, so they iterate in the same order too.
    `refs`, when given, receives each add and remove as a `FileRef` (integrity_refs).
    """
    key = interner.key
    add_refs, remove_refs = refs if refs is not None else (None, None)
    files_added, bytes_added, added_keys, added, compacted, _ = _file_side(
        adds, "add", key, add_refs
    )
    files_removed, bytes_removed, removed_keys, removed, kept, compacted_keys = _file_side(
        removes, "remove", key, remove_refs
    )
    # Paths stay lists in action order: the summary packs them (model.pack_paths).
    removed_paths = removed if files_removed else _NO_PATHS
    every_remove_changes = not kept
    has_dv = False
    for action in adds:
        dv = action.get("deletionVector")
        if type(dv) is dict and dv:
            has_dv = True
            break
    return FileFacts(
        files_added,
        bytes_added,
        interner.partitions(added_keys),
        added if files_added else _NO_PATHS,
        files_removed,
        bytes_removed,
        interner.partitions(removed_keys),
        removed_paths,
        # Every remove, dataChange or not: the same set when all of them change data.
        removed_paths if every_remove_changes else removed + kept,
        compacted if compacted else _NO_PATHS,
        EMPTY_SET if every_remove_changes else interner.partitions(compacted_keys),
        has_dv,
        len(adds),
        len(removes),
    )


def _file_side(
    actions: list[dict[str, Any]],
    action: str,
    key: Callable[[PartitionValues], PartitionKey],
    refs: list[FileRef] | None = None,
) -> tuple[int, int, set[PartitionKey], list[str], list[str], set[PartitionKey]]:
    """Count, bytes, partitions and paths of the data-changing `actions`; paths and
    partitions of the others (compaction: dataChange is the boolean false). Each action
    also goes to `refs` as a FileRef, coerced as integrity_refs.refs_of_actions does."""
    count = total = 0
    keys: set[PartitionKey] = set()
    paths: list[str] = []
    other_paths: list[str] = []
    other_keys: set[PartitionKey] = set()
    is_add = action == "add"
    for item in actions:
        path = _file_path(item, action)
        change = item.get("dataChange")
        if refs is not None:
            dv = item.get("deletionVector")
            if is_add:
                stats, row_id = item.get("stats"), item.get("baseRowId")
                refs.append(
                    FileRef(
                        path,
                        change if type(change) is bool else True,
                        dv if type(dv) is dict else None,
                        stats if type(stats) is str else None,
                        row_id if type(row_id) is int else None,
                    )
                )
            else:
                refs.append(
                    FileRef(
                        path,
                        change if type(change) is bool else True,
                        dv if type(dv) is dict else None,
                        None,
                        None,
                    )
                )
        if change is False:
            other_paths.append(path)
            other_keys.add(key(_partition_values(item.get("partitionValues"))))
            continue
        count += 1
        size = item.get("size")
        if type(size) is int and 0 <= size <= INT64_MAX:
            total += size
        keys.add(key(_partition_values(item.get("partitionValues"))))
        paths.append(path)
    return count, total, keys, paths, other_paths, other_keys
