"""Log-block framing of the metadata table's log files: the minimum the MDT `files` reader needs.

To be unified with the general log-file reader (issue 14) when both land: this module reads only
what Hudi 0.14/0.15 writes into MDT logs (HFile data blocks, rollback command blocks, the empty
delete block of a partition's initialisation) and refuses anything else by name.

Framing, as `HoodieLogFormatWriter.appendBlocks` writes and `HoodieLogFileReader.readBlock` reads it
(big-endian): `#HUDI#`, int64 block length (everything after this field), int32 log format version,
int32 block type, header map, int64 content length, content, footer map, int64 reverse pointer.
A map is int32 count then (int32 key ordinal, int32 byte length, UTF-8 bytes) per entry. The reverse
pointer is the number of bytes written before it (magic + length field + block length - 8), i.e.
magic length + block length. A block whose length runs past the end of the file or whose reverse
pointer disagrees is a corrupt block, as `HoodieLogFileReader.isBlockCorrupted` decides; the reader
then resumes at the next magic (`scanForNextAvailableBlockOffset`) and the scanner skips it, like
`AbstractHoodieLogRecordReader`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.hfile.bytes_reader import ByteCursor
from service.table.log_format.blocks import MAGIC, CommandBlockType, HeaderKey, LogBlockType

# One framing: the block types and header keys are `service.table.log_format.blocks`'s.
BlockType = LogBlockType

ROLLBACK_COMMAND = str(int(CommandBlockType.ROLLBACK_BLOCK))  # the COMMAND_BLOCK_TYPE header value

# HoodieDeleteBlock content, version 3: int32 version, int32 length, Avro HoodieDeleteRecordList.
# An empty list is one zero byte (array block count 0): what BTMW.initializeFileGroups writes.
_DELETE_BLOCK_EMPTY = b"\x00"


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file. `offset` is where its magic starts; `content` is the raw payload."""

    log_file: str
    offset: int
    block_type: BlockType
    header: dict[HeaderKey, str] = field(default_factory=dict)
    content: bytes = b""

    @property
    def instant_time(self) -> str:
        return self.header.get(HeaderKey.INSTANT_TIME, "")

    @property
    def source(self) -> str:
        return f"{self.log_file}@{self.offset}"

    def is_rollback_command(self) -> bool:
        return (
            self.block_type is BlockType.COMMAND_BLOCK
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )

    def check_empty_delete(self) -> None:
        """A delete block of the MDT `files` partition must be the empty one written at initialisation:
        0.14/0.15 never delete `files` records by key (deletions are `isDeleted` entries)."""
        cur = ByteCursor(self.content, self.source)
        version = cur.i32("delete block version")
        size = cur.length(cur.i32("delete block length"), "delete block length")
        body = cur.read(size, "delete block records")
        if version != 3 or body != _DELETE_BLOCK_EMPTY:
            raise UnsupportedTableError(
                f"{self.source}: delete block (version {version}, {size} bytes) with records in the MDT "
                "files partition; Hudi 0.14/0.15 writes none there, refusing to guess its meaning"
            )


def read_log_blocks(data: bytes, log_file: str) -> list[LogBlock]:
    """Every block of one log file in order; framing errors become CORRUPT_BLOCK entries."""
    blocks: list[LogBlock] = []
    pos = 0
    while pos < len(data):
        if data[pos : pos + len(MAGIC)] != MAGIC:
            raise CorruptTableError(f"{log_file}: at offset {pos}: no log block magic {MAGIC!r}")
        block = _read_block(data, pos, log_file)
        if block is None:
            nxt = data.find(MAGIC, pos + 1)
            blocks.append(
                LogBlock(
                    log_file, pos, BlockType.CORRUPT_BLOCK, content=data[pos : nxt if nxt >= 0 else None]
                )
            )
            if nxt < 0:
                break
            pos = nxt
            continue
        parsed, pos = block
        blocks.append(parsed)
    return blocks


def _read_block(data: bytes, start: int, log_file: str) -> tuple[LogBlock, int] | None:
    """The block at `start` and the offset after it, or None when its framing is corrupt."""
    cur = ByteCursor(data, log_file, start + len(MAGIC))
    if cur.remaining < 8:
        return None
    block_len = cur.i64("block length")
    if block_len < 8 or block_len > cur.remaining:
        return None
    end = cur.pos + block_len
    # The reverse pointer counts the magic and the block length minus itself: HoodieLogFileReader
    # checks `pointer - magic length == block length`.
    pointer = int.from_bytes(data[end - 8 : end], "big", signed=True)
    if pointer != len(MAGIC) + block_len:
        return None
    body = ByteCursor(data, log_file, cur.pos, end - 8)
    version = body.i32("log format version")
    if version != 1:
        raise CorruptTableError(
            f"{log_file}: block at offset {start}: log format version {version}, expected 1"
        )
    type_ordinal = body.i32("block type")
    try:
        block_type = BlockType(type_ordinal)
    except ValueError:
        raise CorruptTableError(
            f"{log_file}: block at offset {start}: unknown block type {type_ordinal}"
        ) from None
    header = _read_map(body, f"{log_file}: block at offset {start}")
    content = body.read(body.length(body.i64("content length"), "content length"), "block content")
    _read_map(body, f"{log_file}: block at offset {start} footer")
    if body.remaining:
        raise body.fail(f"{body.remaining} unexplained bytes before the block's reverse pointer")
    return LogBlock(log_file, start, block_type, header, content), end


def _read_map(cur: ByteCursor, where: str) -> dict[HeaderKey, str]:
    count = cur.i32("header entry count")
    if count < 0 or count > len(HeaderKey):
        raise cur.fail(f"{where}: {count} header entries")
    out: dict[HeaderKey, str] = {}
    for _ in range(count):
        ordinal = cur.i32("header key")
        try:
            key = HeaderKey(ordinal)
        except ValueError:
            raise cur.fail(f"{where}: unknown header key {ordinal}") from None
        raw = cur.read(cur.length(cur.i32("header value length"), "header value length"), "header value")
        try:
            out[key] = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise cur.fail(f"{where}: header {key.name} is not UTF-8: {e}") from None
    return out
