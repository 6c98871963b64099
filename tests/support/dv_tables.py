"""Hand-built deletion-vector tables, written as the protocol says: a real Parquet file, DV
files (version byte, size, bitmap, CRC) or inline vectors, and commit files by hand (no writer
we can drive produces the broken logs on demand)."""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

from audit.core.data.dv import MAGIC

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
DATA_FILE = "part-00000-dv.parquet"
ROWS = 10
DATABRICKS = "Databricks-Runtime/14.3.x-scala2.12"


def z85_encode(data: bytes) -> str:
    data = data + b"\0" * (-len(data) % 4)
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(_Z85[digit])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def bitmap_bytes(positions: list[int]) -> bytes:
    return struct.pack("<i", MAGIC) + BitMap64(positions).serialize()


def stored_dv(
    table: Path, positions: list[int], *, prefix: str = "", cardinality: int | None = None
) -> dict[str, Any]:
    """A `u` descriptor and its DV file (written under `prefix`, as Delta does)."""
    data = bitmap_bytes(positions)
    ident = uuid.uuid4()
    folder = table / prefix if prefix else table
    folder.mkdir(parents=True, exist_ok=True)
    body = struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    (folder / f"deletion_vector_{ident}.bin").write_bytes(b"\x01" + body)
    return {
        "storageType": "u",
        "pathOrInlineDv": prefix + z85_encode(ident.bytes),
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": len(positions) if cardinality is None else cardinality,
    }


def inline_dv(positions: list[int]) -> dict[str, Any]:
    data = bitmap_bytes(positions)
    return {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(data),
        "sizeInBytes": len(data),
        "cardinality": len(positions),
    }


def stats(records: int = ROWS) -> str:
    return json.dumps({"numRecords": records, "minValues": {"id": 0}, "maxValues": {"id": 9}})


def add(dv: dict[str, Any] | None = None, *, records: int = ROWS) -> dict[str, Any]:
    action = {
        "path": DATA_FILE,
        "partitionValues": {},
        "size": 500,
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
        "stats": stats(records),
    }
    if dv is not None:
        action["deletionVector"] = dv
    return {"add": action}


def remove(dv: dict[str, Any] | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "path": DATA_FILE,
        "deletionTimestamp": 1_700_000_000_000,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": {},
        "size": 500,
    }
    if dv is not None:
        action["deletionVector"] = dv
    return {"remove": action}


def commit(table: Path, version: int, *actions: dict[str, Any], **info: Any) -> None:
    info = {"timestamp": 1_700_000_000_000 + version * 1000, "engineInfo": DATABRICKS, **info}
    lines = [{"commitInfo": info}, *actions]
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def delete(table: Path, version: int, read: int, ident: int, *actions: dict, rows: int = 1) -> None:
    commit(
        table,
        version,
        *actions,
        operation="DELETE",
        operationParameters={"predicate": json.dumps([f"(id = {ident})"])},
        readVersion=read,
        isolationLevel="WriteSerializable",
        isBlindAppend=False,
        operationMetrics={"numDeletedRows": str(rows), "numDeletionVectorsAdded": "1"},
    )


def create(table: Path) -> None:
    """v0: an unpartitioned table with deletion vectors enabled and one file of ids 0..9."""
    table.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(range(ROWS), pa.int64())}), table / DATA_FILE)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True}]}
    commit(
        table,
        0,
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
        {"metaData": {"id": "dv-test", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [],
                      "configuration": {"delta.enableDeletionVectors": "true"},
                      "createdTime": 1_700_000_000_000}},
        add(),
        operation="WRITE",
        operationParameters={"mode": "ErrorIfExists"},
        isBlindAppend=True,
    )  # fmt: skip
