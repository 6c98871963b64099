"""Opening a table's data files (and deletion vector files) inside its read scope only.

A log's paths are untrusted: a file is opened only when it resolves inside the table's read
scope (audit/core/storage/roots.py), by its resolved location and with the table's own
credentials; a refused file is never opened and is recorded for the witness's `not_read`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.core.errors import DeltaAuditError
from audit.core.storage import roots as allowed


@dataclass(slots=True)
class _Pass:
    """What the readers of one table in one pass learn once (`DataFiles.sharing`): a vacuumed
    table's candidates try thousands of missing files and vectors, each resolved, its folder
    resolved again, and opened."""

    failed: dict[str, DeltaAuditError | OSError] = field(default_factory=dict)  # path -> why
    local: dict[str, Any] = field(default_factory=dict)  # resolved folder -> its LocalStore
    resolved: dict[str, str] = field(default_factory=dict)  # the table root and roots


class DataFiles:
    """Opens a table's data files by their resolved location, inside its read scope only.

    Every file is opened with the table's own storage options (storage_config's longest
    prefix of the *table's* location), wherever it lies: a log cannot borrow the credentials
    another prefix is configured with, so it reads at most what the table's own credentials
    can, as a Delta reader given the table's options would. Files under the table root use
    one store for the table; others (a granted root) one store per folder.
    """

    def __init__(self, table_uri: str, roots: Sequence[str] | None, shared: _Pass | None = None):
        self.table_uri = table_uri
        self.given_roots = roots
        self.roots = allowed.as_scope(roots, table_uri)
        self.refused: list[dict[str, str]] = []
        self._pass = shared or _Pass()
        self._stores: dict[str, Any] = {}
        self._storage: Any = None  # the table's resolved options, on the first remote file

    def sharing(self, table_uri: str, roots: Sequence[str] | None) -> DataFiles:
        """A reader of the same table and roots that shares what this one learnt in the pass
        (paths that do not open, local folders), with its own record of refused files."""
        same = table_uri == self.table_uri and roots == self.given_roots
        return DataFiles(table_uri, roots, self._pass if same else None)

    def open(self, path: str) -> Any:
        """A random-access file for `path`; UriNotAllowed (recorded) when outside the roots."""
        failed = self._pass.failed.get(path)
        if failed is not None:
            if isinstance(failed, allowed.UriNotAllowed):
                self.refused.append({"file": allowed.shown_path(path), "reason": allowed.REFUSED})
            raise failed.with_traceback(None)
        try:
            found = allowed.resolve_data_file(path, self.table_uri, self.roots, self._pass.resolved)
        except allowed.UriNotAllowed as err:
            self.refused.append({"file": allowed.shown_path(path), "reason": allowed.REFUSED})
            self._pass.failed[path] = err
            raise
        if found.local:
            try:
                return self._open_local(found.location)
            except (DeltaAuditError, OSError) as err:
                # Remote failures are not kept: they may be passing (throttling, network).
                self._pass.failed[path] = err
                raise
        store, name = self._remote_store(found.location)
        return store.open_input(name)

    def _open_local(self, location: str) -> Any:
        from audit.core.storage.stores import LocalStore  # noqa: PLC0415

        folder, _, name = location.rpartition("/")
        folder = folder or "/"
        store = self._pass.local.get(folder)
        if store is None:
            store = self._pass.local[folder] = LocalStore(folder)
        return store.open_input(name)

    def _remote_store(self, location: str) -> tuple[Any, str]:
        """The store to open `location` with, and the file's path inside it."""
        from audit.core.storage.config import storage_for  # noqa: PLC0415

        base = allowed.remote_table_location(self.table_uri)
        if self._storage is None:
            self._storage = storage_for(base or self.table_uri)
        if base is not None and location.startswith(base + "/"):
            return self._store_at(base), location[len(base) + 1 :]
        folder, _, name = location.rpartition("/")
        return self._store_at(folder), name

    def _store_at(self, uri: str) -> Any:
        from audit.core.storage.stores import open_store  # noqa: PLC0415

        store = self._stores.get(uri)
        if store is None:
            # The table's options, never those of the location's own storage root.
            store = open_store(uri, storage=self._storage)
            self._stores[uri] = store
        return store
