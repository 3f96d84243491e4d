"""Typed blocks of a Hudi log file (log format version 1, as 0.14/0.15 writers produce them).

Each block read from a log file becomes one frozen dataclass. Codes are Java enum ordinals and must
never be renumbered: `HoodieLogBlock.HoodieLogBlockType` for block types,
`HoodieLogBlock.HeaderMetadataType` for header keys, `HoodieCommandBlock.HoodieCommandBlockTypeEnum`
for command blocks.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import pyarrow as pa

from service.errors import UnsupportedLogBlockError

MAGIC = b"#HUDI#"  # `HoodieLogFormat.MAGIC`
LOG_FORMAT_VERSION = 1  # `HoodieLogFormat.CURRENT_VERSION`; version 0 (no header) predates 0.5
BLOCK_CONTENT_VERSION = 3  # `HoodieLogBlock.version`: Avro delete records, data blocks with a count


class LogBlockType(IntEnum):
    """`HoodieLogBlock.HoodieLogBlockType`, by ordinal."""

    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2  # reader-side only, never written
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6


class HeaderKey(IntEnum):
    """`HoodieLogBlock.HeaderMetadataType` of 0.14.1/0.15.0 and 1.0/1.1 (table version 8 adds 7 and 8),
    by ordinal. A Java reader maps an ordinal with `HeaderMetadataType.values()[idx]`, so a higher
    ordinal comes from a newer writer and is refused.
    """

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7  # "true" on a partial-update block: its schema holds only the columns it updates
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8  # readers use positions only when it matches


class CommandBlockType(IntEnum):
    """`HoodieCommandBlock.HoodieCommandBlockTypeEnum`: ROLLBACK is the only command."""

    ROLLBACK_BLOCK = 0


Header = Mapping[HeaderKey, str]


@dataclass(frozen=True)
class BlockLocation:
    """Where a block sits: the log file (base-relative path) and the byte offset of its magic."""

    path: str
    offset: int
    length: int  # bytes from the magic to the end of the block (reverse pointer included)

    def describe(self) -> str:
        return f"log file {self.path!r}, block at offset {self.offset}"

    def require_version(self, what: str, version: int, supported: int, readers_note: str) -> None:
        """UnsupportedLogBlockError unless `version` (a format or content version field) is the one
        this reader reads; `readers_note` says which Hudi writers write `supported`."""
        if version != supported:
            raise UnsupportedLogBlockError(
                self.path, self.offset, f"{what} {version}; only version {supported} ({readers_note}) is read"
            )


@dataclass(frozen=True)
class DataBlock:
    """An AVRO_DATA_BLOCK or PARQUET_DATA_BLOCK: records of one write, in the header's SCHEMA."""

    location: BlockLocation
    block_type: LogBlockType
    header: Header
    records: pa.Table

    @property
    def instant_time(self) -> str:
        return self.header[HeaderKey.INSTANT_TIME]

    @property
    def is_partial(self) -> bool:
        """A partial update (`HoodieLogBlock.isPartial`): its records hold only the columns of its SCHEMA,
        the others keep the older record's values."""
        return self.header.get(HeaderKey.IS_PARTIAL, "").strip().lower() == "true"


@dataclass(frozen=True)
class DeleteRecord:
    """`org.apache.hudi.avro.model.HoodieDeleteRecord`: a key and the ordering value it was deleted at.

    `ordering_value` is the unwrapped value of the Avro wrapper union (None when absent);
    `ordering_type` names the wrapper (`IntWrapper`, `LongWrapper`, `StringWrapper`, ...) because
    Java's `HoodieMergedLogRecordScanner.processNextDeletedRecord` compares only values of one class.
    """

    record_key: str | None
    partition_path: str | None
    ordering_value: Any = None
    ordering_type: str | None = None


@dataclass(frozen=True)
class DeleteBlock:
    location: BlockLocation
    header: Header
    records: tuple[DeleteRecord, ...] = field(repr=False)

    @property
    def instant_time(self) -> str:
        return self.header[HeaderKey.INSTANT_TIME]


@dataclass(frozen=True)
class CommandBlock:
    """A rollback command: blocks of TARGET_INSTANT_TIME read before it are void (`HoodieCommandBlock`)."""

    location: BlockLocation
    header: Header
    command: CommandBlockType

    @property
    def instant_time(self) -> str:
        return self.header[HeaderKey.INSTANT_TIME]

    @property
    def target_instant_time(self) -> str:
        return self.header[HeaderKey.TARGET_INSTANT_TIME]


@dataclass(frozen=True)
class CorruptBlock:
    """Bytes `HoodieLogFileReader.createCorruptBlock` would wrap: a torn write, up to the next magic."""

    location: BlockLocation
    reason: str


LogBlock = DataBlock | DeleteBlock | CommandBlock | CorruptBlock


def _encode_map(entries: Header) -> bytes:
    # HoodieLogBlock.getLogMetadataBytes: int32 count, then per entry int32 ordinal, int32 length, bytes.
    out = bytearray(struct.pack(">i", len(entries)))
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out += struct.pack(">ii", int(key), len(raw)) + raw
    return bytes(out)


def encode_log_block(block_type: LogBlockType, header: Header, content: bytes) -> bytes:
    """One block framed as `HoodieLogFormatWriter.appendBlocks` writes it (big-endian): magic, int64
    length of everything after it, int32 format version, int32 block type, header map, int64 content
    length, content, footer map (always empty in Java), int64 reverse pointer = bytes written before
    it (magic, length field and the block up to the pointer), which `HoodieLogFileReader.
    isBlockCorrupted` checks."""
    body = (
        struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type))
        + _encode_map(header)
        + struct.pack(">q", len(content))
        + content
        + _encode_map({})
    )
    block_length = len(body) + 8
    return MAGIC + struct.pack(">q", block_length) + body + struct.pack(">q", len(MAGIC) + block_length)
