"""One commit's summary as the audit holds it: `CommitSummary`, packed.

A million summaries must fit in well under 2 GB beside the audit, so the record keeps its
bulky fields packed and unpacks them when read (see the note above SUMMARY_FIELDS). Django-free
like the rest of the core; `model` re-exports everything here.
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Any

import orjson

# model.PartitionKey (model imports this module, not the other way round).
PartitionKey = tuple[tuple[str, "str | None"], ...]

# The one shared empty set: most commits remove nothing and compact nothing, and each empty
# frozenset costs 216 bytes (CPython does not share them) across 100k-1M summaries.
EMPTY_SET: frozenset[Any] = frozenset()


# Summaries are held compactly (1M of them must fit in well under 2 GB with the audit): file
# paths packed into one string per commit (`pack_paths`), operationMetrics as their JSON text,
# the fields most commits leave empty in one tuple. The field names, the constructor (positional
# in SUMMARY_FIELDS order, or by keyword) and the values read back are those of the plain record
# this replaced: the packed ones are properties that unpack on each read, so a rule reading them
# pays a little CPU and nobody sees the packing.
SUMMARY_FIELDS = (
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
    "provenance",
)
# Fields with a default (the last ones), as the record had them.
_SUMMARY_DEFAULTS: dict[str, Any] = {
    "unknown_actions": (),
    "compacted_paths": EMPTY_SET,
    "compacted_removed_partitions": EMPTY_SET,
    "provenance": None,
}
# What most commits leave empty, kept together in `_rare` (None when all are empty).
_RARE_FIELDS = (
    "user_id",
    "user_name",
    "job",
    "cluster_id",
    "app_ids",
    "domains",
    "unknown_actions",
    "compacted_paths",
    "compacted_removed_partitions",
    "provenance",
)
_FIELD_COUNT = len(SUMMARY_FIELDS)
_PATH_SEP = "\x00"  # joins a commit's paths; a path holding it is kept in a tuple instead

PackedPaths = "str | tuple[str, ...] | None"


def pack_paths(paths: Any) -> Any:
    """Paths in one string (one path: the path itself; none: None); unpack with
    `unpack_paths`. Given in action order (a list), the set unpacked is the one `frozenset`
    of that list gives, iteration order included. A string or None is already packed."""
    if paths is None or type(paths) is str:
        return paths
    count = len(paths)
    if not count:
        return None
    if count == 1:
        (path,) = paths
        return path if _PATH_SEP not in path else tuple(paths)
    joined = _PATH_SEP.join(paths)
    return joined if joined.count(_PATH_SEP) == count - 1 else tuple(paths)


def unpack_paths(packed: Any) -> frozenset[str]:
    if packed is None:
        return EMPTY_SET
    if type(packed) is str:
        return frozenset(packed.split(_PATH_SEP))
    return frozenset(packed)


def pack_parameters(parameters: dict[str, Any]) -> Any:
    """A commit's own (unshared) decoded parameters as JSON text, for the summary to hold
    (a dict of a MERGE's clauses is ~2x its text); the dict itself if it would not read back
    equal (an integer past 64 bits) or is empty."""
    if not parameters:
        return parameters
    try:
        return orjson.dumps(parameters).decode()  # text: orjson's bytes keep a 4 KB buffer
    except (orjson.JSONEncodeError, TypeError):
        return parameters


# Two bits a flag: False, True or None (a blind_append nobody could tell).
_FLAG_CODES: dict[Any, int] = {False: 0, True: 1, None: 2}
_FLAG_VALUES = (False, True, None)


def _pack_flags(values: tuple[Any, ...]) -> Any:
    """The five flags as one int (a small, shared int object), or the tuple itself if one is
    not exactly True, False or None (it reads back as given)."""
    flags = 0
    for i, value in enumerate(values):
        if value is not True and value is not False and value is not None:
            return values
        flags |= _FLAG_CODES[value] << (2 * i)
    return flags


def _flag(flags: Any, i: int) -> bool | None:
    if type(flags) is int:
        return _FLAG_VALUES[(flags >> (2 * i)) & 3]
    return flags[i]


def _set_flag(flags: Any, i: int, value: Any) -> Any:
    values = [_flag(flags, j) for j in range(5)]
    values[i] = value
    return _pack_flags(tuple(values))


def _pack_metrics(metrics: Any) -> Any:
    """operationMetrics as their JSON text (a third of the dict's size) when that reads back
    equal: text, integers, booleans and nulls; otherwise the dict itself. None: empty."""
    if not metrics:
        return None
    if type(metrics) is not dict:
        return metrics
    for value in metrics.values():
        if value is not None and type(value) not in (str, int, bool):
            return metrics
    try:
        # As text: orjson's bytes keep the 4 KB buffer they were written into (4 GB at 1M).
        return orjson.dumps(metrics).decode()
    except (orjson.JSONEncodeError, TypeError):  # an integer past 64 bits
        return metrics


class CommitSummary:
    """One commit as the audit sees it. Built by commit_summary.summarize_commit()."""

    __slots__ = (
        "version",
        "timestamp",  # ms since epoch: inCommitTimestamp, else commitInfo.timestamp, else mtime
        "operation",
        "_parameters",  # operation_parameters: a dict (shared), or its JSON text
        "_metrics",
        "read_version",
        "isolation_level",
        # blind_append, data_change, metadata_changed, protocol_changed, has_deletion_vectors
        # in one int (_pack_flags): 32 B a commit less than five slots.
        "_flags",
        # How each of read_version / isolation_level / blind_append / timestamp was obtained.
        "facts",
        "engine",
        "engine_info",
        "txn_id",
        "files_added",  # dataChange adds
        "files_removed",  # dataChange removes
        "bytes_added",
        "bytes_removed",
        # Distinct partitions of the data-changing adds and removes.
        "added_partitions",
        "removed_partitions",
        "_removed_paths",  # dataChange removes (what conflict checks compare)
        "_removed_paths_all",  # every remove, dataChange or not (compaction)
        "_added_paths",
        "predicate",
        # user_id ... provenance (_RARE_FIELDS), packed; None: all empty. compacted_paths are
        # the adds without dataChange (OPTIMIZE, REORG), compacted_removed_partitions the
        # partitions of the removes without; provenance is who and what wrote it beyond the
        # fields above and the times of a commit with an in-commit timestamp.
        "_rare",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Every field positionally (summarize_digest, once a commit): no dict of arguments.
        values = args if len(args) == _FIELD_COUNT and not kwargs else _arguments(args, kwargs)
        (
            self.version,
            self.timestamp,
            self.operation,
            self._parameters,
            metrics,
            self.read_version,
            self.isolation_level,
            blind_append,
            self.facts,
            self.engine,
            self.engine_info,
            self.txn_id,
            user_id,
            user_name,
            job,
            cluster_id,
            self.files_added,
            self.files_removed,
            self.bytes_added,
            self.bytes_removed,
            data_change,
            self.added_partitions,
            self.removed_partitions,
            removed_paths,
            removed_paths_all,
            added_paths,
            self.predicate,
            metadata_changed,
            protocol_changed,
            app_ids,
            domains,
            has_deletion_vectors,
            unknown_actions,
            compacted_paths,
            compacted_removed_partitions,
            provenance,
        ) = values
        self._flags = _pack_flags(
            (blind_append, data_change, metadata_changed, protocol_changed, has_deletion_vectors)
        )
        self._metrics = _pack_metrics(metrics)
        self._set_paths(removed_paths, removed_paths_all, added_paths)
        self._rare = _pack_rare(
            (
                user_id,
                user_name,
                job,
                cluster_id,
                app_ids,
                domains,
                unknown_actions,
                compacted_paths,
                compacted_removed_partitions,
                provenance,
            )
        )

    def _set_paths(self, removed: Any, removed_all: Any, added: Any) -> None:
        packed_removed = pack_paths(removed)
        # The same collection (every remove changed data): one packed copy for both.
        self._removed_paths = packed_removed
        self._removed_paths_all = (
            packed_removed if removed_all is removed else pack_paths(removed_all)
        )
        self._added_paths = pack_paths(added)

    @classmethod
    def from_slots(cls, values: tuple[Any, ...]) -> CommitSummary:
        """The summary whose `slot_values()` these are (no unpacking and packing again)."""
        summary = cls.__new__(cls)
        for name, value in zip(cls.__slots__, values, strict=True):
            object.__setattr__(summary, name, value)
        return summary

    def slot_values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def as_row(self) -> tuple[Any, ...]:
        """Every field's value, in SUMMARY_FIELDS order (the constructor's arguments)."""
        return tuple(getattr(self, name) for name in SUMMARY_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.as_row() == other.as_row()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in SUMMARY_FIELDS)
        return f"CommitSummary({inner})"

    def __getstate__(self) -> tuple[Any, ...]:
        return self.slot_values()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self.__slots__, state, strict=True):
            object.__setattr__(self, name, value)

    @property
    def blind_append(self) -> bool | None:
        flags = self._flags  # inlined _flag: read on every rule's visit
        if type(flags) is int:
            return _FLAG_VALUES[flags & 3]
        return flags[0]

    @blind_append.setter
    def blind_append(self, value: bool | None) -> None:
        self._flags = _set_flag(self._flags, 0, value)

    @property
    def data_change(self) -> bool:
        flags = self._flags  # inlined _flag: read on every rule's visit
        if type(flags) is int:
            return _FLAG_VALUES[(flags >> 2) & 3]  # type: ignore[return-value]
        return flags[1]

    @data_change.setter
    def data_change(self, value: bool) -> None:
        self._flags = _set_flag(self._flags, 1, value)

    @property
    def metadata_changed(self) -> bool:
        flags = self._flags  # inlined _flag: read on every rule's visit
        if type(flags) is int:
            return _FLAG_VALUES[(flags >> 4) & 3]  # type: ignore[return-value]
        return flags[2]

    @metadata_changed.setter
    def metadata_changed(self, value: bool) -> None:
        self._flags = _set_flag(self._flags, 2, value)

    @property
    def protocol_changed(self) -> bool:
        flags = self._flags  # inlined _flag: read on every rule's visit
        if type(flags) is int:
            return _FLAG_VALUES[(flags >> 6) & 3]  # type: ignore[return-value]
        return flags[3]

    @protocol_changed.setter
    def protocol_changed(self, value: bool) -> None:
        self._flags = _set_flag(self._flags, 3, value)

    @property
    def has_deletion_vectors(self) -> bool:
        flags = self._flags  # inlined _flag: read on every rule's visit
        if type(flags) is int:
            return _FLAG_VALUES[(flags >> 8) & 3]  # type: ignore[return-value]
        return flags[4]

    @has_deletion_vectors.setter
    def has_deletion_vectors(self, value: bool) -> None:
        self._flags = _set_flag(self._flags, 4, value)

    @property
    def operation_parameters(self) -> dict[str, Any]:
        """JSON-encoded string values decoded. Held as given: a dict (the shared ones of a
        log's repeated parameter sets), or JSON text (`pack_parameters`, the others)."""
        parameters = self._parameters
        return orjson.loads(parameters) if type(parameters) is str else parameters

    @operation_parameters.setter
    def operation_parameters(self, value: dict[str, Any]) -> None:
        self._parameters = value

    @property
    def operation_metrics(self) -> dict[str, Any]:
        metrics = self._metrics
        if metrics is None:
            return {}
        return orjson.loads(metrics) if type(metrics) is str else metrics

    @operation_metrics.setter
    def operation_metrics(self, value: dict[str, Any]) -> None:
        self._metrics = _pack_metrics(value)

    @property
    def removed_paths(self) -> frozenset[str]:
        return unpack_paths(self._removed_paths)

    @removed_paths.setter
    def removed_paths(self, value: Any) -> None:
        self._removed_paths = pack_paths(value)

    @property
    def removed_paths_all(self) -> frozenset[str]:
        return unpack_paths(self._removed_paths_all)

    @removed_paths_all.setter
    def removed_paths_all(self, value: Any) -> None:
        self._removed_paths_all = pack_paths(value)

    @property
    def added_paths(self) -> frozenset[str]:
        return unpack_paths(self._added_paths)

    @added_paths.setter
    def added_paths(self, value: Any) -> None:
        self._added_paths = pack_paths(value)

    @property
    def has_rare_fields(self) -> bool:
        """False when user_id ... provenance (_RARE_FIELDS) are all empty (most commits)."""
        return self._rare is not None

    @property
    def has_removes(self) -> bool:
        """bool(removed_paths_all), without unpacking it."""
        return self._removed_paths_all is not None

    @property
    def partitions_touched(self) -> frozenset[PartitionKey]:
        return self.added_partitions | self.removed_partitions

    @property
    def user_id(self) -> str | None:
        return _rare(self, 0)

    @user_id.setter
    def user_id(self, value: str | None) -> None:
        _set_rare(self, 0, value)

    @property
    def user_name(self) -> str | None:
        return _rare(self, 1)

    @user_name.setter
    def user_name(self, value: str | None) -> None:
        _set_rare(self, 1, value)

    @property
    def job(self) -> dict[str, Any] | None:
        return _rare(self, 2)

    @job.setter
    def job(self, value: dict[str, Any] | None) -> None:
        _set_rare(self, 2, value)

    @property
    def cluster_id(self) -> str | None:
        return _rare(self, 3)

    @cluster_id.setter
    def cluster_id(self, value: str | None) -> None:
        _set_rare(self, 3, value)

    @property
    def app_ids(self) -> dict[str, int]:
        return _rare(self, 4)

    @app_ids.setter
    def app_ids(self, value: dict[str, int]) -> None:
        _set_rare(self, 4, value)

    @property
    def domains(self) -> frozenset[str]:
        return _rare(self, 5)

    @domains.setter
    def domains(self, value: frozenset[str]) -> None:
        _set_rare(self, 5, value)

    @property
    def unknown_actions(self) -> tuple[str, ...]:
        return _rare(self, 6)

    @unknown_actions.setter
    def unknown_actions(self, value: tuple[str, ...]) -> None:
        _set_rare(self, 6, value)

    @property
    def compacted_paths(self) -> frozenset[str]:
        return unpack_paths(_rare(self, 7))

    @compacted_paths.setter
    def compacted_paths(self, value: frozenset[str]) -> None:
        _set_rare(self, 7, value)

    @property
    def compacted_removed_partitions(self) -> frozenset[PartitionKey]:
        return _rare(self, 8)

    @compacted_removed_partitions.setter
    def compacted_removed_partitions(self, value: frozenset[PartitionKey]) -> None:
        _set_rare(self, 8, value)

    @property
    def provenance(self) -> dict[str, Any] | None:
        return _rare(self, 9)

    @provenance.setter
    def provenance(self, value: dict[str, Any] | None) -> None:
        _set_rare(self, 9, value)


# The rare fields' values when a commit has none of them (app_ids: SHARED_EMPTY_DICT).
_RARE_EMPTY: tuple[Any, ...] = (None, None, None, None, None, EMPTY_SET, (), None, EMPTY_SET, None)


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Every field's value in SUMMARY_FIELDS order from a call by position and keyword."""
    if len(args) > _FIELD_COUNT:
        raise TypeError("CommitSummary: too many arguments")
    values = dict(zip(SUMMARY_FIELDS, args, strict=False))
    for name, value in kwargs.items():
        if name not in SUMMARY_FIELDS or name in values:
            raise TypeError(f"CommitSummary: unexpected or repeated argument {name!r}")
        values[name] = value
    for name in SUMMARY_FIELDS[len(args) :]:
        if name not in values:
            if name not in _SUMMARY_DEFAULTS:
                raise TypeError(f"CommitSummary: missing argument {name!r}")
            values[name] = _SUMMARY_DEFAULTS[name]
    return tuple(values[name] for name in SUMMARY_FIELDS)


def _pack_rare(values: tuple[Any, ...]) -> tuple[Any, ...] | None:
    user_id, user_name, job, cluster_id, app_ids, domains, unknown, compacted, partitions, prov = (
        values
    )
    packed = (
        user_id,
        user_name,
        job,
        cluster_id,
        None if app_ids is SHARED_EMPTY_DICT else app_ids,
        domains if domains else EMPTY_SET,
        tuple(unknown) if unknown else (),
        pack_paths(compacted),
        partitions if partitions else EMPTY_SET,
        prov,
    )
    return None if packed == _RARE_EMPTY else packed


# The app_ids of the commits without txn actions of a history that shares its dicts
# (digest.Interner.empty_dict): one dict, never written, and not held per commit. Any other
# empty dict is the summary's own (the Spark job's summaries share none).
SHARED_EMPTY_DICT: dict[Any, Any] = {}


def _rare(summary: CommitSummary, index: int) -> Any:
    rare = summary._rare
    value = _RARE_EMPTY[index] if rare is None else rare[index]
    if index == 4 and value is None:  # app_ids
        return SHARED_EMPTY_DICT
    return value


def _set_rare(summary: CommitSummary, index: int, value: Any) -> None:
    values = [_rare(summary, i) for i in range(len(_RARE_FIELDS))]
    values[index] = value
    summary._rare = _pack_rare(tuple(values))


# The record's fields as a dataclass declares them, so `dataclasses.fields`, `replace` and
# `asdict` work on summaries as they did on the plain dataclass this replaced (they read and
# pass the public values through the properties).
CommitSummary.__dataclass_fields__ = make_dataclass(  # type: ignore[attr-defined]
    "CommitSummaryFields",
    [
        (name, Any, field(default=_SUMMARY_DEFAULTS[name]))
        if name in _SUMMARY_DEFAULTS
        else (name, Any)
        for name in SUMMARY_FIELDS
    ],
).__dataclass_fields__
