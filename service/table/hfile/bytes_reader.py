"""Bounds-checked big-endian reads over a byte buffer; every error names the source and the offset.

The bytes come from storage, so every length in them is untrusted: a read past the end of the
buffer (or of the region being decoded) raises CorruptTableError instead of returning short data.
"""

from __future__ import annotations

import struct

from service.errors import CorruptTableError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class ByteCursor:
    """A read position over `data[start:end]`; `source` names the file (and block) in errors."""

    def __init__(self, data: bytes, source: str, start: int = 0, end: int | None = None) -> None:
        stop = len(data) if end is None else end
        if not 0 <= start <= stop <= len(data):
            raise CorruptTableError(f"{source}: region [{start}, {stop}) outside {len(data)} bytes")
        self._data = data
        self.source = source
        self.pos = start
        self.end = stop

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, what: str) -> CorruptTableError:
        return CorruptTableError(f"{self.source}: at offset {self.pos}: {what}")

    def _take(self, n: int, what: str) -> int:
        if n < 0 or n > self.remaining:
            raise self.fail(f"{what} needs {n} bytes, {self.remaining} left")
        at = self.pos
        self.pos += n
        return at

    def skip(self, n: int, what: str) -> None:
        self._take(n, what)

    def read(self, n: int, what: str) -> bytes:
        at = self._take(n, what)
        return self._data[at : at + n]

    def sub(self, n: int, what: str) -> ByteCursor:
        """A cursor over the next `n` bytes (which this one skips): decode a region in isolation."""
        at = self._take(n, what)
        return ByteCursor(self._data, self.source, at, at + n)

    def u8(self, what: str) -> int:
        return self._data[self._take(1, what)]

    def i16(self, what: str) -> int:
        value: int = _I16.unpack_from(self._data, self._take(2, what))[0]
        return value

    def i32(self, what: str) -> int:
        value: int = _I32.unpack_from(self._data, self._take(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        value: int = _I64.unpack_from(self._data, self._take(8, what))[0]
        return value

    def length(self, value: int, what: str) -> int:
        """`value` as a length that must fit in what is left."""
        if value < 0 or value > self.remaining:
            raise self.fail(f"{what} {value} out of range ({self.remaining} bytes left)")
        return value

    def hadoop_vlong(self, what: str) -> int:
        """Hadoop `WritableUtils.readVLong` (HBase's `Bytes.readAsVLong`, the MVCC and index key lengths)."""
        first = self.u8(what)
        signed_first = first - 256 if first >= 128 else first
        if signed_first >= -112:
            return signed_first
        negative = signed_first < -120
        size = (-119 - signed_first) if negative else (-111 - signed_first)
        value = 0
        for _ in range(size - 1):
            value = (value << 8) | self.u8(what)
        return ~value if negative else value

    def proto_varint(self, what: str) -> int:
        """A protobuf base-128 varint (unsigned, at most 10 bytes)."""
        value = 0
        for shift in range(0, 70, 7):
            byte = self.u8(what)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise self.fail(f"{what}: varint longer than 10 bytes")
