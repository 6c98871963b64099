"""Reading checkpoints: classic and multi-part parquet, V2 (JSON or parquet) with sidecars."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from audit.core.errors import DeltaAuditError, one_line
from audit.core.log.actions import _ACTION_HANDLERS, _add_from, _Malformed
from audit.core.log.commits import _parse_actions
from audit.core.log.layout import _ADD_FIELDS, _CHECKPOINT_COLUMNS, LOG_DIR, SIDECAR_DIR
from audit.core.model import Commit
from audit.core.storage.store import LogStore


def _struct_rows(column: Any, fields: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Non-null rows of a struct column as dicts, keeping only `fields` when given."""
    import pyarrow.compute as pc

    valid = column.filter(pc.is_valid(column))
    if len(valid) == 0:
        return []
    if fields is None:
        return valid.to_pylist()
    present = [f for f in fields if valid.type.get_field_index(f) >= 0]
    values = [pc.struct_field(valid, [f]).to_pylist() for f in present]
    return [dict(zip(present, row, strict=True)) for row in zip(*values, strict=True)]


def _read_parquet_actions(
    store: LogStore, path: str, label: str, commit: Commit, sidecars: list[dict[str, Any]]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with store.open_input(path) as source:
            parquet = pq.ParquetFile(source)
            names = set(parquet.schema_arrow.names)
            table = parquet.read(columns=[c for c in _CHECKPOINT_COLUMNS if c in names])
        where = f"{label} ({path.rsplit('/', 1)[-1]})"
        for name in table.column_names:
            column = table.column(name)
            if not pa.types.is_struct(column.type):
                raise DeltaAuditError(f"{where}: column '{name}' is not a struct")
            if name == "add":
                commit.adds.extend(_add_from(row) for row in _struct_rows(column, _ADD_FIELDS))
            elif name == "sidecar":
                sidecars.extend(_struct_rows(column))
            elif name != "checkpointMetadata":
                handler = _ACTION_HANDLERS[name]
                for row in _struct_rows(column):
                    handler(commit, row)
    except DeltaAuditError:
        raise
    except _Malformed as err:
        raise DeltaAuditError(f"{label}: {path.rsplit('/', 1)[-1]}: {err}") from None
    except Exception as err:  # pyarrow raises many types for a damaged file; all mean "unreadable"
        raise DeltaAuditError(
            f"{label}: cannot read {path.rsplit('/', 1)[-1]}: {one_line(err)}",
            table_uri=store.uri,
        ) from None


def _sidecar_path(sidecar: dict[str, Any], label: str) -> str:
    raw = sidecar.get("path")
    if type(raw) is not str or not raw:
        raise DeltaAuditError(f"{label}: sidecar action without a path")
    # Sidecars always live in _delta_log/_sidecars; writers should store just the file name.
    name = unquote(raw).rstrip("/").rsplit("/", 1)[-1]
    return f"{SIDECAR_DIR}/{name}"


def read_checkpoint(store: LogStore, version: int, files: list[str]) -> Commit:
    """Read the actions of a complete checkpoint (classic, multi-part or V2 with sidecars).

    Returned as a `Commit` for `version` (adds are the live files; removes are not read).
    """
    label = f"checkpoint {version}"
    commit = Commit(version=version)
    sidecars: list[dict[str, Any]] = []
    for name in files:
        path = f"{LOG_DIR}/{name}"
        if name.endswith(".json"):
            _parse_actions(store.read_bytes(path), commit, "checkpoint", name, sidecars)
        else:
            _read_parquet_actions(store, path, label, commit, sidecars)
    for sidecar in sidecars:
        _read_parquet_actions(store, _sidecar_path(sidecar, label), label, commit, [])
    commit.unknown_actions.clear()  # in a checkpoint these are non-replay actions, not news
    return commit
