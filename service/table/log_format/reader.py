"""Read the blocks of one Hudi log file, as Java's `HoodieLogFileReader` does.

Framing (log format version 1, `HoodieLogFormatWriter.appendBlocks`), all integers big-endian:
magic `#HUDI#`, int64 block size (bytes after this field to the end of the block), int32 format
version, int32 block type, header map, int64 content length, content, footer map, int64 reverse
pointer (block size + 6).

Torn writes (`HoodieLogFileReader.isBlockCorrupted`): unless the storage is write-transactional
(`StorageSchemes.isWriteTransactional`: s3, s3a, gs), the reader checks that the int64 at the end of
the declared block equals block size + 6 and is followed by the next magic or the end of the file.
A block failing that check, or whose size runs past the end, becomes a CORRUPT block spanning to
the next `#HUDI#` (`scanForNextAvailableBlockOffset`) or to the end of the file; it is skipped by
the merge, and removed by a later rollback command. On write-transactional storage Java skips the
check and would fail on such bytes; so does this reader.

Every size read from the file is checked against the bytes present before it is used.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from service.errors import CorruptLogBlockError, UnsupportedLogBlockError
from service.table.log_format.blocks import (
    LOG_FORMAT_VERSION,
    MAGIC,
    BlockLocation,
    CommandBlock,
    CommandBlockType,
    CorruptBlock,
    DataBlock,
    DeleteBlock,
    Header,
    HeaderKey,
    LogBlock,
    LogBlockType,
)
from service.table.log_format.content import decode_avro_data, decode_deletes, decode_parquet_data

WRITE_TRANSACTIONAL_SCHEMES = frozenset({"s3", "s3a", "gs"})  # `StorageSchemes.isWriteTransactional`
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_MAGIC_LEN = len(MAGIC)


def read_log_blocks(data: bytes, path: str, *, write_transactional: bool = False) -> Iterator[LogBlock]:
    """Blocks of the log file `data` (the whole file) in file order; `path` names it in errors."""
    view = memoryview(data)
    pos = 0
    while True:
        if len(view) - pos < _MAGIC_LEN:
            return  # `HoodieLogFileReader.readMagic`: EOF (even mid-magic) ends the file
        if view[pos : pos + _MAGIC_LEN] != MAGIC:
            raise CorruptLogBlockError(path, pos, "no #HUDI# magic at the start of the block")
        start = pos
        after_magic = pos + _MAGIC_LEN
        reason = _torn_write(view, after_magic)
        if reason is not None:
            if write_transactional:
                raise CorruptLogBlockError(path, start, f"{reason} on write-transactional storage")
            found = data.find(MAGIC, after_magic)
            end = len(view) if found < 0 else found
            yield CorruptBlock(BlockLocation(path, start, end - start), reason)
            pos = end
            continue
        (block_size,) = _LONG.unpack_from(view, after_magic)
        end = after_magic + 8 + block_size
        yield _parse_block(view[after_magic + 8 : end], BlockLocation(path, start, end - start))
        pos = end


def _torn_write(view: memoryview, after_magic: int) -> str | None:
    """Why `HoodieLogFileReader.isBlockCorrupted` would call the block at `after_magic` corrupt."""
    if len(view) - after_magic < 8:
        return "the file ends inside the block size"
    (block_size,) = _LONG.unpack_from(view, after_magic)
    body = after_magic + 8
    if block_size < 8 or block_size > len(view) - body:
        return f"block size {block_size} runs past the end of the file"
    (reverse_pointer,) = _LONG.unpack_from(view, body + block_size - 8)
    if reverse_pointer - _MAGIC_LEN != block_size:
        return f"block size {block_size} does not match the reverse pointer {reverse_pointer}"
    following = view[body + block_size : body + block_size + _MAGIC_LEN]
    if len(following) == _MAGIC_LEN and following != MAGIC:
        return "no #HUDI# magic after the block"
    return None


class _Body:
    """Cursor over one block's bytes after its size field (the size already checked)."""

    def __init__(self, body: memoryview, location: BlockLocation) -> None:
        self.body = body
        self.pos = 0
        self.location = location

    def fail(self, reason: str) -> CorruptLogBlockError:
        return CorruptLogBlockError(self.location.path, self.location.offset, reason)

    def take(self, size: int, field: str) -> memoryview:
        if size < 0 or size > len(self.body) - self.pos:
            raise self.fail(
                f"{field} of {size} bytes does not fit in the block ({len(self.body) - self.pos} left)"
            )
        out = self.body[self.pos : self.pos + size]
        self.pos += size
        return out

    def int32(self, field: str) -> int:
        return int(_INT.unpack(self.take(4, field))[0])

    def int64(self, field: str) -> int:
        return int(_LONG.unpack(self.take(8, field))[0])

    def metadata(self, what: str) -> Header:
        """`HoodieLogBlock.getLogMetadata`: int32 count, then (int32 key ordinal, int32 length, bytes)."""
        count = self.int32(f"{what} entry count")
        if count < 0 or count * 8 > len(self.body) - self.pos:
            raise self.fail(f"{what} claims {count} entries")
        out: dict[HeaderKey, str] = {}
        for _ in range(count):
            ordinal = self.int32(f"{what} key")
            value = self.take(self.int32(f"{what} value length"), f"{what} value")
            if ordinal < 0 or ordinal > max(HeaderKey):
                raise UnsupportedLogBlockError(
                    self.location.path,
                    self.location.offset,
                    f"{what} key ordinal {ordinal} is not in Hudi 1.1's HeaderMetadataType "
                    "(written by a newer Hudi); refused",
                )
            try:
                out[HeaderKey(ordinal)] = bytes(value).decode("utf-8")
            except UnicodeDecodeError as err:
                raise self.fail(f"{what} {HeaderKey(ordinal).name} is not UTF-8: {err}") from err
        return out


@dataclass(frozen=True)
class BlockFrame:
    """One block's framing, its content not yet decoded."""

    block_type: LogBlockType
    header: Header
    content: memoryview
    location: BlockLocation


def read_block_frames(data: bytes, path: str) -> Iterator[BlockFrame]:
    """The blocks of a log file whose blocks carry no instant (the archived timeline of layout 1),
    framed as `read_log_blocks` frames them; a torn block is an error here, not a CORRUPT block."""
    for block_size, start, body in _block_bodies(data, path):
        location = BlockLocation(path, start, block_size)
        yield _frame(body, location)


def _block_bodies(data: bytes, path: str) -> Iterator[tuple[int, int, memoryview]]:
    view = memoryview(data)
    pos = 0
    while len(view) - pos >= _MAGIC_LEN:
        if view[pos : pos + _MAGIC_LEN] != MAGIC:
            raise CorruptLogBlockError(path, pos, "no #HUDI# magic at the start of the block")
        reason = _torn_write(view, pos + _MAGIC_LEN)
        if reason is not None:
            raise CorruptLogBlockError(path, pos, reason)
        (block_size,) = _LONG.unpack_from(view, pos + _MAGIC_LEN)
        end = pos + _MAGIC_LEN + 8 + block_size
        yield end - pos, pos, view[pos + _MAGIC_LEN + 8 : end]
        pos = end


def _frame(body: memoryview, location: BlockLocation) -> BlockFrame:
    cur = _Body(body, location)
    location.require_version(
        "log format version",
        cur.int32("log format version"),
        LOG_FORMAT_VERSION,
        "`HoodieLogFormat.CURRENT_VERSION`, every writer since Hudi 0.5",
    )
    type_code = cur.int32("block type")
    try:
        block_type = LogBlockType(type_code)
    except ValueError:
        raise UnsupportedLogBlockError(
            location.path, location.offset, f"block type {type_code} is unknown to Hudi 0.14/0.15"
        ) from None
    header = cur.metadata("header")
    content = cur.take(cur.int64("content length"), "content")
    cur.metadata("footer")
    cur.int64("reverse pointer")
    if cur.pos != len(body):
        raise cur.fail(f"{len(body) - cur.pos} bytes between the reverse pointer and the block end")
    return BlockFrame(block_type, header, content, location)


def _parse_block(body: memoryview, location: BlockLocation) -> LogBlock:
    frame = _frame(body, location)
    block_type, header, content = frame.block_type, frame.header, frame.content
    cur = _Body(body, location)
    if block_type in (LogBlockType.HFILE_DATA_BLOCK, LogBlockType.CDC_DATA_BLOCK, LogBlockType.CORRUPT_BLOCK):
        # HFile blocks belong to the metadata table (its reader is separate work); CDC blocks live
        # only in `.cdc` log files, which scanners skip; a CORRUPT block is never written.
        raise UnsupportedLogBlockError(
            location.path, location.offset, f"{block_type.name} is not read by the data-table log reader"
        )
    if HeaderKey.INSTANT_TIME not in header:
        raise cur.fail(f"{block_type.name} has no INSTANT_TIME header")
    if block_type is LogBlockType.COMMAND_BLOCK:
        return _command_block(header, location)
    if block_type is LogBlockType.DELETE_BLOCK:
        return DeleteBlock(location, header, decode_deletes(content, location))
    if HeaderKey.SCHEMA not in header:
        raise cur.fail(f"{block_type.name} has no SCHEMA header")
    if block_type is LogBlockType.AVRO_DATA_BLOCK:
        records = decode_avro_data(content, header[HeaderKey.SCHEMA], location)
    else:
        records = decode_parquet_data(content, header[HeaderKey.SCHEMA], location)
    return DataBlock(location, block_type, header, records)


def _command_block(header: Header, location: BlockLocation) -> CommandBlock:
    raw = header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if raw is None or not raw.isdigit() or int(raw) not in {c.value for c in CommandBlockType}:
        raise UnsupportedLogBlockError(
            location.path, location.offset, f"command block type {raw!r} is not ROLLBACK_BLOCK (0)"
        )
    if HeaderKey.TARGET_INSTANT_TIME not in header:
        raise CorruptLogBlockError(
            location.path, location.offset, "rollback command has no TARGET_INSTANT_TIME"
        )
    return CommandBlock(location, header, CommandBlockType(int(raw)))
