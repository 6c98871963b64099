"""Tables whose deletion vectors are hostile, as the review of issue 41 found them.

Each is a real delta-rs table (v0: ten rows; v1: an append of ten more; v2: a stale
unconditional DELETE from v0's snapshot, which leaves v1's file alive, so the never-existed
witness reads it; v3, v4: appends of v1's ids again, so a key check on `id` finds duplicates and
reads every live file). Then v1's commit is edited by hand, as anyone who can write the log
could: its add becomes several adds (copies of the Parquet file) whose `deletionVector`
descriptors are hostile, and the vector files are written by hand per the protocol (version
byte, big-endian size, magic number + portable 64-bit roaring bitmap, CRC-32).

- `build_leaky`: `p` vectors aimed at a text file under the table root at every offset: any
  number the audit says about what it read there would give the file back four bytes at a time.
- `build_memory_case`: the vectors that exhausted memory (see CASES).
"""

from __future__ import annotations

import json
import shutil
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyroaring import BitMap64

from audit.core.data.dv import MAGIC
from tests.support.dv_tables import z85_encode
from tests.support.hand_commits import log_file

HOSTILE_VERSION = 1  # the commit whose adds carry the hostile vectors
# Distinctive bytes: no run of four is an English fragment a report could hold anyway, and
# none is under 0x21, so each 4-byte window reads as a number of 9 or 10 digits.
SECRET = b"TOPSECRET:Zq8#vX!pW@Kj9$Lm0^Qz7&Rb3*Ty6(Vh1)Nx5|\xfe\xed\xfa\xce~Gk4%"
ROWS = 10


def _ids(start: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + ROWS), pa.int64())})


def _skeleton(table: Path) -> dict[str, Any]:
    """v0..v4 as the module says; v1's add action (to be replaced by hostile ones)."""
    config = {"delta.enableDeletionVectors": "true"}
    write_deltalake(str(table), _ids(0), configuration=config)  # v0
    stale = DeltaTable(str(table))
    write_deltalake(str(table), _ids(100), mode="append")  # v1
    stale.delete()  # v2: read v0, so v1's file survives
    write_deltalake(str(table), _ids(100), mode="append")  # v3
    write_deltalake(str(table), _ids(100), mode="append")  # v4
    return next(a["add"] for a in _actions(table, HOSTILE_VERSION) if "add" in a)


def _actions(table: Path, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_file(table, version).read_text().splitlines()]


def _replace_add(table: Path, adds: list[dict[str, Any]]) -> None:
    """v1's commit with its one add replaced by `adds`."""
    actions = [a for a in _actions(table, HOSTILE_VERSION) if "add" not in a]
    actions += [{"add": add} for add in adds]
    log_file(table, HOSTILE_VERSION).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _copies(table: Path, add: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """`count` adds of copies of `add`'s Parquet file (named in path order)."""
    source = table / add["path"]
    out = []
    for i in range(count):
        name = f"part-hostile-{i:04d}.parquet"
        shutil.copyfile(source, table / name)
        out.append({**add, "path": name})
    return out


def vector_bytes(bitmap: BitMap64) -> bytes:
    """A RoaringBitmapArray: the magic number, then the portable 64-bit bitmap."""
    return struct.pack("<i", MAGIC) + bytes(bitmap.serialize())


def write_vector_file(table: Path, data: bytes) -> dict[str, Any]:
    """A DV file holding `data` at offset 1, and its `u` descriptor (cardinality left out)."""
    ident = uuid.uuid4()
    body = struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    (table / f"deletion_vector_{ident}.bin").write_bytes(b"\x01" + body)
    return {
        "storageType": "u",
        "pathOrInlineDv": z85_encode(ident.bytes),
        "offset": 1,
        "sizeInBytes": len(data),
    }


# --------------------------------------------------------------------------- the leak


def build_leaky(table: Path) -> list[dict[str, Any]]:
    """The table, its secret file (`secret_path`), and one hostile add per offset of it;
    returns the descriptors (for the loader's own error strings)."""
    add = _skeleton(table)
    secret = secret_path(table)
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_bytes(SECRET)
    descriptors = [
        # The review's vectors: the size header is whatever four bytes sit at `offset`.
        *(
            {
                "storageType": "p",
                "pathOrInlineDv": str(secret),
                "offset": offset,
                "sizeInBytes": 12,
                "cardinality": 1,
            }
            for offset in range(len(SECRET))
        ),  # fmt: skip
        # A size that would fit the file: the bytes after the header are then read too.
        *(
            {
                "storageType": "p",
                "pathOrInlineDv": secret.as_uri(),
                "offset": offset,
                "sizeInBytes": len(SECRET) - offset - 8,
                "cardinality": 1,
            }
            for offset in range(0, len(SECRET) - 20, 3)
        ),  # fmt: skip
        # Text from the log where bytes were expected: Z85 that is not Z85, a short UUID.
        {
            "storageType": "i",
            "pathOrInlineDv": 'TOPSECRET"pass~',
            "sizeInBytes": 12,
            "cardinality": 1,
        },  # fmt: skip
        {
            "storageType": "u",
            "pathOrInlineDv": "TOPSECRETpass",
            "offset": 1,
            "sizeInBytes": 12,
            "cardinality": 1,
        },  # fmt: skip
    ]
    adds = _copies(table, add, len(descriptors))
    _replace_add(
        table, [{**a, "deletionVector": d} for a, d in zip(adds, descriptors, strict=True)]
    )
    return descriptors


def secret_path(table: Path) -> Path:
    return table / "notes" / "secret.txt"


def forbidden_tokens(secret: bytes = SECRET) -> set[str]:
    """Every way a message could carry the secret's bytes: each 4-byte window as text and as
    the numbers it reads as (big- and little-endian, signed and unsigned, decimal and hex), and
    each 4-character run of its text."""
    tokens: set[str] = set()
    text = secret.decode("latin-1")
    for start in range(len(secret) - 3):
        window = secret[start : start + 4]
        tokens.add(text[start : start + 4])
        for order in ("big", "little"):
            for signed in (False, True):
                number = int.from_bytes(window, order, signed=signed)
                tokens.add(str(number))
                tokens.add(f"{number & 0xFFFFFFFF:x}")
    return {t for t in tokens if len(t) >= 4}


# --------------------------------------------------------------------------- memory

CASES = ("huge_records", "dense", "full", "sixty", "budget")


def build_memory_case(table: Path, case: str) -> str:
    """One of the review's memory exhaustions on the skeleton; the dv_integrity problem the
    audit should report for it.

    - huge_records: two adds of one path with different inline vectors and numRecords 2^62
      (the audit built a bitmap of 2^62 positions to count the live rows);
    - dense: a 3.6 KB vector holding 2^24 positions (run containers) for a 10-row file (the
      witness and the key check listed every position: 5 GB);
    - full: a 925 KB vector holding 2^32 positions while its descriptor says 1;
    - sixty: sixty descriptors of one 8 MB vector that differ only in sizeInBytes (decoded
      sixty times: the cache key held the size);
    - budget: four vectors just under the 16 MiB size limit, each the costliest bitmap to
      hold (1.6M containers of one position: ~150 MB decoded), within the limits one by one.
    """
    add = _skeleton(table)
    if case == "huge_records":
        stats = json.loads(add["stats"])
        stats["numRecords"] = 2**62
        huge = {**add, "stats": json.dumps(stats)}
        adds = [{**huge, "deletionVector": _inline([1])},
                {**huge, "deletionVector": _inline([2])}]  # fmt: skip
        _replace_add(table, adds)
        return "two_live_entries"
    if case in ("dense", "full"):
        bitmap = BitMap64()
        bitmap.add_range(0, 2**24 if case == "dense" else 2**32)
        bitmap.run_optimize()
        descriptor = write_vector_file(table, vector_bytes(bitmap))
        descriptor["cardinality"] = len(bitmap) if case == "dense" else 1
        _replace_add(table, [{**add, "deletionVector": descriptor}])
        return "beyond_records" if case == "dense" else "vectors_not_decoded"
    if case == "sixty":
        bitmap = BitMap64(range(0, 1 << 25, 2))  # 512 bitmap containers of 8 KiB: 4 MB
        bitmap.update(range(1 << 32, (1 << 32) + (1 << 25), 2))  # and 4 MB more: 8 MB
        descriptor = write_vector_file(table, vector_bytes(bitmap))
        descriptor["cardinality"] = len(bitmap)
        size = descriptor["sizeInBytes"]
        adds = _copies(table, add, 60)
        _replace_add(
            table,
            [{**a, "deletionVector": {**descriptor, "sizeInBytes": size - i}}
             for i, a in enumerate(adds)],
        )  # fmt: skip
        return "unusable_vectors"
    if case == "budget":
        adds = _copies(table, add, 4)
        for i, copy in enumerate(adds):
            bitmap = BitMap64(range(i, (1_600_000 << 16) + i, 1 << 16))
            copy["deletionVector"] = write_vector_file(table, vector_bytes(bitmap))
            copy["deletionVector"]["cardinality"] = len(bitmap)
        _replace_add(table, adds)
        return "vectors_not_decoded"
    raise ValueError(case)


def _inline(positions: list[int]) -> dict[str, Any]:
    data = vector_bytes(BitMap64(positions))
    return {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(data),
        "sizeInBytes": len(data),
        "cardinality": len(positions),
    }
