"""Deletion vectors, decoded: from a descriptor to the row positions it deletes.

A descriptor (`add.deletionVector` / `remove.deletionVector`) names its bitmap in one of three
ways (Delta PROTOCOL.md, "Deletion Vector Descriptor Schema"):

- `i`: inline; `pathOrInlineDv` is the Z85-encoded bitmap itself, `sizeInBytes` long once
  decoded (Z85 pads to a multiple of 4 bytes).
- `u`: relative; `pathOrInlineDv` is an optional folder prefix followed by a 20-character
  Z85-encoded UUID, the file being `<table>/<prefix>/deletion_vector_<uuid>.bin`.
- `p`: an absolute path or URI.

A DV file starts with a format version byte (1); at `offset` it holds the bitmap's size as a
4-byte big-endian integer (equal to the descriptor's `sizeInBytes`), the bitmap, then a CRC-32
of the bitmap (4 bytes, big-endian). The bitmap is a RoaringBitmapArray: the magic number
1681511377 (little-endian int32), then a 64-bit roaring bitmap in the portable format (bucket
count, then per bucket its high 32 bits and a 32-bit roaring bitmap), which is what
`pyroaring.BitMap64` reads (and validates).

Hostile descriptors are the rule here, not the exception (a log's writer picks the path, the
offset and every number), so:

- no message says a value read from a file (a size header, a magic number, a checksum: a `p`
  vector aimed at any file under the roots would read it back four bytes at a time), nor text
  copied from the log; each says what was wrong;
- nothing is allocated before `sizeInBytes`, `cardinality` and `offset` are checked against
  the limits (`DvLimits`, the shell's declared settings) and the file's own size, and the
  size header against `sizeInBytes`;
- a vector is decoded once per identity (storage type, path or inline text, offset), and
  the memory the decoded bitmaps of a pass hold is bounded;
- positions are never turned into Python lists: masks are built from the bitmap with numpy.

Files are opened through the witness's `DataFiles`, so deletion-vector files are confined to
the allowed roots exactly as data files are (audit/core/storage/roots.py): an absolute `p` path
outside them is never opened.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from audit.core.errors import DeltaAuditError, one_line
from audit.core.numbers import log_int

if TYPE_CHECKING:
    # Imported where a vector is decoded: the core (and the zip the Spark path ships) imports
    # without them, and tables without deletion vectors never need them.
    import numpy as np
    import pyarrow as pa
    from pyroaring import BitMap64

MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_UUID_CHARS = 20


@dataclass(frozen=True, slots=True)
class DvLimits:
    """What one audit pass may spend on deletion vectors (AUDIT_DV_* settings in the shell).

    `vector_bytes`: the largest serialized vector read (its `sizeInBytes`); a dense vector of
    random deletes takes 8 KiB per 65,536 rows, so 16 MiB covers files of 128M rows.
    `positions`: the most row positions one vector may hold, and the most rows a file's
    `numRecords` is believed for.
    `pass_bytes`: the memory the decoded bitmaps of a pass may take, all vectors together
    (each is kept for the pass: decoded once). A bitmap takes from about its serialized size
    (dense containers) to ~10x (one tiny container per 10 bytes), so it is charged what it
    holds (`decoded_cost`); the vector that crosses the budget is the last one decoded, so a
    pass holds at most `pass_bytes` plus one vector's bitmap (~160 MB at 16 MiB).
    """

    vector_bytes: int = 16 << 20
    positions: int = 1 << 31
    pass_bytes: int = 128 << 20


# Why a vector could not be used: the table's fault (`invalid`), one of the limits (`limit`),
# the pass's budget spent (`budget`), or the storage (missing, unreadable, outside the roots).
Cause = Literal["invalid", "limit", "budget", "storage"]


@dataclass(frozen=True, slots=True)
class Unusable:
    """A vector that was not decoded, and why: fixed words, never a value read."""

    reason: str
    cause: Cause = "invalid"

    def __str__(self) -> str:
        return self.reason


class _Refused(DeltaAuditError):
    def __init__(self, reason: str, cause: Cause = "invalid"):
        super().__init__(reason)
        self.unusable = Unusable(reason, cause)


@dataclass(frozen=True, slots=True)
class Location:
    """Where a descriptor's bitmap lives: inline bytes, or a file path and offset."""

    inline: bytes | None
    path: str | None  # relative to the table root, or absolute (`p`)
    offset: int


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) text to bytes; its length must be a multiple of 5. Vectorised: an
    inline vector may be megabytes of log text."""
    import numpy as np  # noqa: PLC0415

    if len(text) % 5:
        raise _Refused("Z85 text length is not a multiple of 5")
    if not text.isascii():
        raise _Refused("Z85 text holds a character outside the Z85 alphabet")
    digits = _z85_table()[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    if (digits == 255).any():
        raise _Refused("Z85 text holds a character outside the Z85 alphabet")
    value = np.zeros(len(text) // 5, dtype=np.uint64)
    for column in digits.reshape(-1, 5).T:
        value = value * 85 + column
    if (value > 0xFFFFFFFF).any():
        raise _Refused("Z85 group out of range")
    return value.astype(">u4").tobytes()


@functools.cache
def _z85_table() -> np.ndarray:
    """Byte -> Z85 digit, 255 for a byte outside the alphabet."""
    import numpy as np  # noqa: PLC0415

    table = np.full(256, 255, dtype=np.uint8)
    for i, char in enumerate(_Z85):
        table[ord(char)] = i
    return table


def location_of(descriptor: dict[str, Any], limits: DvLimits | None = None) -> Location:
    """Where a descriptor's bitmap is; DeltaAuditError for a descriptor that names nothing or
    whose inline text is over `limits` (checked before it is decoded)."""
    limits = limits or DvLimits()
    kind = descriptor.get("storageType")
    text = descriptor.get("pathOrInlineDv")
    if not isinstance(text, str) or not text:
        raise _Refused("deletion vector without pathOrInlineDv")
    if kind == "i":
        if len(text) > -(-limits.vector_bytes // 4) * 5:
            raise _Refused("inline deletion vector is over the size limit", "limit")
        return Location(z85_decode(text.ljust(len(text) + (-len(text)) % 5, "0")), None, 0)
    offset = descriptor.get("offset", 0)
    offset = log_int(offset) if offset is not None else 0
    if offset is None or offset < 0:
        raise _Refused("deletion vector offset is not a position in a file")
    if kind == "u":
        if len(text) < _UUID_CHARS:
            raise _Refused("relative deletion vector path is too short for a UUID")
        prefix, encoded = text[:-_UUID_CHARS], text[-_UUID_CHARS:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return Location(None, f"{prefix}/{name}" if prefix else name, offset)
    if kind == "p":
        return Location(None, text, offset)
    raise _Refused("unknown deletion vector storageType")


def parse_bitmap(data: bytes, limits: DvLimits | None = None) -> BitMap64:
    """A serialized RoaringBitmapArray (magic number first) as a 64-bit bitmap."""
    limits = limits or DvLimits()
    if len(data) < 12:
        raise _Refused("deletion vector is too short to hold a bitmap")
    from pyroaring import BitMap64  # noqa: PLC0415

    (magic,) = struct.unpack_from("<i", data, 0)
    if magic != MAGIC:
        raise _Refused("deletion vector magic number is wrong")
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except (ValueError, MemoryError):
        # pyroaring's words are not repeated: they could one day quote the bytes.
        raise _Refused("deletion vector bitmap does not decode") from None
    if len(bitmap) > limits.positions:
        raise _Refused("deletion vector holds more positions than the limit", "limit")
    return bitmap


# What CRoaring holds per container beyond its values (the container, its key, the 64-bit
# bitmap's tree), measured: a bitmap of 1.5M one-value containers takes ~95 bytes each.
_CONTAINER_BYTES = 96


def decoded_cost(bitmap: BitMap64) -> int:
    """The memory a decoded bitmap holds, about: its containers' values and their upkeep."""
    stats = bitmap.get_statistics()
    values = sum(stats[f"n_bytes_{kind}_containers"] for kind in ("array", "run", "bitset"))
    return int(values + _CONTAINER_BYTES * stats["n_containers"])


def read_header(source: Any, offset: int) -> int:
    """The size header at `offset` of an open DV file. The value is compared, never shown."""
    if offset + 4 > source.size():
        raise _Refused("deletion vector file ends before the vector does")
    source.seek(offset)
    header = source.read(4)
    if len(header) != 4:
        raise _Refused("deletion vector file ends before the vector does")
    return int(struct.unpack(">I", header)[0])


def read_stored(source: Any, offset: int, size: int) -> bytes:
    """The `size` bitmap bytes after the size header at `offset` of an open DV file, its CRC
    checked. `size` is the descriptor's sizeInBytes, already within the limit and equal to
    the header: it bounds the read, the header never does."""
    if offset + 4 + size + 4 > source.size():
        raise _Refused("deletion vector file ends before the vector does")
    source.seek(offset + 4)
    data = source.read(size)
    checksum = source.read(4)
    if len(data) != size or len(checksum) != 4:
        raise _Refused("deletion vector file ends before the vector does")
    if zlib.crc32(data) != struct.unpack(">I", checksum)[0]:
        raise _Refused("deletion vector checksum does not match its bytes")
    return bytes(data)


def _size_of(descriptor: dict[str, Any], limits: DvLimits) -> int:
    size = log_int(descriptor.get("sizeInBytes"))
    if size is None or size < 1:
        raise _Refused("deletion vector sizeInBytes is missing or not a size")
    if size > limits.vector_bytes:
        raise _Refused("deletion vector sizeInBytes is over the size limit", "limit")
    cardinality = descriptor.get("cardinality")
    if cardinality is not None:
        count = log_int(cardinality)
        if count is None or count < 0:
            raise _Refused("deletion vector cardinality is not a count")
        if count > limits.positions:
            raise _Refused("deletion vector cardinality is over the positions limit", "limit")
    return size


def identity(descriptor: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """What names one vector (the protocol's key of a logical file, with the path): its
    storage type, path or inline text, and offset; never its claimed size."""
    kind = descriptor.get("storageType")
    offset = None if kind == "i" else descriptor.get("offset", 0)
    key = (kind, descriptor.get("pathOrInlineDv"), offset)
    # A hostile descriptor ([] where text belongs) names nothing: no key, never cached.
    return key if all(v is None or type(v) in (str, int) for v in key) else None


# --------------------------------------------------------------------------- the loader

_MISMATCH = Unusable("deletion vector size header does not match the descriptor's sizeInBytes")
_INLINE_MISMATCH = Unusable("inline deletion vector's length does not match its sizeInBytes")
_OVER_BUDGET = Unusable("over this pass's deletion vector budget", "budget")


@dataclass(slots=True)
class _Vector:
    """What is known of one identity. `size`: its own size (the header read, kept private;
    the inline bytes' length), None when nothing could be read (`result` then says why);
    `result` None until a descriptor whose sizeInBytes matches asks for the positions."""

    where: Location | None
    size: int | None = None
    result: BitMap64 | Unusable | None = None


class Loader:
    """Decodes the vectors of one table, each identity once, within `limits` for the pass
    (one Loader per pass: the budget and the cache are the Loader's); errors are kept per
    vector, not raised."""

    def __init__(self, files: Any, limits: DvLimits | None = None):
        # A witness.DataFiles: vector files are opened, and confined, as data files are.
        self.files = files
        self.limits = limits or DvLimits()
        self.decoded_bytes = 0
        self._cache: dict[tuple[Any, ...], _Vector] = {}

    def get(self, descriptor: dict[str, Any] | None) -> BitMap64 | Unusable:
        """The positions, or why they could not be had."""
        if not descriptor:
            from pyroaring import BitMap64  # noqa: PLC0415

            return BitMap64()
        try:
            size = _size_of(descriptor, self.limits)
        except _Refused as err:
            return err.unusable
        key = identity(descriptor)
        vector = None if key is None else self._cache.get(key)
        if vector is None:
            vector = self._look(descriptor, size)
            if key is not None:
                self._cache[key] = vector
        if vector.size is None:
            assert vector.result is not None
            return vector.result
        if vector.where is not None and vector.where.inline is not None:
            if not vector.size - 4 < size <= vector.size:
                return _INLINE_MISMATCH
        elif vector.size != size:
            return _MISMATCH
        if vector.result is None:
            vector.result = self._decode(vector, size)
        return vector.result

    def _look(self, descriptor: dict[str, Any], size: int) -> _Vector:
        """Its location and own size; a stored vector whose header matches `size` is decoded
        in the same read (the usual case: one open per vector)."""
        try:
            where = location_of(descriptor, self.limits)
            if where.inline is not None:
                return _Vector(where, len(where.inline))
            vector = _Vector(where)
            with self._opened(where) as source:
                vector.size = read_header(source, where.offset)
                if vector.size == size:
                    vector.result = self._decoded(source, where, size)
            return vector
        except _Refused as err:
            return _Vector(None, None, err.unusable)
        except (DeltaAuditError, OSError, ValueError, ImportError) as err:
            return _Vector(None, None, _unreadable(err))

    def _decode(self, vector: _Vector, size: int) -> BitMap64 | Unusable:
        """A vector whose first descriptor did not match its size, or an inline one."""
        where = vector.where
        assert where is not None
        try:
            if where.inline is not None:
                return self._decoded(None, where, size)
            with self._opened(where) as source:
                return self._decoded(source, where, size)
        except (DeltaAuditError, OSError, ValueError, ImportError) as err:
            return _unreadable(err)

    def _decoded(self, source: Any, where: Location, size: int) -> BitMap64 | Unusable:
        """Read (from `source`, or the inline bytes) and parse, within the pass's budget: a
        bitmap takes at least its serialized size, and is charged what it holds once read."""
        if self.decoded_bytes + size > self.limits.pass_bytes:
            return _OVER_BUDGET
        try:
            data = (
                where.inline
                if where.inline is not None
                else read_stored(source, where.offset, size)
            )
            bitmap = parse_bitmap(data, self.limits)
        except _Refused as err:
            self.decoded_bytes += size
            return err.unusable
        self.decoded_bytes += max(size, decoded_cost(bitmap))
        return bitmap

    @contextlib.contextmanager
    def _opened(self, where: Location) -> Iterator[Any]:
        assert where.path is not None
        source = self.files.open(where.path)
        try:
            yield source
        finally:
            source.close()


def _unreadable(err: BaseException) -> Unusable:
    if isinstance(err, ImportError):
        return Unusable("pyroaring is not installed: deletion vectors cannot be decoded", "limit")
    if isinstance(err, DeltaAuditError):
        # The store's own line (missing file, access denied, outside the allowed roots): it
        # names the path the log gave, never the file's bytes, and is scrubbed of secrets.
        return Unusable(f"deletion vector file unreadable: {one_line(err, limit=200)}", "storage")
    # A reader's error text is not repeated: it could quote what it read.
    return Unusable("deletion vector file unreadable", "storage")


# --------------------------------------------------------------------------- applying a vector


def deleted_below(bitmap: BitMap64, rows: int) -> np.ndarray | None:
    """The positions under `rows` a vector deletes, as a numpy array (None: none of them).
    Positions past a file's rows cost nothing: they are cut off in the bitmap first."""
    import numpy as np  # noqa: PLC0415
    from pyroaring import BitMap64  # noqa: PLC0415

    if rows <= 0 or not bitmap or bitmap.min() >= rows:
        return None
    clipped = bitmap
    if bitmap.max() >= rows:
        # An intersection with the file's rows (a few run containers) costs what the result
        # holds; a copy of the whole bitmap would cost what the vector holds.
        below = BitMap64()
        below.add_range(0, rows)
        clipped = bitmap.intersection(below)
    return np.frombuffer(clipped.to_array(), dtype=np.uint64)


def live_mask(bitmap: BitMap64, rows: int) -> pa.BooleanArray | None:
    """True for each row of a `rows`-row file the vector leaves live; None when it deletes
    none of them."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    gone = deleted_below(bitmap, rows)
    if gone is None:
        return None
    mask = np.ones(rows, dtype=bool)
    mask[gone] = False
    return pa.array(mask)


def live_positions(bitmap: BitMap64, rows: int) -> pa.Array:
    """The row numbers of a `rows`-row file the vector leaves live."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    gone = deleted_below(bitmap, rows)
    if gone is None:
        return pa.array(np.arange(rows, dtype=np.int64))
    mask = np.ones(rows, dtype=bool)
    mask[gone] = False
    return pa.array(np.flatnonzero(mask).astype(np.int64))


def without_deleted(positions: pa.Array, bitmap: BitMap64) -> pa.Array:
    """`positions` (row numbers of one file) less those the vector deletes."""
    import pyarrow.compute as pc  # noqa: PLC0415

    if not len(positions) or not bitmap:
        return positions
    mask = live_mask(bitmap, int(pc.max(positions).as_py()) + 1)
    return positions if mask is None else pc.filter(positions, pc.take(mask, positions))


def kept_positions(bitmap: BitMap64 | None, rows: int, taken: pa.Array) -> list[int]:
    """The row numbers of a `rows`-row file that stay live and are not in `taken`."""
    import pyarrow.compute as pc  # noqa: PLC0415

    live = live_positions(bitmap, rows) if bitmap else _arange(rows)
    if len(taken):
        live = pc.filter(live, pc.invert(pc.is_in(live, value_set=taken)))
    return live.to_pylist()


def _arange(rows: int) -> pa.Array:
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    return pa.array(np.arange(rows, dtype=np.int64))
