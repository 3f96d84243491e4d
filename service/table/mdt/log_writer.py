"""Write one instant's records into a new log file of an MDT file group's latest slice.

Java's `HoodieAppendHandle` writes all records of one MDT deltacommit for a file group as one
HFILE_DATA_BLOCK (`HoodieAppendHandle.pickLogDataBlockFormat` maps the MDT's HFILE base format to
it) with the header {SCHEMA, INSTANT_TIME} (no BLOCK_IDENTIFIER for the MDT: `getUpdatedHeader`),
its records sorted by key and each value's `key` blanked (`HoodieHFileDataBlock.serializeRecords` /
0.15's `HFileUtils.serializeRecordsToLogBlock`). On storage without append (local, S3, GCS, ...)
`HoodieLogFormatWriter` rolls over to the next log version, so Java itself leaves one block per new
file there; we always do that: version = highest existing version of the slice + 1, a single
create-if-absent write, and a crashed attempt is removed by deleting that one file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from service.errors import CorruptTableError
from service.table.hfile.writer import write_hfile_columns
from service.table.log_format.blocks import DeleteRecord, HeaderKey, LogBlockType, encode_log_block
from service.table.log_format.content import encode_deletes
from service.table.mdt.files_listing import FILES_PARTITION, FilesSlice, parse_log_file_name
from service.table.mdt.records import ON_DISK_SCHEMA, FilesRecord, encode_files_record, log_block_schema_text
from service.table.mdt.timeline import MDT_BASE
from service.table.storage import Storage

# A write token is `<partition id>-<stage id>-<attempt id>` of the Spark task (FSUtils.makeWriteToken);
# ours is fixed: the version alone makes the name new, and readers order by version first.
WRITE_TOKEN = "0-0-0"


@dataclass(frozen=True)
class LogAppend:
    """The log file written for one MDT deltacommit: what its `HoodieDeltaWriteStat` reports."""

    partition: str  # MDT partition: files, column_stats, bloom_filters
    file_id: str
    base_instant: str
    log_file: str  # name within the MDT partition directory
    version: int
    size: int  # bytes written = file size (a new file holds only this instant's blocks)
    num_records: int
    num_deletes: int = 0

    @property
    def path(self) -> str:
        """MDT-relative path, as the write stat's `path` names it."""
        return f"{self.partition}/{self.log_file}"


def merge_by_key(records: Iterable[FilesRecord], source: str) -> list[FilesRecord]:
    """One record per key (later ones merged onto earlier ones as `HoodieMetadataPayload.preCombine`
    would), sorted as HBase's comparator orders rows: by UTF-8 bytes. 0.14.1's `HoodieHFileDataBlock`
    refuses duplicate keys in a block, so we never write any."""
    merged: dict[str, FilesRecord] = {}
    for record in records:
        old = merged.get(record.key)
        merged[record.key] = record if old is None else old.merged_with(record, source)
    return sorted(merged.values(), key=lambda r: r.key.encode("utf-8"))


def files_data_block(
    records: Iterable[FilesRecord], instant_time: str, source: str, schema_name: str = ON_DISK_SCHEMA
) -> tuple[bytes, int]:
    """The HFILE_DATA_BLOCK bytes of `records` at `instant_time` and its record count."""
    ordered = merge_by_key(records, source)
    cells = [(r.key, encode_files_record(r, schema_name)) for r in ordered]
    return hfile_data_block(cells, instant_time, source, schema_name)


def hfile_data_block(
    cells: Sequence[tuple[str, bytes]], instant_time: str, source: str, schema_name: str = ON_DISK_SCHEMA
) -> tuple[bytes, int]:
    """The HFILE_DATA_BLOCK of already-encoded (key, value) cells in HBase row order (UTF-8 bytes),
    for any MDT partition; refuses a key twice (0.14.1's `HoodieHFileDataBlock` does too)."""
    rows = pa.array([k for k, _ in cells], pa.string()).cast(pa.binary())
    values = pa.array([v for _, v in cells], pa.binary())
    order = pc.sort_indices(rows)  # bytewise, HBase's row order
    rows, values = rows.take(order), values.take(order)
    if len(rows) > 1:
        repeated = pc.equal(rows.slice(1), rows.slice(0, len(rows) - 1))
        if pc.any(repeated).as_py():
            key = rows[int(pc.index(repeated, True).as_py())].as_py().decode("utf-8")
            raise CorruptTableError(f"{source}: MDT key {key!r} twice in one block of instant {instant_time}")
    schema = log_block_schema_text(schema_name)
    content = write_hfile_columns(rows, values, {b"schema": schema.encode("utf-8")}, source=source)
    # Header order as Java's HashMap iterates it (SCHEMA, then INSTANT_TIME), seen in Hudi's blocks.
    header = {HeaderKey.SCHEMA: schema, HeaderKey.INSTANT_TIME: instant_time}
    return encode_log_block(LogBlockType.HFILE_DATA_BLOCK, header, content), len(rows)


def next_log_version(storage: Storage, file_slice: FilesSlice) -> int:
    """One more than the highest log version of (file group, base instant) on storage, any token, and
    1 for a slice without logs (`HoodieLogFile.LOGFILE_BASE_VERSION`). Listed again rather than taken
    from `file_slice`, which holds only committed files."""
    highest = 0
    for name in storage.list_file_names(f"{MDT_BASE}/{file_slice.partition}"):
        parsed = parse_log_file_name(name)
        if (
            parsed is not None
            and parsed.file_id == file_slice.file_id
            and parsed.base_instant == file_slice.base_instant
        ):
            highest = max(highest, parsed.version)
    return highest + 1


def write_files_log(
    storage: Storage,
    file_slice: FilesSlice,
    instant_time: str,
    records: Iterable[FilesRecord],
    schema_name: str = ON_DISK_SCHEMA,
) -> LogAppend:
    """Write the `files` block into `.files-0000-0_<base>.log.<next version>_<token>`."""
    ordered = merge_by_key(records, storage.qualify(f"{MDT_BASE}/{FILES_PARTITION}"))
    cells = [(r.key, encode_files_record(r, schema_name)) for r in ordered]
    return write_log(storage, file_slice, instant_time, cells, schema_name)


def delete_block(keys: Iterable[str], mdt_partition: str, instant_time: str, schema_name: str) -> bytes:
    """A DELETE block of MDT record keys, as Hudi 1.x's `HoodieAppendHandle` writes deleted metadata
    records: keys sorted, `partitionPath` the MDT partition, ordering value int 0 (the
    `DEFAULT_ORDERING_VALUE` a metadata record carries), header INSTANT_TIME and SCHEMA."""
    records = [DeleteRecord(key, mdt_partition, 0, "IntWrapper") for key in sorted(set(keys))]
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: log_block_schema_text(schema_name)}
    return encode_log_block(LogBlockType.DELETE_BLOCK, header, encode_deletes(records))


def write_log(
    storage: Storage,
    file_slice: FilesSlice,
    instant_time: str,
    cells: Sequence[tuple[str, bytes]],
    schema_name: str = ON_DISK_SCHEMA,
    deleted_keys: Sequence[str] = (),
) -> LogAppend:
    """Write a data block of `cells` and/or a delete block of `deleted_keys` (in that order, as
    `HoodieAppendHandle.appendDataAndDeleteBlocks` does) into `.<fileId>_<base>.log.<next
    version>_<token>` of the slice's MDT partition; refuses to overwrite."""
    version = next_log_version(storage, file_slice)
    name = f".{file_slice.file_id}_{file_slice.base_instant}.log.{version}_{WRITE_TOKEN}"
    rel = f"{MDT_BASE}/{file_slice.partition}/{name}"
    blocks, count = [], 0
    if cells:
        data, count = hfile_data_block(cells, instant_time, storage.qualify(rel), schema_name)
        blocks.append(data)
    if deleted_keys:
        blocks.append(delete_block(deleted_keys, file_slice.partition, instant_time, schema_name))
    if not blocks:
        raise CorruptTableError(f"{storage.qualify(rel)}: no records to write for MDT instant {instant_time}")
    content = b"".join(blocks)
    storage.create_if_absent(rel, content)
    return LogAppend(
        file_slice.partition,
        file_slice.file_id,
        file_slice.base_instant,
        name,
        version,
        len(content),
        count,
        len(set(deleted_keys)),
    )
