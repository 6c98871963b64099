"""One action's JSON object (or checkpoint row) as a model object; `_ACTION_HANDLERS` by key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from audit.core.log.coerce import (
    _bool,
    _decode_path,
    _dict,
    _int,
    _partition_values,
    _str,
    _str_list,
    _str_map,
)
from audit.core.model import (
    AddFile,
    Cdc,
    Commit,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from audit.core.numbers import INT64_MAX, INT64_MIN


class _Malformed(Exception):
    """A known action lacks a required field; the caller says where (built only on error)."""


def _add_from(d: dict[str, Any]) -> AddFile:
    # The hot path of reading a log: inlined type checks, positional construction. The range
    # checks are numbers.log_int's for a JSON int (orjson gives ints up to 2**64 - 1).
    path = d.get("path")
    if type(path) is not str or not path:
        raise _Malformed("add action without a path")
    size, mtime, stats = d.get("size"), d.get("modificationTime"), d.get("stats")
    data_change, tags = d.get("dataChange"), d.get("tags")
    dv, row_id, provider = d.get("deletionVector"), d.get("baseRowId"), d.get("clusteringProvider")
    return AddFile(
        _decode_path(path),
        _partition_values(d.get("partitionValues")),
        size if type(size) is int and 0 <= size <= INT64_MAX else None,
        mtime if type(mtime) is int and INT64_MIN <= mtime <= INT64_MAX else None,
        data_change if type(data_change) is bool else True,
        stats if type(stats) is str else None,
        None if tags is None else _str_map(tags),  # type: ignore[arg-type]
        dv if type(dv) is dict else None,
        row_id if type(row_id) is int and INT64_MIN <= row_id <= INT64_MAX else None,
        provider if type(provider) is str else None,
    )


def _file_path(d: dict[str, Any], action: str) -> str:
    """The URL-decoded path of a remove / cdc action (or of any action, for digest.py)."""
    path = d.get("path")
    if type(path) is not str or not path:
        raise _Malformed(f"{action} action without a path")
    # As _decode_path, inlined: digest.py calls this once per add and remove.
    return unquote(path) if "%" in path else path


def _remove_from(d: dict[str, Any]) -> RemoveFile:
    # Inlined type checks, as in _add_from: rewrites remove as many files as they add.
    values, size, deleted = d.get("partitionValues"), d.get("size"), d.get("deletionTimestamp")
    data_change, extended = d.get("dataChange"), d.get("extendedFileMetadata")
    dv = d.get("deletionVector")
    return RemoveFile(
        _file_path(d, "remove"),
        None if values is None else _partition_values(values),
        size if type(size) is int and 0 <= size <= INT64_MAX else None,
        deleted if type(deleted) is int and INT64_MIN <= deleted <= INT64_MAX else None,
        data_change if type(data_change) is bool else True,
        extended if type(extended) is bool else None,
        dv if type(dv) is dict else None,
    )


def _cdc_from(d: dict[str, Any]) -> Cdc:
    return Cdc(
        path=_file_path(d, "cdc"),
        partition_values=_partition_values(d.get("partitionValues")),
        size=_int(d.get("size")),
        data_change=_bool(d.get("dataChange"), False),
    )


def _metadata_from(d: dict[str, Any]) -> Metadata:
    fmt = _dict(d.get("format")) or {}
    return Metadata(
        id=_str(d.get("id")),
        schema_string=_str(d.get("schemaString")),
        partition_columns=_str_list(d.get("partitionColumns")),
        configuration={k: v for k, v in _str_map(d.get("configuration")).items() if v is not None},
        name=_str(d.get("name")),
        description=_str(d.get("description")),
        created_time=_int(d.get("createdTime")),
        format_provider=_str(fmt.get("provider")),
    )


def _protocol_from(d: dict[str, Any]) -> Protocol:
    reader, writer = _int(d.get("minReaderVersion")), _int(d.get("minWriterVersion"))
    if reader is None or writer is None:
        raise _Malformed("protocol action without minReaderVersion/minWriterVersion")
    features = d.get("readerFeatures"), d.get("writerFeatures")
    return Protocol(
        min_reader_version=reader,
        min_writer_version=writer,
        reader_features=_str_list(features[0]) if features[0] is not None else None,
        writer_features=_str_list(features[1]) if features[1] is not None else None,
    )


def _txn_from(d: dict[str, Any]) -> Txn:
    app_id, version = _str(d.get("appId")), _int(d.get("version"))
    if app_id is None or version is None:
        raise _Malformed("txn action without appId/version")
    return Txn(app_id=app_id, version=version, last_updated=_int(d.get("lastUpdated")))


def _domain_from(d: dict[str, Any]) -> DomainMetadata:
    domain = _str(d.get("domain"))
    if domain is None:
        raise _Malformed("domainMetadata action without a domain")
    return DomainMetadata(
        domain=domain,
        configuration=_str(d.get("configuration")) or "",
        removed=_bool(d.get("removed"), False),
    )


def _on_add(c: Commit, v: dict[str, Any]) -> None:
    c.adds.append(_add_from(v))


def _on_remove(c: Commit, v: dict[str, Any]) -> None:
    c.removes.append(_remove_from(v))


def _on_cdc(c: Commit, v: dict[str, Any]) -> None:
    c.cdcs.append(_cdc_from(v))


def _on_metadata(c: Commit, v: dict[str, Any]) -> None:
    c.metadata = _metadata_from(v)


def _on_protocol(c: Commit, v: dict[str, Any]) -> None:
    c.protocol = _protocol_from(v)


def _on_txn(c: Commit, v: dict[str, Any]) -> None:
    c.txns.append(_txn_from(v))


def _on_domain(c: Commit, v: dict[str, Any]) -> None:
    c.domain_metadata.append(_domain_from(v))


def _on_commit_info(c: Commit, v: dict[str, Any]) -> None:
    if c.commit_info is None:
        c.commit_info = v


_ACTION_HANDLERS: dict[str, Callable[[Commit, dict[str, Any]], None]] = {
    "add": _on_add,
    "remove": _on_remove,
    "cdc": _on_cdc,
    "metaData": _on_metadata,
    "protocol": _on_protocol,
    "txn": _on_txn,
    "domainMetadata": _on_domain,
    "commitInfo": _on_commit_info,
}
