"""Write an HFile v3 the way Hudi 0.14/0.15 writes MDT log data blocks (GZ, CRC32C).

Hudi serialises an MDT log block's records through HBase 2.4's `HFile.getWriterFactory` with
`HFileContextBuilder().withBlockSize(1 MiB).withCompression(GZ).withCellComparator(
HoodieHBaseKVComparator)` (`HoodieHFileDataBlock.serializeRecords` in 0.14, `HFileUtils.
serializeRecordsToLogBlock` in 0.15). What `HFileWriterImpl.close` leaves on disk, in order:

    data block (DATABLK*)  root data index (IDXROOT2)  meta index (IDXROOT2, empty)
    file info (FILEINF2)  trailer (4096 bytes)

Each block is `HFileBlock.Writer`'s: a 33-byte header, the GZ-compressed payload, one CRC32C per
16384-byte chunk of header + compressed payload (`ChecksumUtil.generateChecksums`). `prevBlockOffset`
links blocks of the same type only (`HFileBlock.Writer.prevOffsetByType`), so the meta index points
at the data index and every other block says -1. Cells are `KeyValue`s with an empty family and
qualifier, timestamp `HConstants.LATEST_TIMESTAMP`, type Put, no tags (the context excludes them) and a
zero memstore timestamp (the context includes MVCC). HBase's reader (the default in 0.14/0.15,
`HoodieAvroHFileReader` via `HoodieHFileUtils.createHFileReader`) checks checksums, loads the
comparator class named in the trailer and reads `hfile.LASTKEY`, the average lengths and the
memstore entries from the file info, so all of them are written.

Data blocks split as `HFileWriterImpl.checkBlockBoundary` splits them: before a cell is appended, a
block holding 1 MiB or more of cell bytes is finished and a new one started (an instant's `files`
records stay in one block; `bloom_filters` records, a few hundred KiB each, need several). The root
index has one entry per data block (HBase keeps a single-level index until the root chunk exceeds
128 KiB, thousands of blocks); each entry's key is the block's first key, where HBase writes a
shorter key between the previous block's last row and this block's first
(`HFileWriterImpl.getMidpoint`): readers only need a key that no earlier block's cell exceeds and no
cell of this block precedes, which the first key is, and the first block's entry is its first key in
both.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.errors import CorruptTableError
from service.table.hfile.checksum import CHECKSUM_CRC32C, chunk_checksums
from service.table.hfile.reader import (
    BLOCK_HEADER_SIZE,
    CODEC_GZ,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    KEY_VALUE_VERSION,
    LAST_KEY,
    PBUF_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
)

BLOCK_SIZE = 1024 * 1024  # Hudi's HFileContext block size for log blocks (HoodieHFileDataBlock)
BYTES_PER_CHECKSUM = 16384  # HFile.DEFAULT_BYTES_PER_CHECKSUM
HUDI_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
MAJOR_VERSION = 3
MINOR_VERSION = 3  # HFileReaderImpl.MAX_MINOR_VERSION in HBase 2.4 (protobuf trailer, checksums)
LATEST_TIMESTAMP = 0x7FFFFFFFFFFFFFFF  # HConstants.LATEST_TIMESTAMP
KEY_TYPE_PUT = 4  # KeyValue.Type.Put

# HFileInfo keys HFileWriterImpl.finishFileInfo / close write (the reader imports the ones it reads).
AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = b"hfile.CREATE_TIME_TS"
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"

_I32 = struct.Struct(">i")
_KEY_OVERHEAD = 2 + 1 + 8 + 1  # `cell_key` beyond the row: int16 row length, family length, timestamp, type
_I64 = struct.Struct(">q")
_GZIP_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # ReusableGzipOutputStream.GZIP_HEADER


@dataclass(frozen=True)
class HFileCell:
    """One cell to write: the row key (Hudi's record key, UTF-8) and the value (Avro bytes)."""

    row: bytes
    value: bytes


def cell_key(row: bytes) -> bytes:
    """`KeyValue`'s key part: int16 row length, row, family length 0, timestamp, type."""
    return struct.pack(">h", len(row)) + row + b"\x00" + _I64.pack(LATEST_TIMESTAMP) + bytes([KEY_TYPE_PUT])


def write_hfile(
    cells: Sequence[HFileCell],
    file_info: Mapping[bytes, bytes],
    *,
    source: str,
    create_time_ms: int | None = None,
) -> bytes:
    """The HFile bytes of `cells` (sorted by row, as `HoodieHBaseKVComparator` orders them) with the
    caller's file-info entries (Hudi adds `schema`) beside HBase's own. `source` names it in errors."""
    rows = pa.array([c.row for c in cells], pa.binary())
    values = pa.array([c.value for c in cells], pa.binary())
    return write_hfile_columns(rows, values, file_info, source=source, create_time_ms=create_time_ms)


def write_hfile_columns(
    rows: pa.Array,
    values: pa.Array,
    file_info: Mapping[bytes, bytes],
    *,
    source: str,
    create_time_ms: int | None = None,
) -> bytes:
    """`write_hfile` of cells given as two binary columns (row keys sorted, their values): the cells
    are laid out by Arrow, not one by one (an MDT block of a clustering's record index holds a cell
    per record key)."""
    n = len(rows)
    if n == 0:
        raise CorruptTableError(f"{source}: an HFile data block needs at least one cell")
    if n > 1:
        descending = pc.less(rows.slice(1), rows.slice(0, n - 1))
        if pc.any(descending).as_py():
            i = int(pc.index(descending, True).as_py())
            raise CorruptTableError(
                f"{source}: cell {rows[i + 1].as_py()!r} sorts before {rows[i].as_py()!r}"
            )
    row_lengths = pc.binary_length(rows).to_numpy(zero_copy_only=False).astype(np.int64)
    if int(row_lengths.max()) > 0x7FFF:  # KeyValue's int16 row length
        raise CorruptTableError(f"{source}: row key of {int(row_lengths.max())} bytes is too long")
    value_lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    key_lengths = row_lengths + _KEY_OVERHEAD
    # Each cell: int32 key length, int32 value length, the key (`cell_key`: int16 row length, row,
    # family length 0, timestamp, type), the value, and WritableUtils.writeVLong(memstoreTS = 0).
    lengths = np.empty(n, dtype=[("k", ">i4"), ("v", ">i4"), ("r", ">i2")])
    lengths["k"], lengths["v"], lengths["r"] = key_lengths, value_lengths, row_lengths
    prefix = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(10), n, [None, pa.py_buffer(lengths.tobytes())]
    ).cast(pa.binary())
    middle = pa.scalar(b"\x00" + _I64.pack(LATEST_TIMESTAMP) + bytes([KEY_TYPE_PUT]), pa.binary())
    memstore_ts = pa.scalar(b"\x00", pa.binary())
    laid_out = pc.binary_join_element_wise(
        prefix, rows, middle, values, memstore_ts, pa.scalar(b"", pa.binary())
    )
    data = memoryview(laid_out.buffers()[2]) if laid_out.buffers()[2] is not None else memoryview(b"")
    offsets = np.frombuffer(laid_out.buffers()[1], dtype=np.int32)[laid_out.offset : laid_out.offset + n + 1]
    # A data block takes cells until it holds at least BLOCK_SIZE bytes (the cell crossing it included).
    payloads: list[bytes] = []
    first_keys: list[bytes] = []
    start = 0
    while start < n:
        end = int(np.searchsorted(offsets, offsets[start] + BLOCK_SIZE, side="left"))
        end = min(max(end, start + 1), n)
        payloads.append(bytes(data[offsets[start] : offsets[end]]))
        first_keys.append(cell_key(rows[start].as_py()))
        start = end
    key_bytes, value_bytes = int(key_lengths.sum()), int(value_lengths.sum())
    last_row = rows[n - 1].as_py()
    out = bytearray()
    total_uncompressed = 0
    root_index = b""
    data_offsets: list[int] = []
    for payload, first_key in zip(payloads, first_keys, strict=True):
        offset = len(out)
        # prevBlockOffset links data blocks to each other (HFileBlock.Writer.prevOffsetByType).
        data_block = _block(DATA_MAGIC, payload, prev_offset=data_offsets[-1] if data_offsets else -1)
        data_offsets.append(offset)
        out += data_block
        total_uncompressed += BLOCK_HEADER_SIZE + len(payload)
        # BlockIndexChunk.writeRoot: int64 offset, int32 on-disk size, Bytes.writeByteArray(key).
        root_index += (
            _I64.pack(offset) + _I32.pack(len(data_block)) + _hadoop_vint(len(first_key)) + first_key
        )

    root_offset = len(out)
    out += _block(ROOT_INDEX_MAGIC, root_index, prev_offset=-1)
    # HFileWriterImpl counts the data, meta index and file-info blocks and the trailer in
    # totalUncompressedBytes, not the data index (BlockIndexWriter keeps its own total).
    # The meta index has no entries (Hudi writes no meta blocks into log blocks).
    out += _block(ROOT_INDEX_MAGIC, b"", prev_offset=root_offset)
    total_uncompressed += BLOCK_HEADER_SIZE

    created = 0 if create_time_ms is None else create_time_ms
    info: dict[bytes, bytes] = dict(file_info)
    info.update(
        {
            LAST_KEY: cell_key(last_row),
            AVG_KEY_LEN: _I32.pack(key_bytes // n),
            AVG_VALUE_LEN: _I32.pack(value_bytes // n),
            CREATE_TIME_TS: _I64.pack(created),
            MAX_MEMSTORE_TS_KEY: _I64.pack(0),
            KEY_VALUE_VERSION: _I32.pack(1),  # KEY_VALUE_VER_WITH_MEMSTORE
        }
    )
    file_info_offset = len(out)
    file_info_payload = PBUF_MAGIC + _delimited(_file_info_proto(info))
    out += _block(FILE_INFO_MAGIC, file_info_payload, prev_offset=-1)
    total_uncompressed += BLOCK_HEADER_SIZE + len(file_info_payload)

    total_uncompressed += TRAILER_SIZE  # finishClose adds FixedFileTrailer.getTrailerSize()
    trailer = _trailer_proto(
        file_info_offset=file_info_offset,
        load_on_open_offset=root_offset,
        uncompressed_data_index_size=len(root_index),
        total_uncompressed_bytes=total_uncompressed,
        entry_count=n,
        data_block_offsets=data_offsets,
    )
    tail = TRAILER_MAGIC + _delimited(trailer)
    if len(tail) > TRAILER_SIZE - 4:
        raise CorruptTableError(f"{source}: HFile trailer of {len(tail)} bytes does not fit")
    out += tail + bytes(TRAILER_SIZE - 4 - len(tail))
    out += _I32.pack((MINOR_VERSION << 24) | MAJOR_VERSION)  # FixedFileTrailer.materializeVersion
    return bytes(out)


def _block(magic: bytes, payload: bytes, *, prev_offset: int) -> bytes:
    compressed = _gzip(payload)
    chunks = -(-(BLOCK_HEADER_SIZE + len(compressed)) // BYTES_PER_CHECKSUM)
    on_disk_without_header = len(compressed) + 4 * chunks
    header = (
        magic
        + _I32.pack(on_disk_without_header)
        + _I32.pack(len(payload))
        + _I64.pack(prev_offset)
        + bytes([CHECKSUM_CRC32C])
        + _I32.pack(BYTES_PER_CHECKSUM)
        + _I32.pack(BLOCK_HEADER_SIZE + len(compressed))
    )
    body = header + compressed
    sums = chunk_checksums(CHECKSUM_CRC32C, body, BYTES_PER_CHECKSUM)
    return body + b"".join(s.to_bytes(4, "big") for s in sums)


def _gzip(data: bytes) -> bytes:
    """One gzip member as Hadoop's GzipCodec (HBase's `ReusableStreamGzipCodec`) writes it: the fixed
    10-byte header with OS byte 0xff, raw deflate at zlib's default level, CRC-32 and size trailer."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    deflated = compressor.compress(data) + compressor.flush()
    return _GZIP_HEADER + deflated + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _hadoop_vint(value: int) -> bytes:
    """`WritableUtils.writeVLong` for a non-negative value (`Bytes.writeByteArray`'s length)."""
    if -112 <= value <= 127:
        return bytes([value & 0xFF])
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([(-112 - len(raw)) & 0xFF]) + raw


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _field_bytes(number: int, value: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(value)) + value


def _delimited(message: bytes) -> bytes:
    return _varint(len(message)) + message


def _file_info_proto(info: Mapping[bytes, bytes]) -> bytes:
    # HFileInfo is a TreeMap under Bytes.BYTES_COMPARATOR; FileInfoProto repeats BytesBytesPair.
    return b"".join(
        _field_bytes(1, _field_bytes(1, key) + _field_bytes(2, info[key])) for key in sorted(info)
    )


def _trailer_proto(
    *,
    file_info_offset: int,
    load_on_open_offset: int,
    uncompressed_data_index_size: int,
    total_uncompressed_bytes: int,
    entry_count: int,
    data_block_offsets: Sequence[int],
) -> bytes:
    """HFileTrailerProto as FixedFileTrailer.toProtobuf fills it for a single-level file."""
    return b"".join(
        [
            _field_varint(1, file_info_offset),
            _field_varint(2, load_on_open_offset),
            _field_varint(3, uncompressed_data_index_size),
            _field_varint(4, total_uncompressed_bytes),
            _field_varint(5, len(data_block_offsets)),  # data_index_count: root entries
            _field_varint(6, 0),  # meta_index_count
            _field_varint(7, entry_count),
            _field_varint(8, 1),  # num_data_index_levels
            _field_varint(9, data_block_offsets[0]),  # first_data_block_offset
            _field_varint(10, data_block_offsets[-1]),  # last_data_block_offset: the offset OF the last block
            _field_bytes(11, HUDI_COMPARATOR.encode()),
            _field_varint(12, CODEC_GZ),
        ]
    )
