"""`DeltaLog`: a table's log opened once (store and listing), with its reading helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator

from audit.core.log.listing import _as_store, list_log
from audit.core.log.reading import iter_commits, read_commit
from audit.core.log.replay import _replay
from audit.core.model import Commit, ListingVersions, LogListing, TableState
from audit.core.storage.store import LogStore


class DeltaLog(ListingVersions):
    """A table's log: its store, its listing (refreshable) and reading helpers."""

    def __init__(self, source: LogStore | str | os.PathLike[str]):
        self.store = _as_store(source)
        self.uri = self.store.uri
        self.listing = list_log(self.store)

    def refresh(self) -> LogListing:
        self.listing = list_log(self.store)
        return self.listing

    def read_commit(self, version: int) -> Commit:
        return read_commit(self.store, version, self.listing)

    def iter_commits(self, start: int | None = None, end: int | None = None) -> Iterator[Commit]:
        return iter_commits(self.store, self.listing, start, end)

    def snapshot(self, version: int | None = None) -> TableState:
        return _replay(self.store, self.listing, version)


def open_log(uri: str | os.PathLike[str]) -> DeltaLog:
    return DeltaLog(uri)
