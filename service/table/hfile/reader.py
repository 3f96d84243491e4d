"""Read an HFile v3 as Hudi 0.14/0.15 writes it (MDT base files `.hfile`, HFile log data blocks).

Hudi writes these through HBase 2.4's `HFile.getWriterFactory` (`HoodieAvroHFileWriter` for base
files, `HoodieHFileDataBlock.serializeRecords` / 0.15's `HFileUtils.serializeRecordsToLogBlock` for
log blocks) and reads them back with `HoodieAvroHFileReader` (HBase's reader) or, optionally in
0.15, its own `hudi-io` `HFileReaderImpl`. Layout, front to back:

    data blocks (DATABLK*), leaf index blocks (IDXLEAF2) between them when the index is multi-level
    [load-on-open section] root data index (IDXROOT2), intermediate index blocks (IDXINTE2) before
        it when 3+ levels, meta index (IDXROOT2), file info (FILEINF2)
    trailer: 4096 bytes, `TRABLK"$` + delimited HFileTrailerProto, version int in the last 4 bytes

Every block: a 33-byte header (magic, on-disk size without header, uncompressed size without
header, previous block offset, checksum type, bytes per checksum, on-disk data size with header),
the payload compressed with the trailer's codec, then one checksum per `bytesPerChecksum` chunk of
header + payload (`ChecksumUtil`). Cells are `KeyValue`s: int32 key length, int32 value length,
key (int16 row length, row, byte family length, family, qualifier, int64 timestamp, byte type),
value, then tags (v3, when the file info has `hfile.MAX_TAGS_LEN`) and the MVCC version as a
Hadoop vlong (when `KEY_VALUE_VERSION` is 1), as `HFileReaderImpl.HFileScannerImpl` reads them.

Every length read from the file is checked against the buffer: a malformed file raises
CorruptTableError naming the file and the offset, never an IndexError or a short read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from service.errors import CorruptTableError
from service.table.hfile.bytes_reader import ByteCursor
from service.table.hfile.checksum import CHECKSUM_NULL, chunk_checksums
from service.table.hfile.proto import delimited, read_fields, single_bytes, single_int

TRAILER_SIZE = 4096  # FixedFileTrailer.getTrailerSize(3)
TRAILER_MAGIC = b'TRABLK"$'
BLOCK_HEADER_SIZE = 33  # HConstants.HFILEBLOCK_HEADER_SIZE (with checksum fields, minor version >= 1)
PBUF_MAGIC = b"PBUF"  # ProtobufMagic.PB_MAGIC before FileInfoProto

DATA_MAGIC = b"DATABLK*"
LEAF_INDEX_MAGIC = b"IDXLEAF2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
ROOT_INDEX_MAGIC = b"IDXROOT2"
FILE_INFO_MAGIC = b"FILEINF2"

# Compression.Algorithm ordinals as the trailer stores them.
CODEC_GZ = 1
CODEC_NONE = 2
_CODEC_NAMES = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}

# FileInfo keys HBase reads (HFileInfo, HFileReaderImpl) and Hudi writes (HoodieAvroHFileReader).
KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
MAX_TAGS_LEN = b"hfile.MAX_TAGS_LEN"
LAST_KEY = b"hfile.LASTKEY"
SCHEMA_KEY = b"schema"  # HoodieAvroHFileReader.SCHEMA_KEY: the Avro writer schema of the values

# KeyValue: int16 row length + byte family length + int64 timestamp + byte type around the row.
_KEY_FIXED_BYTES = 2 + 1 + 8 + 1


@dataclass(frozen=True)
class Trailer:
    """FixedFileTrailer (HFileTrailerProto fields 1-12) and the version from the last 4 bytes."""

    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    uncompressed_data_index_size: int
    total_uncompressed_bytes: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator_class_name: str
    compression_codec: int


@dataclass(frozen=True)
class BlockIndexEntry:
    """One index entry: the block's offset, its on-disk size (header and checksums included) and the
    full cell key of its first cell."""

    offset: int
    on_disk_size: int
    first_key: bytes


@dataclass(frozen=True)
class Cell:
    """One KeyValue. For Hudi's MDT, `row` is the record key and `value` the Avro-encoded record."""

    row: bytes
    family: bytes
    qualifier: bytes
    timestamp: int
    type: int
    value: bytes
    mvcc: int = 0


@dataclass(frozen=True)
class _Block:
    magic: bytes
    offset: int
    on_disk_size: int  # header + payload + checksums
    payload: bytes  # uncompressed, without header and checksums


class HFileReader:
    """An HFile held in memory. `source` (a path or `<log file>@<block offset>`) names it in errors."""

    def __init__(self, data: bytes, source: str) -> None:
        self._data = data
        self.source = source
        self.trailer = self._read_trailer()
        if self.trailer.compression_codec not in (CODEC_GZ, CODEC_NONE):
            name = _CODEC_NAMES.get(self.trailer.compression_codec, str(self.trailer.compression_codec))
            raise CorruptTableError(f"{source}: HFile compression {name} not supported (Hudi writes GZ)")
        self.file_info = self._read_file_info()
        self.data_index = self._read_data_index()

    # ------------------------------------------------------------------ public reads
    def items(self) -> list[tuple[str, bytes]]:
        """Every (row key, value) in file order, which is Hudi's key order (checked while reading)."""
        return [(self._row_text(cell.row), cell.value) for cell in self.cells()]

    def items_with_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        """The (key, value) pairs whose key starts with `prefix`; only blocks that may hold them are read."""
        wanted = prefix.encode("utf-8")
        found = []
        for cell in self.cells(self._blocks_for_prefix(wanted)):
            if cell.row.startswith(wanted):
                found.append((self._row_text(cell.row), cell.value))
        return found

    def cells(self, entries: list[BlockIndexEntry] | None = None) -> Iterator[Cell]:
        """Cells of the data blocks named by `entries` (all by default), rows checked non-decreasing."""
        every = entries is None
        previous: bytes | None = None
        count = 0
        for entry in self.data_index if entries is None else entries:
            block = self._read_block(entry.offset, DATA_MAGIC, entry.on_disk_size)
            for cell in self._block_cells(block):
                # HoodieHBaseKVComparator (CellComparatorImpl): rows compare as unsigned bytes; Hudi
                # 0.15 may keep duplicate keys in one log block, so equal rows are allowed.
                if previous is not None and cell.row < previous:
                    raise CorruptTableError(
                        f"{self.source}: data block at offset {block.offset}: key {cell.row!r} "
                        f"sorts before the previous key {previous!r}"
                    )
                previous = cell.row
                count += 1
                yield cell
        if every and count != self.trailer.entry_count:
            raise CorruptTableError(
                f"{self.source}: {count} cells in the data blocks, trailer entry_count says "
                f"{self.trailer.entry_count}"
            )

    @cached_property
    def schema_text(self) -> str | None:
        """The `schema` file-info entry (Hudi's Avro writer schema), if present."""
        raw = self.file_info.get(SCHEMA_KEY)
        return None if raw is None else raw.decode("utf-8")

    # ------------------------------------------------------------------ trailer
    def _read_trailer(self) -> Trailer:
        size = len(self._data)
        if size < TRAILER_SIZE:
            raise CorruptTableError(f"{self.source}: {size} bytes, shorter than an HFile v3 trailer")
        version = int.from_bytes(self._data[-4:], "big")
        major, minor = version & 0x00FFFFFF, version >> 24
        if major != 3:
            raise CorruptTableError(f"{self.source}: HFile major version {major}, expected 3")
        # HBase's writer (Hudi 0.x, 1.0) stamps minor version 3; Hudi 1.1's own writer
        # (`org.apache.hudi.io.hfile.HFileWriterImpl`) stamps 0 yet writes the same 33-byte block
        # headers with checksum type NULL, so both are read with those headers.
        if minor not in (0, 1, 2, 3):
            raise CorruptTableError(f"{self.source}: HFile v3 minor version {minor}, expected 0 to 3")
        cur = ByteCursor(self._data, self.source, size - TRAILER_SIZE, size - 4)
        if cur.read(len(TRAILER_MAGIC), "trailer magic") != TRAILER_MAGIC:
            raise CorruptTableError(f"{self.source}: at offset {size - TRAILER_SIZE}: no HFile trailer magic")
        fields = read_fields(delimited(cur, "HFileTrailerProto"), "HFileTrailerProto")
        comparator = single_bytes(fields, 11) or b""
        trailer = Trailer(
            major_version=major,
            minor_version=minor,
            file_info_offset=single_int(fields, 1),
            load_on_open_offset=single_int(fields, 2),
            uncompressed_data_index_size=single_int(fields, 3),
            total_uncompressed_bytes=single_int(fields, 4),
            data_index_count=single_int(fields, 5),
            meta_index_count=single_int(fields, 6),
            entry_count=single_int(fields, 7),
            num_data_index_levels=single_int(fields, 8, 1),
            first_data_block_offset=single_int(fields, 9),
            last_data_block_offset=single_int(fields, 10),
            comparator_class_name=comparator.decode("utf-8", "replace"),
            compression_codec=single_int(fields, 12, CODEC_NONE),
        )
        limit = size - TRAILER_SIZE
        for name in ("file_info_offset", "load_on_open_offset"):
            if not 0 <= getattr(trailer, name) < limit:
                raise CorruptTableError(
                    f"{self.source}: trailer {name} {getattr(trailer, name)} outside the file"
                )
        if trailer.num_data_index_levels < 1:
            raise CorruptTableError(
                f"{self.source}: trailer num_data_index_levels {trailer.num_data_index_levels}"
            )
        return trailer

    # ------------------------------------------------------------------ blocks
    def _read_block(self, offset: int, magic: bytes, expected_on_disk: int | None = None) -> _Block:
        end_of_blocks = len(self._data) - TRAILER_SIZE
        where = f"block at offset {offset}"
        if not 0 <= offset <= end_of_blocks - BLOCK_HEADER_SIZE:
            raise CorruptTableError(f"{self.source}: {where} outside the file")
        cur = ByteCursor(self._data, self.source, offset, end_of_blocks)
        found = cur.read(8, "block magic")
        if found != magic:
            raise CorruptTableError(f"{self.source}: {where}: magic {found!r}, expected {magic!r}")
        on_disk_without_header = cur.i32("onDiskSizeWithoutHeader")
        uncompressed = cur.i32("uncompressedSizeWithoutHeader")
        cur.i64("prevBlockOffset")
        checksum_type = cur.u8("checksumType")
        bytes_per_checksum = cur.i32("bytesPerChecksum")
        data_with_header = cur.i32("onDiskDataSizeWithHeader")
        total = BLOCK_HEADER_SIZE + on_disk_without_header
        if on_disk_without_header < 0 or total > end_of_blocks - offset:
            raise CorruptTableError(
                f"{self.source}: {where}: on-disk size {on_disk_without_header} out of range"
            )
        if not BLOCK_HEADER_SIZE <= data_with_header <= total or uncompressed < 0:
            raise CorruptTableError(
                f"{self.source}: {where}: onDiskDataSizeWithHeader {data_with_header} / uncompressed "
                f"size {uncompressed} inconsistent with on-disk size {total}"
            )
        if expected_on_disk is not None and expected_on_disk != total:
            raise CorruptTableError(
                f"{self.source}: {where}: index says {expected_on_disk} bytes on disk, block header {total}"
            )
        self._verify_checksums(offset, checksum_type, bytes_per_checksum, data_with_header, total)
        raw = self._data[offset + BLOCK_HEADER_SIZE : offset + data_with_header]
        payload = self._decompress(raw, offset)
        if len(payload) != uncompressed:
            raise CorruptTableError(
                f"{self.source}: {where}: {len(payload)} bytes after decompression, "
                f"header says {uncompressed}"
            )
        return _Block(magic, offset, total, payload)

    def _verify_checksums(
        self, offset: int, kind: int, chunk: int, data_with_header: int, total: int
    ) -> None:
        stored = self._data[offset + data_with_header : offset + total]
        if kind == CHECKSUM_NULL:
            return
        try:
            expected = chunk_checksums(kind, self._data[offset : offset + data_with_header], chunk)
        except ValueError as e:
            raise CorruptTableError(f"{self.source}: block at offset {offset}: {e}") from None
        if len(stored) != 4 * len(expected):
            raise CorruptTableError(
                f"{self.source}: block at offset {offset}: {len(stored)} checksum bytes, "
                f"expected {4 * len(expected)}"
            )
        for i, value in enumerate(expected):
            if int.from_bytes(stored[4 * i : 4 * i + 4], "big") != value:
                raise CorruptTableError(
                    f"{self.source}: block at offset {offset}: checksum mismatch in chunk {i} (bytes "
                    f"{offset + i * chunk}..{offset + min((i + 1) * chunk, data_with_header)})"
                )

    def _decompress(self, raw: bytes, offset: int) -> bytes:
        if self.trailer.compression_codec == CODEC_NONE:
            return raw
        # HBase's GZ is Hadoop's GzipCodec: one or more gzip members, back to back.
        out = bytearray()
        rest = raw
        try:
            while rest:
                inflater = zlib.decompressobj(wbits=31)
                out += inflater.decompress(rest)
                if not inflater.eof:
                    raise CorruptTableError(f"{self.source}: block at offset {offset}: truncated gzip stream")
                rest = inflater.unused_data
        except zlib.error as e:
            raise CorruptTableError(f"{self.source}: block at offset {offset}: bad gzip data: {e}") from None
        return bytes(out)

    # ------------------------------------------------------------------ load-on-open section
    def _read_file_info(self) -> dict[bytes, bytes]:
        block = self._read_block(self.trailer.file_info_offset, FILE_INFO_MAGIC)
        source = f"{self.source} (file info at offset {block.offset})"
        cur = ByteCursor(block.payload, source)
        if cur.read(len(PBUF_MAGIC), "file info magic") != PBUF_MAGIC:
            raise CorruptTableError(f"{source}: file info is not protobuf (no PBUF magic)")
        info: dict[bytes, bytes] = {}
        fields = read_fields(delimited(cur, "FileInfoProto"), "FileInfoProto")
        for pair in fields.get(1, []):
            if not isinstance(pair, bytes):
                raise CorruptTableError(f"{source}: FileInfoProto map_entry is not a message")
            kv = read_fields(ByteCursor(pair, source), "BytesBytesPair")
            key, value = single_bytes(kv, 1), single_bytes(kv, 2)
            if key is None:
                raise CorruptTableError(f"{source}: file info entry without a key")
            info[key] = value or b""
        return info

    def _read_data_index(self) -> list[BlockIndexEntry]:
        """Data block entries in order, walking a multi-level index down to its leaves
        (HFileBlockIndex.BlockIndexReader: root entries point at intermediate/leaf index blocks)."""
        root = self._read_block(self.trailer.load_on_open_offset, ROOT_INDEX_MAGIC)
        source = f"{self.source} (root data index at offset {root.offset})"
        cur = ByteCursor(root.payload, source)
        entries = []
        for _ in range(self.trailer.data_index_count):
            offset = cur.i64("index entry offset")
            size = cur.i32("index entry on-disk size")
            key_len = cur.length(cur.hadoop_vlong("index entry key length"), "index entry key length")
            entries.append(BlockIndexEntry(offset, size, cur.read(key_len, "index entry key")))
        # With more than one level, mid-key metadata follows the entries (not needed to read).
        for level in range(2, self.trailer.num_data_index_levels + 1):
            magic = (
                LEAF_INDEX_MAGIC if level == self.trailer.num_data_index_levels else INTERMEDIATE_INDEX_MAGIC
            )
            entries = [e for parent in entries for e in self._non_root_entries(parent, magic)]
        for i, entry in enumerate(entries):
            if i and self._row_of_key(entry.first_key) < self._row_of_key(entries[i - 1].first_key):
                raise CorruptTableError(f"{self.source}: data index entries out of key order at entry {i}")
        return entries

    def _non_root_entries(self, parent: BlockIndexEntry, magic: bytes) -> list[BlockIndexEntry]:
        """HFileBlockIndex's non-root format: int32 n, int32 secondary offsets[n + 1], then entries of
        (int64 offset, int32 on-disk size, key) whose lengths the secondary offsets give."""
        block = self._read_block(parent.offset, magic, parent.on_disk_size)
        source = f"{self.source} (index block at offset {block.offset})"
        cur = ByteCursor(block.payload, source)
        count = cur.i32("index entry count")
        if count < 0 or 4 * (count + 1) > cur.remaining:
            raise cur.fail(f"index entry count {count} out of range")
        secondary = [cur.i32("secondary index") for _ in range(count + 1)]
        base = cur.pos
        entries = []
        for i in range(count):
            start, stop = secondary[i], secondary[i + 1]
            if not 0 <= start <= stop - 12 or base + stop > cur.end:
                raise cur.fail(f"index entry {i} spans [{start}, {stop}), malformed")
            entry = ByteCursor(block.payload, source, base + start, base + stop)
            offset = entry.i64("index entry offset")
            size = entry.i32("index entry on-disk size")
            entries.append(BlockIndexEntry(offset, size, entry.read(entry.remaining, "index entry key")))
        return entries

    def _blocks_for_prefix(self, prefix: bytes) -> list[BlockIndexEntry]:
        # Block i holds rows in [first_i, first_{i+1}]; rows starting with `prefix` are one contiguous
        # range, so keep the blocks whose span can meet it.
        rows = [self._row_of_key(e.first_key) for e in self.data_index]
        keep = []
        for i, entry in enumerate(self.data_index):
            starts_before_range_ends = rows[i] < prefix or rows[i].startswith(prefix)
            next_row = rows[i + 1] if i + 1 < len(rows) else None
            ends_after_range_starts = next_row is None or next_row >= prefix
            if starts_before_range_ends and ends_after_range_starts:
                keep.append(entry)
        return keep

    # ------------------------------------------------------------------ cells
    @cached_property
    def _includes_mvcc(self) -> bool:
        # HFileReaderImpl: includesMemstoreTS iff KEY_VALUE_VERSION == KEY_VALUE_VER_WITH_MEMSTORE (1).
        raw = self.file_info.get(KEY_VALUE_VERSION)
        return raw is not None and len(raw) == 4 and int.from_bytes(raw, "big") == 1

    @cached_property
    def _includes_tags(self) -> bool:
        # HFileInfo.initMetaAndIndex (v3): tags are present iff the file info records MAX_TAGS_LEN.
        return MAX_TAGS_LEN in self.file_info

    def _block_cells(self, block: _Block) -> Iterator[Cell]:
        cur = ByteCursor(block.payload, f"{self.source} (data block at offset {block.offset})")
        while cur.remaining:
            key_len = cur.length(cur.i32("key length"), "key length")
            value_len = cur.i32("value length")
            key = cur.sub(key_len, "cell key")
            value = cur.read(cur.length(value_len, "value length"), "cell value")
            row_len = key.length(key.i16("row length"), "row length")
            row = key.read(row_len, "row")
            family = key.read(key.length(key.u8("family length"), "family length"), "family")
            qualifier_len = key_len - _KEY_FIXED_BYTES - row_len - len(family)
            qualifier = key.read(key.length(qualifier_len, "qualifier length"), "qualifier")
            timestamp = key.i64("timestamp")
            kind = key.u8("type")
            if self._includes_tags:
                cur.skip(cur.length(cur.i16("tags length") & 0xFFFF, "tags length"), "tags")
            mvcc = cur.hadoop_vlong("memstore ts") if self._includes_mvcc else 0
            yield Cell(row, family, qualifier, timestamp, kind, value, mvcc)

    def _row_of_key(self, key: bytes) -> bytes:
        cur = ByteCursor(key, f"{self.source} (index key)")
        return cur.read(cur.length(cur.i16("row length"), "row length"), "row")

    def _row_text(self, row: bytes) -> str:
        try:
            return row.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptTableError(f"{self.source}: key {row!r} is not UTF-8: {e}") from None
