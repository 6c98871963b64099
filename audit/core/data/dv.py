"""Deletion vectors, decoded: from a descriptor to the row positions it deletes.

A descriptor (`add.deletionVector` / `remove.deletionVector`) names its bitmap in one of three
ways (Delta PROTOCOL.md, "Deletion Vector Descriptor Schema"):

- `i`: inline; `pathOrInlineDv` is the Z85-encoded bitmap itself, `sizeInBytes` long once
  decoded (Z85 pads to a multiple of 4 bytes).
- `u`: relative; `pathOrInlineDv` is an optional folder prefix followed by a 20-character
  Z85-encoded UUID, the file being `<table>/<prefix>/deletion_vector_<uuid>.bin`.
- `p`: an absolute path or URI.

A DV file starts with a format version byte (1); at `offset` it holds the bitmap's size as a
4-byte big-endian integer, the bitmap, then a CRC-32 of the bitmap (4 bytes, big-endian).
The bitmap is a RoaringBitmapArray: the magic number 1681511377 (little-endian int32), then a
64-bit roaring bitmap in the portable format (bucket count, then per bucket its high 32 bits
and a 32-bit roaring bitmap), which is what `pyroaring.BitMap64` reads.

Files are opened through the witness's `DataFiles`, so deletion-vector files are confined to
the allowed roots exactly as data files are (audit/core/storage/roots.py): an absolute `p` path
outside them is never opened.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from audit.core.errors import DeltaAuditError

if TYPE_CHECKING:
    # Imported where a vector is decoded: the core (and the zip the Spark path ships) imports
    # without it, and tables without deletion vectors never need it.
    from pyroaring import BitMap64

MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}
# A bitmap larger than this is not read: no sane file has that many deleted rows' worth of
# roaring containers, and a hostile descriptor must not make the audit allocate without bound.
MAX_DV_BYTES = 64 * 1024 * 1024
_UUID_CHARS = 20


@dataclass(frozen=True, slots=True)
class Location:
    """Where a descriptor's bitmap lives: inline bytes, or a file path and offset."""

    inline: bytes | None
    path: str | None  # relative to the table root, or absolute (`p`)
    offset: int


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) text to bytes; its length must be a multiple of 5."""
    if len(text) % 5:
        raise DeltaAuditError(f"Z85 text of length {len(text)} is not a multiple of 5")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start : start + 5]:
            digit = _Z85_INDEX.get(char)
            if digit is None:
                raise DeltaAuditError(f"{char!r} is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise DeltaAuditError("Z85 group out of range")
        out += value.to_bytes(4, "big")
    return bytes(out)


def location_of(descriptor: dict[str, Any]) -> Location:
    """Where a descriptor's bitmap is; DeltaAuditError for a descriptor that names nothing."""
    kind = descriptor.get("storageType")
    text = descriptor.get("pathOrInlineDv")
    if not isinstance(text, str) or not text:
        raise DeltaAuditError("deletion vector without pathOrInlineDv")
    offset = descriptor.get("offset")
    offset = offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
    if kind == "i":
        size = descriptor.get("sizeInBytes")
        padded = len(text) + (-len(text)) % 5
        data = z85_decode(text.ljust(padded, "0"))
        return Location(data[:size] if isinstance(size, int) else data, None, 0)
    if kind == "u":
        if len(text) < _UUID_CHARS:
            raise DeltaAuditError(f"relative deletion vector {text!r} is too short for a UUID")
        prefix, encoded = text[:-_UUID_CHARS], text[-_UUID_CHARS:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return Location(None, f"{prefix}/{name}" if prefix else name, offset)
    if kind == "p":
        return Location(None, text, offset)
    raise DeltaAuditError(f"unknown deletion vector storageType {kind!r}")


def parse_bitmap(data: bytes) -> BitMap64:
    """A serialized RoaringBitmapArray (magic number first) as a 64-bit bitmap."""
    if len(data) < 12:
        raise DeltaAuditError(f"deletion vector of {len(data)} bytes is too short")
    from pyroaring import BitMap64  # noqa: PLC0415

    (magic,) = struct.unpack_from("<i", data, 0)
    if magic != MAGIC:
        raise DeltaAuditError(f"deletion vector magic number {magic} is not {MAGIC}")
    try:
        return BitMap64.deserialize(data[4:])
    except (ValueError, MemoryError) as err:
        raise DeltaAuditError(f"deletion vector bitmap does not decode: {err}") from err


def read_stored(source: Any, offset: int) -> bytes:
    """The bitmap bytes at `offset` of an open DV file, its CRC checked."""
    source.seek(offset)
    header = source.read(4)
    if len(header) != 4:
        raise DeltaAuditError(f"deletion vector file ends before offset {offset} + 4")
    (size,) = struct.unpack(">I", header)
    if size > MAX_DV_BYTES:
        raise DeltaAuditError(f"deletion vector of {size} bytes is over the {MAX_DV_BYTES} limit")
    data = source.read(size)
    checksum = source.read(4)
    if len(data) != size or len(checksum) != 4:
        raise DeltaAuditError("deletion vector file is shorter than its recorded size")
    (expected,) = struct.unpack(">I", checksum)
    if zlib.crc32(data) != expected:
        raise DeltaAuditError("deletion vector checksum does not match its bytes")
    return bytes(data)


def load(files: Any, descriptor: dict[str, Any]) -> BitMap64:
    """The row positions a descriptor deletes; `files` is a `witness.DataFiles` (the opener
    data-file reads are confined by)."""
    where = location_of(descriptor)
    if where.inline is not None:
        return parse_bitmap(where.inline)
    assert where.path is not None
    try:
        source = files.open(where.path)
        try:
            data = read_stored(source, where.offset)
        finally:
            source.close()
    except DeltaAuditError:
        raise
    except (OSError, ValueError) as err:
        raise DeltaAuditError(f"deletion vector file {where.path} unreadable: {err}") from err
    return parse_bitmap(data)


class Loader:
    """Decodes descriptors of one table, each once (commits repeat the same descriptor in the
    remove that retires it); errors are kept per descriptor, not raised."""

    def __init__(self, files: Any):
        # A witness.DataFiles: vector files are opened, and confined, as data files are.
        self.files = files
        self._cache: dict[tuple[Any, ...], BitMap64 | str] = {}

    def get(self, descriptor: dict[str, Any] | None) -> BitMap64 | str:
        """The positions, or the one-line reason they could not be read."""
        if not descriptor:
            from pyroaring import BitMap64  # noqa: PLC0415

            return BitMap64()
        key = tuple(
            descriptor.get(k) for k in ("storageType", "pathOrInlineDv", "offset", "sizeInBytes")
        )
        if not all(v is None or type(v) in (str, int) for v in key):
            return self._load(descriptor)  # a hostile descriptor ([] where text belongs): no key
        found = self._cache.get(key)
        if found is None:
            found = self._load(descriptor)
            self._cache[key] = found
        return found

    def _load(self, descriptor: dict[str, Any]) -> BitMap64 | str:
        from audit.core.errors import one_line  # noqa: PLC0415

        try:
            return load(self.files, descriptor)
        except DeltaAuditError as err:
            return one_line(err, limit=300)
        except ImportError:
            return "pyroaring is not installed: deletion vectors cannot be decoded"
