"""Plain dataclasses for a Delta table's log, its replayed state and the audit's results.

Everything here is Django-free and holds untrusted strings from the log as they were
written (paths are URL-decoded, nothing else is changed). Field names follow the Delta
protocol in snake_case so a reader of PROTOCOL.md finds them.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

# The summary record and its packing live in commit_record.py (re-exported here).
from audit.core.commit_record import (
    EMPTY_SET,
    SHARED_EMPTY_DICT,
    SUMMARY_FIELDS,
    CommitSummary,
    pack_parameters,
    pack_paths,
    unpack_paths,
)
from audit.core.vocab import GROWING_KINDS, FindingKind, Severity

__all__ = [
    "EMPTY_SET",
    "SHARED_EMPTY_DICT",
    "SUMMARY_FIELDS",
    "CommitSummary",
    "pack_parameters",
    "pack_paths",
    "unpack_paths",
]

PartitionValues = dict[str, "str | None"]
# A partition as a hashable, sorted tuple of (column, value) pairs; () for unpartitioned tables.
PartitionKey = tuple[tuple[str, "str | None"], ...]


def partition_key(values: PartitionValues | None) -> PartitionKey:
    return tuple(sorted((values or {}).items()))


# --------------------------------------------------------------------------- actions


@dataclass(slots=True)
class AddFile:
    path: str  # URL-decoded, as the protocol says to interpret it
    partition_values: PartitionValues
    size: int | None = None
    modification_time: int | None = None
    data_change: bool = True
    stats: str | None = None  # raw JSON text; parse lazily (see stats.py)
    tags: dict[str, str] | None = None
    deletion_vector: dict[str, Any] | None = None
    base_row_id: int | None = None
    clustering_provider: str | None = None


@dataclass(slots=True)
class RemoveFile:
    path: str
    partition_values: PartitionValues | None = None
    size: int | None = None
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    deletion_vector: dict[str, Any] | None = None


@dataclass(slots=True)
class Cdc:
    path: str
    partition_values: PartitionValues
    size: int | None = None
    data_change: bool = False


@dataclass(slots=True)
class Metadata:
    id: str | None
    schema_string: str | None
    partition_columns: list[str]
    configuration: dict[str, str]
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    format_provider: str | None = None


@dataclass(slots=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None


@dataclass(slots=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(slots=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False


@dataclass(slots=True)
class Commit:
    """One `NNN.json` commit file, parsed."""

    version: int
    commit_info: dict[str, Any] | None = None  # raw commitInfo object, untrusted
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    cdcs: list[Cdc] = field(default_factory=list)
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    txns: list[Txn] = field(default_factory=list)
    domain_metadata: list[DomainMetadata] = field(default_factory=list)
    unknown_actions: list[str] = field(default_factory=list)  # action names we do not know
    file_modification_time: int | None = None  # ms, from the listing; last-resort timestamp


# --------------------------------------------------------------------------- table state


@dataclass(slots=True)
class IdentityColumn:
    name: str
    start: int | None
    step: int | None
    high_water_mark: int | None
    allow_explicit_insert: bool | None


@dataclass
class TableState:
    """The table as of one version, after replaying checkpoint + commits."""

    version: int
    metadata: Metadata | None
    protocol: Protocol | None
    files: dict[str, AddFile]  # live files by (decoded) path
    txns: dict[str, Txn] = field(default_factory=dict)
    domain_metadata: dict[str, DomainMetadata] = field(default_factory=dict)
    clustering_columns: list[str] = field(default_factory=list)
    identity_columns: list[IdentityColumn] = field(default_factory=list)

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns) if self.metadata else []

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.configuration) if self.metadata else {}


class CommitSizes(MutableMapping[int, int]):
    """version -> bytes, as a dict reads, held in one array of 8-byte slots from the first
    version set (a dict of 1M entries and their int objects is ~70 MB; this, 8 MB). Versions
    below the first, or sizes that do not fit, go to a small dict beside it."""

    __slots__ = ("_base", "_sizes", "_other", "_count")

    def __init__(self) -> None:
        self._base: int | None = None
        self._sizes = array("q")
        self._other: dict[int, int] = {}
        self._count = 0

    def _index(self, version: int) -> int:
        base = self._base
        return -1 if base is None or version < base else version - base

    def __getitem__(self, version: int) -> int:
        index = self._index(version)
        if 0 <= index < len(self._sizes) and self._sizes[index] >= 0:
            return self._sizes[index]
        return self._other[version]

    def __setitem__(self, version: int, size: int) -> None:
        sizes, base = self._sizes, self._base
        # The next version of a run being read (once a commit): appended, as below would.
        if (
            base is not None
            and type(version) is int
            and version - base == len(sizes) <= 1 << 26
            and type(size) is int
            and 0 <= size < 1 << 62
            and version not in self._other
        ):
            sizes.append(size)
            self._count += 1
            return
        if self._base is None and type(version) is int:
            self._base = version
        index = self._index(version)
        if index < 0 or type(size) is not int or not 0 <= size < 1 << 62 or index > 1 << 26:
            if 0 <= index < len(self._sizes) and self._sizes[index] >= 0:
                self._sizes[index] = -1  # moves to the dict: still counted once
            else:
                self._count += version not in self._other
            self._other[version] = size
            return
        sizes = self._sizes
        if index >= len(sizes):
            sizes.extend([-1] * (index + 1 - len(sizes)))
        self._count += sizes[index] < 0 and version not in self._other
        self._other.pop(version, None)
        sizes[index] = size

    def __delitem__(self, version: int) -> None:
        index = self._index(version)
        if 0 <= index < len(self._sizes) and self._sizes[index] >= 0:
            self._sizes[index] = -1
            self._count -= 1
            return
        del self._other[version]
        self._count -= 1

    def __contains__(self, version: object) -> bool:
        if type(version) is int:
            index = self._index(version)
            if 0 <= index < len(self._sizes) and self._sizes[index] >= 0:
                return True
        return version in self._other

    def __iter__(self) -> Iterator[int]:
        base = self._base
        if base is not None:
            for index, size in enumerate(self._sizes):
                if size >= 0:
                    yield base + index
        yield from self._other

    def __len__(self) -> int:
        return self._count


@dataclass
class LogListing:
    """What `_delta_log` holds, after `_last_checkpoint` and the listing were reconciled."""

    table_uri: str
    commit_versions: list[int]  # versions with a NNN.json, ascending
    checkpoints: dict[int, list[str]]  # version -> the file names making up a complete checkpoint
    compactions: list[tuple[int, int, str]]  # (start, end, file name)
    last_checkpoint: dict[str, Any] | None  # parsed _last_checkpoint, if any
    latest_version: int
    first_available_version: int  # earliest version whose state can be rebuilt
    file_modification_times: dict[int, int] = field(default_factory=dict)  # version -> ms
    # version -> bytes of its NNN.json, recorded as summarize.summarize_log reads each file (so
    # health needs no second listing with a stat per file when every commit was read).
    commit_sizes: CommitSizes = field(
        default_factory=lambda: CommitSizes(), compare=False, repr=False
    )


class ListingVersions:
    """The version range of anything that holds a `listing` (an open log, a history)."""

    listing: LogListing

    @property
    def latest_version(self) -> int:
        return self.listing.latest_version

    @property
    def first_available_version(self) -> int:
        return self.listing.first_available_version


# --------------------------------------------------------------------------- summaries


@dataclass(slots=True)
class Predicate:
    raw: str  # as written in the log
    sql: str | None  # normalised SQL text (expression ids removed), None if unparsable
    columns: frozenset[str]  # lower-cased column names it references
    error: str | None = None  # parse error, if any


# --------------------------------------------------------------------------- audit results


@dataclass(slots=True)
class Witness:
    files: list[str]
    row_count: int
    sample_rows: list[dict[str, Any]]
    predicate: str | None
    method: str  # e.g. "partition_values", "file_stats", "data"


@dataclass(slots=True)
class Finding:
    kind: FindingKind | str  # str: health findings are named per alert rule (health_<metric>)
    severity: Severity
    version: int
    related_versions: list[int]
    confirmed: bool
    summary: str
    explanation: str
    witness: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, tuple[int, ...]]:
        """Identity used to upsert: same kind, version and related versions is the same finding
        (a growing kind's related versions are left out: it is one finding as it grows)."""
        return (self.kind, self.version, identity_versions(self.kind, self.related_versions))


def identity_versions(kind: str, related: Iterable[int]) -> tuple[int, ...]:
    """The related versions that are part of a finding's identity: none for GROWING_KINDS."""
    return () if kind in GROWING_KINDS else tuple(related)
