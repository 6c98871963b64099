"""Reducing a commit file's add and remove actions straight from their parsed JSON.

A summary keeps only counts, sizes, partitions and paths of a commit's files. `parse_commit`
builds an `AddFile` / `RemoveFile` object per action first, which for a whole history is most
of the work of reading it and is thrown away at once. `digest_commit` reduces the action dicts
directly into `FileFacts` and parses the rare actions (metaData, protocol, txn, ...) exactly as
`parse_commit` does.

It only takes the common, well-formed case: anything unusual (a blank line, a line that is not
an object, an action without a path, a file that is not JSON) returns None, and the caller
takes the exact path, `parse_commit`, which raises the error naming the line. Both paths give
equal summaries (tests/core/test_digest.py compares them on every table in tests/data).
"""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import unquote

import orjson

from audit.core.log import _ACTION_HANDLERS, _apply_other, _Malformed, _partition_values
from audit.core.model import EMPTY_SET, Commit, PartitionKey, PartitionValues, partition_key


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
    added_paths: frozenset[str]
    files_removed: int  # dataChange removes
    bytes_removed: int
    removed_partitions: frozenset[PartitionKey]
    removed_paths: frozenset[str]
    removed_paths_all: frozenset[str]  # every remove, dataChange or not
    compacted_paths: frozenset[str]  # adds without dataChange
    compacted_removed_partitions: frozenset[PartitionKey]  # removes without dataChange
    has_deletion_vectors: bool
    num_adds: int  # every add, dataChange or not
    num_removes: int


def digest_commit(version: int, data: bytes, interner: Interner) -> tuple[Commit, FileFacts] | None:
    """The commit without its add/remove objects, and the facts of its files; None if unusual.

    The returned `Commit` carries everything but `adds` and `removes` (left empty).
    """
    try:
        # One orjson call per file, as `parse_commit`'s fast path does.
        actions = orjson.loads(b"[" + data.strip().replace(b"\n", b",") + b"]")
    except orjson.JSONDecodeError:
        return None
    if not actions:
        return None
    commit = Commit(version=version)
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    try:
        for obj in actions:
            if type(obj) is not dict:
                return None
            for key, value in obj.items():
                if type(value) is dict:
                    if key == "add":
                        adds.append(value)
                        continue
                    if key == "remove":
                        removes.append(value)
                        continue
                    if key == "commitInfo":
                        if commit.commit_info is None:
                            commit.commit_info = value
                        continue
                _apply_other(commit, key, value, _ACTION_HANDLERS, None)
        return commit, file_facts(adds, removes, interner)
    except _Malformed:
        return None


def _path_of(action: dict[str, Any]) -> str:
    path = action.get("path")
    if type(path) is not str or not path:
        raise _Malformed("action without a path")
    # As log._decode_path: URL-decoded, '+' stays a plus.
    return unquote(path) if "%" in path else path


def file_facts(
    adds: list[dict[str, Any]], removes: list[dict[str, Any]], interner: Interner
) -> FileFacts:
    """Reduce add/remove action dicts as summary._data_files does their objects.

    Sets are filled in action order, as there, so they iterate in the same order too.
    """
    key = interner.key
    files_added = bytes_added = 0
    added_keys: set[PartitionKey] = set()
    added: list[str] = []
    compacted: list[str] = []
    has_dv = False
    for action in adds:
        path = _path_of(action)
        # dataChange defaults to true unless it is the boolean false.
        if action.get("dataChange") is False:
            compacted.append(path)
        else:
            files_added += 1
            size = action.get("size")
            if type(size) is int:
                bytes_added += size
            added_keys.add(key(_partition_values(action.get("partitionValues"))))
            added.append(path)
        if not has_dv:
            dv = action.get("deletionVector")
            has_dv = type(dv) is dict and bool(dv)
    files_removed = bytes_removed = 0
    removed_keys: set[PartitionKey] = set()
    compacted_keys: set[PartitionKey] = set()
    removed: list[str] = []
    removed_all: list[str] = []
    for action in removes:
        path = _path_of(action)
        values = action.get("partitionValues")
        partition = key(None if values is None else _partition_values(values))
        if action.get("dataChange") is False:
            compacted_keys.add(partition)
        else:
            files_removed += 1
            size = action.get("size")
            if type(size) is int:
                bytes_removed += size
            removed_keys.add(partition)
            removed.append(path)
        removed_all.append(path)
    removed_paths = frozenset(removed) if files_removed else EMPTY_SET
    every_remove_changes = files_removed == len(removes)
    return FileFacts(
        files_added,
        bytes_added,
        interner.partitions(added_keys),
        frozenset(added) if files_added else EMPTY_SET,
        files_removed,
        bytes_removed,
        interner.partitions(removed_keys),
        removed_paths,
        removed_paths if every_remove_changes else frozenset(removed_all),
        frozenset(compacted) if compacted else EMPTY_SET,
        EMPTY_SET if every_remove_changes else interner.partitions(compacted_keys),
        has_dv,
        len(adds),
        len(removes),
    )
