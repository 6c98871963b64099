"""Read-only access to a table's files: the local filesystem, or any pyarrow filesystem.

A `LogStore` lists a directory and reads files by paths relative to the table root
(e.g. "_delta_log/00000000000000000000.json"). Local paths use plain os calls because they
are several times faster than going through pyarrow for 100k tiny commit files; remote URIs
(s3://, abfss://, gs://, ...) go through deltalake's object_store file system with the options
of their storage root (audit/core/storage/config.py); other URIs through pyarrow.

Every failure becomes a `DeltaAuditError` with a one-line message naming the path and, for
remote stores, the cause (audit/core/storage/errors.py): access denied, not found, unreachable.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa

from audit.core.errors import DeltaAuditError
from audit.core.storage.config import ResolvedStorage, storage_for
from audit.core.storage.errors import classify, storage_error
from audit.core.storage.store import FileEntry, LogStore
from audit.core.vocab import StorageCause

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_CHUNK = 1 << 16


def _read_fd(fd: int) -> bytes:
    data = os.read(fd, _READ_CHUNK)
    if len(data) < _READ_CHUNK:
        return data  # a short read of a regular file means end of file
    chunks = [data]
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class LinkRefused(DeltaAuditError):
    """A symbolic link under the table leads outside it: not read (nor what it names)."""


def link_refused(uri: str, path: str) -> LinkRefused:
    """The one line for `path` (relative to the table at `uri`) linking outside the table.
    Never where the link leads: that would tell what lies outside."""
    return LinkRefused(
        f"{uri}: {path[:200]} is a symbolic link leading outside the table: not read",
        table_uri=uri,
    )


class LocalStore:
    """A table on the local filesystem.

    Everything read stays inside the root once symbolic links are resolved: a log is written
    by whoever can write the table, and a `_delta_log`, commit, checkpoint, sidecar or staged
    folder linked to another table would show that table's files as this one's. A link that
    leads outside raises LinkRefused (its target is never named); one inside is followed.
    """

    def __init__(self, root: str, uri: str | None = None):
        self.root = os.path.abspath(os.path.expanduser(root))
        self.uri = uri or self.root
        self._real_root = os.path.realpath(self.root)
        # Folder (relative) -> whether it resolves inside the root. Checked once, then again
        # at each listing (a tail tick lists `_delta_log` first): a folder swapped for a link
        # between ticks is caught by the next tick's listing.
        self._folders: dict[str, bool] = {}

    def _full(self, path: str) -> str:
        if not path:
            return self.root
        # Paths are relative to the table root; one that climbs out of it or is absolute
        # (os.path.join would then drop the root) names something else: refused. Lexical and
        # cheap, since the log reader calls this per commit file; the folders on the way are
        # checked for links leading out once (`_folder_inside`), the file itself where it is
        # opened (`_opened_path`). Data files are resolved fully by audit/core/storage/roots.py.
        if path.startswith("/") or ".." in path.split("/"):
            raise DeltaAuditError(f"path {path[:200]!r} leaves the table root", table_uri=self.uri)
        folder = path.rpartition("/")[0]
        if folder and not self._folder_inside(folder):
            raise self._refused(folder)
        return os.path.join(self.root, path)

    def _inside(self, full: str) -> bool:
        target = os.path.realpath(full)
        root = self._real_root
        return target == root or target.startswith(root.rstrip(os.sep) + os.sep)

    def _folder_inside(self, folder: str) -> bool:
        inside = self._folders.get(folder)
        if inside is None:
            inside = self._folders[folder] = self._inside(os.path.join(self.root, folder))
        return inside

    def _refused(self, path: str) -> LinkRefused:
        return link_refused(self.uri, path)

    def _opened_path(self, path: str) -> str:
        """The path to open for `path`: itself, or where its link leads when that is inside
        the root (LinkRefused when it leads out). One lstat."""
        full = self._full(path)
        try:
            link = stat.S_ISLNK(os.lstat(full).st_mode)
        except OSError:
            return full  # the open names the problem
        if not link:
            return full
        if not self._inside(full):
            raise self._refused(path)
        return os.path.realpath(full)

    def full_path(self, path: str) -> str:
        return self._full(path)

    def _listed(self, directory: str) -> str:
        """The full path of a folder about to be listed, checked afresh (with every cached
        verdict: a listing starts each tail tick)."""
        self._folders.clear()
        full = self._full(directory)
        if directory and not self._folder_inside(directory):
            raise self._refused(directory)
        return full

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        full = self._listed(directory)
        entries: list[FileEntry] = []
        try:
            with os.scandir(full) as it:
                for entry in it:
                    link = entry.is_symlink()  # from the directory entry: no extra call
                    if not stats:
                        # No stat call: on 100k commit files this halves the listing time.
                        entries.append(FileEntry(entry.name, None, None, entry.is_dir(), link))
                        continue
                    try:
                        # A link leading out is described by itself, not by its target.
                        follow = not link or self._inside(entry.path)
                        st = entry.stat(follow_symlinks=follow)
                    except OSError:
                        continue  # vanished between listing and stat (a temp file): skip it
                    entries.append(
                        FileEntry(
                            entry.name,
                            st.st_size,
                            st.st_mtime_ns // 1_000_000,
                            entry.is_dir(follow_symlinks=follow),
                            link,
                        )
                    )
        except OSError as err:
            raise self._list_error(err, full) from None
        return entries

    def list_names(self, directory: str) -> list[str]:
        """The names in `directory` alone: no stat and no entry object (the log listing)."""
        full = self._listed(directory)
        try:
            return os.listdir(full)
        except OSError as err:
            raise self._list_error(err, full) from None

    def _list_error(self, err: OSError, full: str) -> DeltaAuditError:
        if isinstance(err, NotADirectoryError):
            return DeltaAuditError(f"{full} is not a directory", table_uri=self.uri)
        return self._error(err, "list", full)

    def read_bytes(self, path: str) -> bytes:
        full = self._full(path)
        try:
            # os.open/os.read: about twice as fast as open().read() for tiny files (no
            # buffered-reader object, no fstat to size the buffer). O_NOFOLLOW: a link is
            # opened only after `_opened_path` checked where it leads (costs nothing else).
            try:
                fd = os.open(full, _OPEN_FLAGS | _NOFOLLOW)
            except OSError as err:
                if err.errno != errno.ELOOP or not _NOFOLLOW:
                    raise
                fd = os.open(self._opened_path(path), _OPEN_FLAGS)
            try:
                return _read_fd(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise self._error(err, "read", full) from None

    def _error(self, err: OSError, action: str, full: str) -> DeltaAuditError:
        """One line naming the path and the OS's reason (no traceback, no errno noise)."""
        if isinstance(err, FileNotFoundError):
            return DeltaAuditError(f"{full} does not exist", table_uri=self.uri)
        reason = err.strerror or err.__class__.__name__
        return DeltaAuditError(f"cannot {action} {full}: {reason}", table_uri=self.uri)

    def exists(self, path: str) -> bool:
        return os.path.exists(self._full(path))

    def modification_time(self, path: str) -> int | None:
        try:
            return os.stat(self._opened_path(path)).st_mtime_ns // 1_000_000
        except (OSError, LinkRefused):  # unknown: nothing of a file outside the table
            return None

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self._full(path))

    def leads_inside(self, path: str) -> bool:
        """Whether `path` (a symbolic link, say) resolves inside this store's root."""
        return self._inside(self._full(path))

    def open_input(self, path: str) -> pa.NativeFile:
        full = self._opened_path(path)
        try:
            return pa.OSFile(full, "rb")
        except (OSError, pa.ArrowException) as err:
            raise DeltaAuditError(f"cannot open {full}: {err}", table_uri=self.uri) from None


# Schemes read through deltalake's object_store file system, with the per-root options of
# storage_config (the same options deltalake uses for the witness and the Spark executors).
OBJECT_STORE_SCHEMES = frozenset(
    {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "azure", "r2", "lakefs"}
)


class ArrowStore:
    """A table on object storage (S3, ADLS/abfss, GCS through object_store) or another pyarrow
    filesystem (HDFS, ...). Failures are classified: access denied, not found, unreachable."""

    def __init__(self, uri: str, storage: ResolvedStorage | None = None):
        from pyarrow import fs as pafs

        self.uri = uri.rstrip("/")
        scheme = self.uri.partition("://")[0].lower()
        self.storage = storage
        self._where = storage.description if storage is not None else ""
        self._secrets = storage.secrets if storage is not None else ()
        try:
            if scheme in OBJECT_STORE_SCHEMES:
                from deltalake.fs import DeltaStorageHandler

                handler = DeltaStorageHandler(
                    self.uri, options=dict(storage.options) if storage else None
                )
                self.fs, root = pafs.PyFileSystem(handler), ""
            else:
                self.fs, root = pafs.FileSystem.from_uri(self.uri)
        except (pa.ArrowException, ValueError, OSError, RuntimeError) as err:
            raise self._error(err, "opening the store") from None
        self.root = root.rstrip("/")

    def _error(self, err: BaseException, action: str) -> DeltaAuditError:
        return storage_error(err, self.uri, action, where=self._where, secrets=self._secrets)

    def _full(self, path: str) -> str:
        if not self.root:
            return path
        return f"{self.root}/{path}" if path else self.root

    def full_path(self, path: str) -> str:
        return f"{self.uri}/{path}" if path else self.uri

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        from pyarrow import fs as pafs

        full = self._full(directory)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(full, allow_not_found=False))
        except (pa.ArrowException, OSError, RuntimeError) as err:
            raise self._error(err, f"listing {directory or 'the table root'}") from None
        entries = []
        for info in infos:
            mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else 0
            is_dir = info.type == pafs.FileType.Directory
            entries.append(FileEntry(info.base_name, info.size or 0, mtime, is_dir))
        return entries

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._full(path)) as fh:
                return fh.read()
        except (pa.ArrowException, OSError, RuntimeError) as err:
            raise self._error(err, f"reading {path}") from None

    def _info(self, path: str):
        try:
            return self.fs.get_file_info(self._full(path))
        except FileNotFoundError:
            return None
        except (pa.ArrowException, OSError, RuntimeError) as err:
            if classify(err) == StorageCause.NOT_FOUND:
                return None
            # Anything else (a refused key, a dead endpoint) must not read as "missing".
            raise self._error(err, f"looking up {path or 'the table root'}") from None

    def modification_time(self, path: str) -> int | None:
        info = self._info(path)
        mtime = info.mtime if info is not None else None
        return int(mtime.timestamp() * 1000) if mtime is not None else None

    def exists(self, path: str) -> bool:
        from pyarrow import fs as pafs

        info = self._info(path)
        return info is not None and info.type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        from pyarrow import fs as pafs

        info = self._info(path)
        return info is not None and info.type == pafs.FileType.Directory

    def open_input(self, path: str) -> pa.NativeFile:
        try:
            return self.fs.open_input_file(self._full(path))
        except (pa.ArrowException, OSError, RuntimeError) as err:
            raise self._error(err, f"opening {path}") from None


class FolderWalk:
    """A breadth-first listing of a store's folders, bounded by a number of listings.

    Table discovery and orphan scans both walk a store this way. Iterating yields
    (path, depth, entries) per folder, or (path, depth, error) for a folder that could not
    be listed (the root's own error is raised: nothing else can be said then). The caller
    chooses where to go next with `descend`; `truncated` says the budget ran out.

    A symbolic link that resolves outside the store's root is left out of the entries: the
    walk neither descends into such a folder nor lists such a file (reads stay inside the
    root the user was allowed).
    """

    def __init__(self, store: LogStore, *, stats: bool, max_listings: int):
        self.store = store
        self.stats = stats
        self.max_listings = max_listings
        self.listings = 0  # callers that list other folders on the way count them here too
        self.truncated = False
        self._queue: deque[tuple[str, int]] = deque([("", 0)])

    def descend(self, path: str, depth: int) -> None:
        self._queue.append((path, depth))

    def __iter__(self) -> Iterator[tuple[str, int, list[FileEntry] | DeltaAuditError]]:
        while self._queue:
            path, depth = self._queue.popleft()
            if self.listings >= self.max_listings:
                self.truncated = True
                return
            try:
                entries = self.store.list(path, stats=self.stats)
            except DeltaAuditError as err:
                if not path:
                    raise
                yield path, depth, err
                continue
            self.listings += 1
            yield path, depth, self._inside(path, entries)

    def _inside(self, path: str, entries: list[FileEntry]) -> list[FileEntry]:
        if not any(e.is_link for e in entries):
            return entries
        leads_inside = self.store.leads_inside  # type: ignore[attr-defined]  # local stores
        return [
            e
            for e in entries
            if not e.is_link or leads_inside(f"{path}/{e.name}" if path else e.name)
        ]


def local_path_of(uri: str) -> str | None:
    """The local filesystem path of `uri`, or None when it names a remote store."""
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            return None
        return unquote(parsed.path)
    if "://" in uri:
        return None
    return uri


def open_store(uri: str | os.PathLike[str], storage: ResolvedStorage | None = None) -> LogStore:
    """A store for the table at `uri` (a local path, file:// URI, or s3:// abfss:// gs:// ...).

    A URI pointing at the `_delta_log` directory itself is accepted and means its parent.
    Remote stores are opened with `storage` (a table's own options, for a witness reading a
    file elsewhere), by default with the options of `uri`'s own storage root.
    """
    text = os.fspath(uri).strip()
    if not text:
        raise DeltaAuditError("empty table URI")
    trimmed = text.rstrip("/") or text
    if trimmed.endswith("/_delta_log"):
        trimmed = trimmed[: -len("/_delta_log")] or "/"
    local = local_path_of(trimmed)
    if local is not None:
        return LocalStore(local, uri=trimmed)
    # Options resolved here, in the process that reads: the Celery worker, a Spark executor.
    storage = storage or storage_for(trimmed)
    from audit.core.storage import remote  # noqa: PLC0415

    if trimmed.split("://", 1)[0].lower() in remote.REMOTE_SCHEMES and remote.available():
        # One GET per read and listings from an offset (see remote.py); options the Python
        # object_store bindings do not take fall back to deltalake's handler below.
        try:
            return remote.RemoteStore(
                trimmed, storage, fallback=lambda: ArrowStore(trimmed, storage)
            )
        except remote.UnsupportedOptions:
            pass
    return ArrowStore(trimmed, storage)
