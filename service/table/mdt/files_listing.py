"""List a table's partitions and files through the MDT `files` partition, as Hudi's readers do.

`HoodieBackedTableMetadata` reads the latest file slice of `files-0000-0` (HFile base file plus its
log files), scans the logs as `AbstractHoodieLogRecordReader` does (only blocks of completed MDT
instants that are also valid for the data table, rollback command blocks honoured), merges the log
records in order and then onto the base file's (`HoodieMetadataPayload.preCombine`), and serves
`__all_partitions__` and the per-partition file lists from the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.hfile.reader import HFileReader
from service.table.mdt.log_blocks import BlockType, HeaderKey, LogBlock, read_log_blocks
from service.table.mdt.records import (
    ALL_PARTITIONS_KEY,
    FilesRecord,
    decode_files_record,
    partition_of_key,
)
from service.table.mdt.timeline import DATA_TABLE_LAYOUT, MDT_BASE, load_mdt_timeline, valid_instant_times
from service.table.properties import TableConfig, load_table_config
from service.table.storage import Storage
from service.table.timeline import Timeline, load_timeline

FILES_PARTITION = "files"
FILES_FILE_ID = "files-0000-0"  # HoodieTableMetadataUtil.getFileIDForFileGroup(FILES, 0)
_BASE_FILE = re.compile(r"^(?P<file_id>[^_]+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d+)\.hfile\Z")
_LOG_FILE = re.compile(
    r"^\.(?P<file_id>[^_]+)_(?P<instant>\d+)\.log\.(?P<version>\d+)(?:_(?P<token>\d+-\d+-\d+))?\Z"
)


@dataclass(frozen=True)
class MdtLogFileName:
    """The parts of an MDT log file name `.<fileId>_<baseInstant>.log.<version>[_<writeToken>]`."""

    file_id: str
    base_instant: str
    version: int
    write_token: str


def parse_log_file_name(name: str) -> MdtLogFileName | None:
    m = _LOG_FILE.match(name)
    if m is None:
        return None
    return MdtLogFileName(m["file_id"], m["instant"], int(m["version"]), m["token"] or "")


@dataclass(frozen=True)
class MetadataPartitions:
    """The data table's `hoodie.table.metadata.partitions` and `...partitions.inflight`."""

    completed: tuple[str, ...]
    inflight: tuple[str, ...]


def metadata_partitions(config: TableConfig) -> MetadataPartitions:
    return MetadataPartitions(tuple(config.metadata_partitions), tuple(config.metadata_partitions_inflight))


def files_partition_served(config: TableConfig) -> bool:
    """`HoodieTableConfig.isMetadataTableAvailable`: the data table lists `files` as a completed MDT
    partition. Then Hudi's readers list through the MDT and every writer (the service's included)
    keeps it in sync; without it an MDT directory is stale (Java re-initialises it)."""
    return FILES_PARTITION in config.metadata_partitions


@dataclass(frozen=True)
class FilesSlice:
    """The latest file slice of an MDT file group (`files-0000-0` unless named): base instant, base
    HFile and logs in order (names within the MDT partition directory)."""

    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]
    partition: str = FILES_PARTITION
    file_id: str = FILES_FILE_ID


def latest_files_slice(storage: Storage, mdt_timeline: Timeline) -> FilesSlice:
    """The slice HoodieTableFileSystemView.getLatestMergedFileSlicesBeforeOrOn would serve for `files`."""
    return latest_slice(storage, mdt_timeline, FILES_PARTITION, FILES_FILE_ID)


def latest_slice(storage: Storage, mdt_timeline: Timeline, mdt_partition: str, file_id: str) -> FilesSlice:
    """The latest file slice of MDT file group `file_id` in `mdt_partition`.

    A base file counts once its instant completed (or precedes the active MDT timeline, i.e. was
    archived). A pending MDT compaction is refused: Hudi's writers complete it inline. In `files`,
    a file of another file group is corrupt (it has one); other partitions hold several.
    """
    source = storage.qualify(f"{MDT_BASE}/{mdt_partition}")
    pending = [i for i in mdt_timeline.pending() if i.action.value in ("compaction", "logcompaction")]
    if pending:
        raise UnsupportedTableError(
            f"{source}: MDT {pending[0].action.value} {pending[0].timestamp} is pending; Hudi's writers "
            "complete it at their next commit, retry then"
        )
    completed = {i.timestamp for i in mdt_timeline.completed()}
    first = mdt_timeline.completed().first
    start = first.timestamp if first else None

    def committed(instant: str) -> bool:
        return instant in completed or (start is not None and instant < start)

    bases: dict[str, str] = {}
    logs: dict[str, list[tuple[int, str, str]]] = {}
    for name in storage.list_file_names(f"{MDT_BASE}/{mdt_partition}"):
        if (m := _BASE_FILE.match(name)) is not None:
            if mdt_partition == FILES_PARTITION:
                _check_file_id(m["file_id"], source, name)
            if m["file_id"] == file_id and committed(m["instant"]):
                bases[m["instant"]] = name
        elif (log := parse_log_file_name(name)) is not None:
            if mdt_partition == FILES_PARTITION:
                _check_file_id(log.file_id, source, name)
            if log.file_id == file_id:
                logs.setdefault(log.base_instant, []).append((log.version, log.write_token, name))
    candidates = set(bases) | {t for t in logs if committed(t)}
    if not candidates:
        raise UnsupportedTableError(
            f"{source}: no committed file slice of {file_id}; the MDT partition {mdt_partition} is not "
            "initialised"
        )
    base_instant = max(candidates)
    # HoodieLogFile.getLogFileComparator: base instant, then version, then write token.
    ordered = tuple(name for _, _, name in sorted(logs.get(base_instant, [])))
    return FilesSlice(base_instant, bases.get(base_instant), ordered, mdt_partition, file_id)


def _check_file_id(file_id: str, source: str, name: str) -> None:
    if file_id != FILES_FILE_ID:
        raise CorruptTableError(f"{source}/{name}: the files partition has one file group, {FILES_FILE_ID}")


@dataclass(frozen=True)
class _Scan:
    latest_instant: str
    completed: frozenset[str]
    inflight: frozenset[str]
    timeline_start: str | None
    valid: frozenset[str]

    def readable(self, block: LogBlock) -> bool | None:
        """AbstractHoodieLogRecordReader.scanInternalV1's filters: None stops the scan (any non-corrupt
        block newer than the latest completed MDT instant), False skips a data or delete block of an
        MDT instant not completed (or inflight) or outside the valid instants."""
        if block.block_type is BlockType.CORRUPT_BLOCK:
            return True
        instant = block.instant_time
        if instant > self.latest_instant:
            return None
        if block.block_type is BlockType.COMMAND_BLOCK:
            return True
        committed = instant in self.completed or (
            self.timeline_start is not None and instant < self.timeline_start
        )
        if not committed or instant in self.inflight:
            return False
        return instant in self.valid


def read_files_records(storage: Storage) -> dict[str, FilesRecord]:
    """Every record of the `files` partition, merged (base file, then log blocks in order)."""
    config = load_table_config(storage)
    partitions = metadata_partitions(config)
    base = storage.qualify(MDT_BASE)
    if FILES_PARTITION in partitions.inflight:
        raise UnsupportedTableError(
            f"{base}: MDT partition {FILES_PARTITION!r} is still initialising "
            f"(hoodie.table.metadata.partitions.inflight={','.join(partitions.inflight)}); "
            "let Hudi's writer finish it"
        )
    if FILES_PARTITION not in partitions.completed:
        raise UnsupportedTableError(
            f"{base}: the table has no MDT {FILES_PARTITION!r} partition "
            f"(hoodie.table.metadata.partitions={','.join(partitions.completed) or '(empty)'})"
        )
    mdt_timeline = load_mdt_timeline(storage)
    done = mdt_timeline.completed()
    last = done.last
    if last is None:
        raise UnsupportedTableError(f"{base}: the metadata table has no completed instant")
    commits = mdt_timeline.commits()
    first_commit = commits.completed().first
    scan = _Scan(
        latest_instant=last.timestamp,
        completed=frozenset(i.timestamp for i in commits.completed()),
        inflight=frozenset(i.timestamp for i in commits.pending()),
        timeline_start=first_commit.timestamp if first_commit else None,
        valid=valid_instant_times(storage, load_timeline(storage, DATA_TABLE_LAYOUT), mdt_timeline),
    )
    file_slice = latest_files_slice(storage, mdt_timeline)
    log_records = _merge_logs(storage, file_slice, scan)
    records: dict[str, FilesRecord] = {}
    if file_slice.base_file is not None:
        path = f"{MDT_BASE}/{FILES_PARTITION}/{file_slice.base_file}"
        records = _hfile_records(storage.read_bytes(path), storage.qualify(path), None)
    for key, newer in log_records.items():
        older = records.get(key)
        records[key] = newer if older is None else older.merged_with(newer, storage.qualify(MDT_BASE))
    return records


def _merge_logs(storage: Storage, file_slice: FilesSlice, scan: _Scan) -> dict[str, FilesRecord]:
    queued: list[LogBlock] = []
    stopped = False
    for name in file_slice.log_files:
        path = f"{MDT_BASE}/{FILES_PARTITION}/{name}"
        for block in read_log_blocks(storage.read_bytes(path), storage.qualify(path)):
            verdict = scan.readable(block)
            if verdict is None:
                stopped = True
                break
            if not verdict:
                continue
            if block.block_type is BlockType.COMMAND_BLOCK:
                if not block.is_rollback_command():
                    raise UnsupportedTableError(f"{block.source}: command block {block.header} in the MDT")
                _apply_rollback(queued, block.header.get(HeaderKey.TARGET_INSTANT_TIME, ""))
            else:
                queued.append(block)
        if stopped:
            break
    merged: dict[str, FilesRecord] = {}
    for block in queued:
        if block.block_type is BlockType.CORRUPT_BLOCK:
            continue  # processQueuedBlocksForInstant: a corrupt block nobody rolled back is skipped
        if block.block_type is BlockType.DELETE_BLOCK:
            block.check_empty_delete()
            continue
        if block.block_type is not BlockType.HFILE_DATA_BLOCK:
            raise UnsupportedTableError(
                f"{block.source}: {block.block_type.name} in the MDT files partition; "
                "Hudi writes HFile blocks"
            )
        schema = block.header.get(HeaderKey.SCHEMA)
        for key, record in _hfile_records(block.content, block.source, schema).items():
            older = merged.get(key)
            merged[key] = record if older is None else older.merged_with(record, block.source)
    return merged


def _apply_rollback(queued: list[LogBlock], target: str) -> None:
    """A ROLLBACK command block drops the most recent queued blocks of its target instant (and corrupt
    blocks among them), stopping at the first block of another instant, as the scanner does."""
    while queued:
        top = queued[-1]
        if top.block_type is BlockType.CORRUPT_BLOCK or top.instant_time == target:
            queued.pop()
        else:
            break


def _hfile_records(data: bytes, source: str, schema: str | None) -> dict[str, FilesRecord]:
    reader = HFileReader(data, source)
    writer_schema = schema or reader.schema_text
    if not writer_schema:
        raise CorruptTableError(f"{source}: no Avro schema in the block header or the HFile file info")
    records: dict[str, FilesRecord] = {}
    for key, value in reader.items():
        record = decode_files_record(key, value, writer_schema, source)
        older = records.get(key)
        # 0.15 keeps duplicate keys of one block in insertion order: the later one is newer.
        records[key] = record if older is None else older.merged_with(record, source)
    return records


def list_partitions_via_mdt(storage: Storage) -> dict[str, dict[str, int]]:
    """Partition path ('' for a non-partitioned table) -> {file name: size}, as Hudi's MDT lists them.

    Partitions come from `__all_partitions__` (HoodieBackedTableMetadata.fetchAllPartitionPaths), files
    from each partition's record (fetchAllFilesInPartition); deleted entries are left out.
    """
    records = read_files_records(storage)
    listing_root = records.get(ALL_PARTITIONS_KEY)
    names = sorted(listing_root.live()) if listing_root is not None else []
    out: dict[str, dict[str, int]] = {}
    for name in names:
        record = records.get(name)
        out[partition_of_key(name)] = dict(sorted(record.live().items())) if record is not None else {}
    return out
