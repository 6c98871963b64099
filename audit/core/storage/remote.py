"""Object stores (S3, ADLS/abfss, GCS) through object_store (the `obstore` bindings).

Why not pyarrow's filesystems for the log: every pyarrow read is a HEAD then a GET, and it
cannot list "after a key" (S3 `start-after`), so a tail tick had to list the whole
`_delta_log`. object_store reads with one GET, lists with an offset, and takes the same
option keys as deltalake (`aws_endpoint_url`, `azure_storage_account_name`, ...), so one set
of storage options serves both. Data files (the witness) still go through pyarrow, which
reads parquet by ranges instead of whole files.

Options come from the URI's storage root (storage_config.py, `AUDIT_STORAGE_CONFIG`) or the
standard environment variables. Every failure becomes a `DeltaAuditError` classified like the
other stores' (storage_errors.py: access denied, not found, unreachable), never carrying an
option value (they may be secrets).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pyarrow as pa

from audit.core.errors import DeltaAuditError
from audit.core.storage.config import ResolvedStorage
from audit.core.storage.errors import NOT_FOUND, classify, storage_error
from audit.core.storage.store import FileEntry, LogStore

REMOTE_SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "adl", "azure")
# Options object_store takes as client options rather than store configuration.
_CLIENT_OPTIONS = {"allow_http", "allow_invalid_certificates", "timeout", "connect_timeout"}
_LOG_PREFIX = "_delta_log/"


def available() -> bool:
    try:
        import obstore  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def _split_options(options: dict[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    config: dict[str, str] = {}
    client: dict[str, Any] = {}
    for key, value in options.items():
        name = key.lower()
        short = name.split("_", 1)[1] if name.startswith(("aws_", "azure_", "google_")) else name
        if short in _CLIENT_OPTIONS:
            client[short] = value.lower() == "true" if short.startswith("allow") else value
        elif name in ("aws_s3_allow_unsafe_rename", "aws_conditional_put"):
            continue  # writer-only options of deltalake; a reader has no use for them
        else:
            config[name] = value
    return config, client


class UnsupportedOptions(Exception):
    """The root's options include keys the object_store bindings do not take."""


def _not_found(err: BaseException) -> bool:
    return classify(err) == NOT_FOUND


class RemoteStore:
    """A table on an object store. Paths are relative to the table root."""

    def __init__(
        self,
        uri: str,
        storage: ResolvedStorage | None = None,
        fallback: Callable[[], LogStore] | None = None,
    ):
        from obstore.store import from_url  # noqa: PLC0415

        self.uri = uri.rstrip("/")
        self.storage = storage
        self._where = storage.description if storage is not None else ""
        self._secrets = storage.secrets if storage is not None else ()
        config, client = _split_options(dict(storage.options) if storage is not None else {})
        try:
            self.store = from_url(self.uri, config=config or None, client_options=client or None)
        except BaseException as err:  # noqa: BLE001 - a bad key panics inside the Rust bindings
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            raise UnsupportedOptions(type(err).__name__) from None
        # Data files and anything not in the log go through pyarrow's filesystem (storage.py
        # passes its ArrowStore factory: remote.py never imports storage.py).
        self._fallback = fallback
        self._arrow: LogStore | None = None

    def full_path(self, path: str) -> str:
        return f"{self.uri}/{path}" if path else self.uri

    def _error(self, err: BaseException, action: str) -> DeltaAuditError:
        return storage_error(err, self.uri, action, where=self._where, secrets=self._secrets)

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        import obstore  # noqa: PLC0415

        prefix = directory.rstrip("/")
        try:
            result = obstore.list_with_delimiter(self.store, prefix or None)
        except Exception as err:
            raise self._error(err, f"listing {directory or 'the table root'}") from None
        entries = [
            FileEntry(p.rsplit("/", 1)[-1], None, None, True) for p in result["common_prefixes"]
        ]
        entries += [_entry(meta) for meta in result["objects"]]
        if not entries and not self.exists(directory):
            raise self._error(FileNotFoundError(directory), f"listing {directory}")
        return entries

    def list_after(self, directory: str, after: str) -> list[FileEntry]:
        """Files of `directory` whose names sort after `after`: ONE request on S3 (start-after)
        for any log length; object_store filters client-side where the store has no offset.

        Unlike `list`, nested files are included with their relative name ("_sidecars/x").
        """
        import obstore  # noqa: PLC0415

        prefix = directory.rstrip("/") + "/"
        try:
            batches = obstore.list(self.store, prefix, offset=prefix + after, chunk_size=1000)
            metas = [meta for batch in batches for meta in batch]
        except Exception as err:
            raise self._error(err, f"listing {directory or 'the table root'}") from None
        out = []
        for meta in metas:
            entry = _entry(meta)
            out.append(FileEntry(meta["path"][len(prefix) :], entry.size, entry.modification_time))
        return out

    def read_bytes(self, path: str) -> bytes:
        import obstore  # noqa: PLC0415

        try:
            return bytes(obstore.get(self.store, path).bytes())
        except Exception as err:
            raise self._error(err, f"reading {path}") from None

    def read_if_exists(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist: one GET either way."""
        import obstore  # noqa: PLC0415

        try:
            return bytes(obstore.get(self.store, path).bytes())
        except Exception as err:
            if _not_found(err):
                return None
            raise self._error(err, f"reading {path}") from None

    def _head(self, path: str) -> dict[str, Any] | None:
        import obstore  # noqa: PLC0415

        try:
            return obstore.head(self.store, path)
        except Exception as err:
            if _not_found(err):
                return None
            raise self._error(err, f"reading {path}") from None

    def has_file(self, path: str) -> bool:
        """Is there a file at `path`? One HEAD (`exists` may also list, to find directories)."""
        return self._head(path) is not None

    def modification_time(self, path: str) -> int | None:
        try:
            meta = self._head(path)
        except DeltaAuditError:
            return None
        return _ms(meta.get("last_modified")) if meta else None

    def exists(self, path: str) -> bool:
        """A file, or a "directory" (any key under it). Errors other than not-found raise, so a
        wrong secret is reported as such instead of as a missing table."""
        import obstore  # noqa: PLC0415

        if path and self._head(path) is not None:
            return True
        prefix = path.rstrip("/") + "/" if path else None
        try:
            batch = next(iter(obstore.list(self.store, prefix, chunk_size=1)), [])
        except StopIteration:
            return False
        except Exception as err:
            raise self._error(err, f"looking up {path or 'the table root'}") from None
        return bool(batch)

    def is_dir(self, path: str) -> bool:
        return self.exists(path) and (not path or self._head(path) is None)

    def open_input(self, path: str) -> pa.NativeFile:
        if path.startswith(_LOG_PREFIX):
            # Checkpoints are read whole anyway: one GET instead of pyarrow's HEAD + ranges.
            return pa.BufferReader(self.read_bytes(path))
        return self._arrow_store().open_input(path)

    def _arrow_store(self) -> LogStore:
        if self._arrow is None:
            if self._fallback is None:
                raise DeltaAuditError(f"{self.uri}: no reader for data files", table_uri=self.uri)
            self._arrow = self._fallback()
        return self._arrow


def _ms(value: Any) -> int | None:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else None


def _entry(meta: dict[str, Any]) -> FileEntry:
    name = meta["path"].rsplit("/", 1)[-1]
    return FileEntry(name, meta.get("size"), _ms(meta.get("last_modified")))
