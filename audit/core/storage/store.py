"""What the log reader needs from a storage system, apart from any one implementation.

`storage.py` (local disk, pyarrow/deltalake) and `remote.py` (object_store) both implement
`LogStore`; keeping the interface here lets each import it without importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str  # the file's name inside the listed directory
    size: int | None  # None when listed without stats
    modification_time: int | None  # ms since the epoch; None when listed without stats
    is_dir: bool = False
    is_link: bool = False  # a symbolic link (local disks only): listings check where it leads


class LogStore(Protocol):
    """What the log reader needs from a storage system. Paths are relative to the table root."""

    uri: str  # the table root as the user gave it (normalised)

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        """Entries of `directory`; raises DeltaAuditError if it does not exist.

        With stats=False a store may leave size and modification_time as None when getting
        them costs extra (a stat per file on a local disk; free in an object-store listing).
        """
        ...

    def read_bytes(self, path: str) -> bytes: ...

    def modification_time(self, path: str) -> int | None:
        """ms since the epoch, or None if unknown."""
        ...

    def exists(self, path: str) -> bool: ...

    def open_input(self, path: str) -> pa.NativeFile:
        """A random-access file for pyarrow (parquet checkpoints)."""
        ...
