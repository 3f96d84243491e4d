"""HBase's per-chunk block checksums (`ChecksumType`: 0 NULL, 1 CRC32, 2 CRC32C).

HBase (`ChecksumUtil.generateChecksums`) stores one big-endian int per `bytesPerChecksum` chunk of the
block's header plus on-disk data. Hudi's writer (HBase 2.4's `HFileContext` default) uses CRC32C;
no C extension for it is a dependency here, so it is table-driven Python (MDT blocks are small).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as `java.util.zip.CRC32C`."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def chunk_checksums(checksum_type: int, data: bytes, bytes_per_checksum: int) -> list[int]:
    """One checksum per chunk of `data`; raises ValueError for an unknown type or chunk size."""
    if bytes_per_checksum <= 0:
        raise ValueError(f"bytesPerChecksum {bytes_per_checksum} must be positive")
    func: Callable[[bytes], int]
    if checksum_type == CHECKSUM_CRC32C:
        func = crc32c
    elif checksum_type == CHECKSUM_CRC32:
        func = zlib.crc32
    else:
        raise ValueError(f"unknown checksum type {checksum_type}")
    return [func(data[i : i + bytes_per_checksum]) for i in range(0, len(data), bytes_per_checksum)]
