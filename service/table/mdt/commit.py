"""Mirror an instant the service completes into the metadata table: `files`, and the `column_stats` and
`bloom_filters` index partitions when the table has them (`index_sync.py`).

Hudi completes every data instant T in this order, under the table lock
(`BaseHoodieTableServiceClient.completeClustering`, `CleanActionExecutor.runClean`,
`BaseRollbackActionExecutor.finishRollback`): `writeTableMetadata` writes and completes the MDT
deltacommit T (`HoodieBackedTableMetadataWriter.update` -> `commitInternal`), then T is completed on
the data table. MDT readers only trust a block whose MDT deltacommit completed AND whose data instant
completed (`HoodieTableMetadataUtil.getValidInstantTimestamps`), so a crash between the two leaves
readers unaffected; the retry finds MDT T completed and goes straight to the data commit.

`sync_files_partition` is the one hook: the cleaner, clustering, compaction and rollback call it with
T's records while holding the lock, right before they write T's completed file. All partitions' blocks
of T belong to the one MDT deltacommit T, as Java's `commitInternal` writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from service.errors import (
    CorruptTableError,
    MetadataTableBusyError,
    UnsupportedTableError,
)
from service.table.codecs.clean import CleanMetadata
from service.table.codecs.commit import CommitMetadata, WriteOperationType, WriteStat, encode_commit
from service.table.hfile.reader import HFileReader
from service.table.instant import Action, Instant, State
from service.table.layout import TimelineLayout
from service.table.mdt.files_listing import (
    FILES_FILE_ID,
    FILES_PARTITION,
    FilesSlice,
    files_partition_served,
    latest_slice,
    parse_log_file_name,
)
from service.table.mdt.index_keys import mdt_file_group_ids
from service.table.mdt.index_reader import MdtReader
from service.table.mdt.index_sync import (
    IndexRecords,
    served_index_partitions,
    write_index_partitions,
)
from service.table.mdt.log_blocks import BlockType, HeaderKey, read_log_blocks
from service.table.mdt.log_writer import LogAppend, merge_by_key, write_files_log
from service.table.mdt.mdt_format import MdtFormat
from service.table.mdt.records import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_NAME,
    ON_DISK_SCHEMA,
    RECORD_TYPE_FILE_LIST,
    RECORD_TYPE_PARTITION_LIST,
    FileInfo,
    FilesRecord,
    commit_schema_text,
    decode_files_record,
)
from service.table.mdt.timeline import MDT_BASE, MDT_METAFOLDER, load_mdt_timeline
from service.table.properties import TableConfig, load_table_config
from service.table.storage import Storage
from service.table.table_format import TableFormat
from service.table.timeline import Timeline, complete_instant

log = logging.getLogger(__name__)

METADATA_PAYLOAD = "org.apache.hudi.metadata.HoodieMetadataPayload"


def mdt_sync_required(config: TableConfig) -> bool:
    """`HoodieTableConfig.isMetadataTableAvailable`: the data table lists `files` as a completed MDT
    partition. Without it an MDT directory is stale (Java re-initialises it) and nothing is written."""
    return files_partition_served(config)


def partition_key(partition_path: str) -> str:
    """`HoodieTableMetadataUtil.getPartitionIdentifier`: the table root is `.`."""
    return partition_path or NON_PARTITIONED_NAME


# ---------------------------------------------------------------- records per data action


def clean_records(metadata: CleanMetadata) -> list[FilesRecord]:
    """`HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords(HoodieCleanMetadata)`: per
    partition, a tombstone for every `deletePathPatterns` name (not `successDeleteFiles`), and a
    partition-list tombstone for each deleted partition."""
    records = []
    deleted_partitions = {}
    for partition, pm in metadata.partition_metadata.items():
        key = partition_key(pm.partition_path if pm.partition_path is not None else partition)
        records.append(
            FilesRecord(key, RECORD_TYPE_FILE_LIST, {n: FileInfo(0, True) for n in pm.delete_path_patterns})
        )
        if pm.is_partition_deleted:
            deleted_partitions[key] = FileInfo(0, True)
    if deleted_partitions:
        records.append(FilesRecord(ALL_PARTITIONS_KEY, RECORD_TYPE_PARTITION_LIST, deleted_partitions))
    return records


def commit_records(metadata: CommitMetadata, source: str) -> list[FilesRecord]:
    """`convertMetadataToFilesPartitionRecords(HoodieCommitMetadata)` (clustering's replacecommit too):
    every partition of `partitionToWriteStats` in `__all_partitions__`, and each written file with its
    size (the larger one when a file appears twice). Replaced file groups are not reflected: readers
    hide them through the replacecommit, and the cleaner's tombstones remove them later."""
    partitions: dict[str, FileInfo] = {}
    records = []
    for partition, stats in metadata.partition_to_write_stats.items():
        key = partition_key(partition)
        partitions[key] = FileInfo(0, False)
        files: dict[str, FileInfo] = {}
        for stat in stats:
            if stat.path is None:
                continue
            prefix = f"{partition}/" if partition else ""
            if not stat.path.startswith(prefix):
                raise CorruptTableError(
                    f"{source}: write stat path {stat.path!r} outside partition {partition!r}"
                )
            name = stat.path[len(prefix) :]
            if stat.file_size_in_bytes <= 0:
                # HoodieMetadataPayload.createPartitionFilesRecord asserts a positive size.
                raise CorruptTableError(
                    f"{source}: write stat {stat.path!r} has size {stat.file_size_in_bytes}"
                )
            size = max(stat.file_size_in_bytes, files[name].size if name in files else 0)
            files[name] = FileInfo(size, False)
        records.append(FilesRecord(key, RECORD_TYPE_FILE_LIST, files))
    if partitions:
        records.append(FilesRecord(ALL_PARTITIONS_KEY, RECORD_TYPE_PARTITION_LIST, partitions))
    return records


# ---------------------------------------------------------------- preconditions


@dataclass(frozen=True)
class MdtState:
    """The MDT as read under the lock: its timeline layout and timeline, the version's rules, and the
    slices that receive new blocks: `files`'s and, per served index partition, every file group's in
    index order. On layout 2 each is a new slice named by the instant being written (Hudi 1.x's
    per-deltacommit log files)."""

    layout: TimelineLayout
    timeline: Timeline
    mdt: MdtFormat
    file_slice: FilesSlice
    index_slices: Mapping[str, tuple[FilesSlice, ...]]

    @property
    def slices(self) -> tuple[FilesSlice, ...]:
        return (self.file_slice, *(s for group in self.index_slices.values() for s in group))

    def reader(self, storage: Storage, data_timeline: Timeline, data_layout: TimelineLayout) -> MdtReader:
        """A reader of this MDT's index partitions as the data timeline makes them valid."""
        return MdtReader(storage, data_timeline, data_layout, self.layout, self.timeline)


def check_mdt(
    storage: Storage,
    config: TableConfig,
    table_format: TableFormat,
    data_timeline: Timeline,
    instant_time: str,
) -> MdtState:
    """The checks of an MDT write of `instant_time` (`HoodieBackedTableMetadataWriter` preconditions).
    Raises UnsupportedTableError for what the service does not serve, MetadataTableBusyError for
    pending work Hudi's writers finish (skip the run)."""
    where = f"table {config.name!r} at {storage.base_uri}"
    mdt = table_format.mdt
    extra = [p for p in config.metadata_partitions if not mdt.accepts(p)]
    if config.metadata_partitions_inflight or extra:
        # raises, naming them and the way out
        config.check_supported(storage.base_uri, table_format.accepted_mdt_partitions(config))
    pending_data = data_timeline.pending().by_actions((Action.INDEXING, Action.RESTORE)).last
    if pending_data is not None:
        raise MetadataTableBusyError(
            f"{where}: {pending_data.action.value} {pending_data.timestamp} is pending on the data table; "
            "the metadata table is left to the writer finishing it, skipping this run",
            instant=pending_data.timestamp,
        )
    layout = _check_mdt_properties(storage, where, table_format)
    timeline = load_mdt_timeline(storage, layout)
    busy = (Action.COMPACTION, Action.LOG_COMPACTION, Action.RESTORE)
    pending_mdt = timeline.pending().by_actions(busy).last
    if pending_mdt is not None:
        raise MetadataTableBusyError(
            f"{where}: metadata table {pending_mdt.action.value} {pending_mdt.timestamp} is pending; Hudi's "
            "writers complete it at their next commit, skipping this run",
            instant=pending_mdt.timestamp,
        )
    if timeline.completed().last is None:
        raise UnsupportedTableError(f"{where}: the metadata table has no completed instant (not initialised)")

    def target(partition: str, file_id: str) -> FilesSlice:
        if mdt.logs_per_deltacommit:
            # HoodieAppendHandle on 1.x: a new log file named by the deltacommit, whatever the slice.
            return FilesSlice(instant_time, None, (), partition, file_id)
        return latest_slice(storage, timeline, partition, file_id)

    index_slices = {
        partition: tuple(target(partition, fid) for fid in mdt_file_group_ids(storage, partition))
        for partition in served_index_partitions(config, mdt)
    }
    return MdtState(layout, timeline, mdt, target(FILES_PARTITION, FILES_FILE_ID), index_slices)


def _check_mdt_properties(storage: Storage, where: str, table_format: TableFormat) -> TimelineLayout:
    """The MDT's own `hoodie.properties` checked against what this writer writes; returns the MDT's
    timeline layout (under `.hoodie/metadata/.hoodie`)."""
    rel = f"{MDT_METAFOLDER}/hoodie.properties"
    try:
        text = storage.read_bytes(rel).decode("latin-1")
    except FileNotFoundError:
        raise UnsupportedTableError(
            f"{where}: hoodie.table.metadata.partitions lists files but {storage.qualify(rel)} is missing"
        ) from None
    config = TableConfig.from_text(text, storage.qualify(rel))
    # HoodieBackedTableMetadataWriter.initializeMetaClient writes these; anything else is not an MDT
    # this writer's blocks fit. The MDT is upgraded with its data table (UpgradeDowngrade runs on both).
    payload = config.raw.get("hoodie.compaction.payload.class", METADATA_PAYLOAD)
    found = {
        "table type": config.table_type.value,
        "base file format": config.base_file_extension,
        "record key fields": ",".join(config.record_key_fields),
        "populate meta fields": str(config.populate_meta_fields).lower(),
        "payload class": payload,
        "table version": str(config.version),
        "timeline layout version": str(config.timeline_layout_version),
    }
    expected = {
        "table type": "MERGE_ON_READ",
        "base file format": ".hfile",
        "record key fields": "key",
        "populate meta fields": "false",
        "payload class": METADATA_PAYLOAD,
        "table version": str(table_format.table_version),
        "timeline layout version": str(table_format.layout.version),
    }
    for what, value in found.items():
        if value != expected[what]:
            raise UnsupportedTableError(
                f"{storage.qualify(rel)}: {what} {value!r}, Hudi's metadata table has {expected[what]!r}; "
                "refusing to write a metadata table laid out differently"
            )
    return table_format.layout.same_version_at(
        MDT_METAFOLDER, config.timeline_path, config.timeline_history_path
    )


# ---------------------------------------------------------------- the MDT deltacommit


# T's index records, for the config read under the lock, that version's MDT rules, and a reader of
# what the MDT holds (for the partition-level indexes a commit recomputes)
IndexSource = Callable[[TableConfig, MdtFormat, MdtReader], IndexRecords]


def sync_files_partition(
    storage: Storage,
    data_timeline: Timeline,
    instant_time: str,
    records: Iterable[FilesRecord],
    index_records: IndexSource | None = None,
    *,
    expected: TableFormat | None = None,
    now: datetime | None = None,
    tz: tzinfo | None = None,
) -> list[LogAppend]:
    """Write and complete MDT deltacommit `instant_time` with `records` (none: an empty deltacommit,
    as Java writes for a copy-on-write rollback) and, for the index partitions the table has, what
    `index_records` gives (none for a rollback). The caller holds the table lock and completes the
    data instant next. No-op for a table without the MDT, and when MDT T is already completed (a
    retry after a crash before the data commit). Returns the log files written.

    `expected`: the format the caller planned with; a table a writer upgraded since is refused.
    `now`/`tz`: the clock and timeline zone for the completion time a layout-2 MDT names.
    """
    config = load_table_config(storage)  # re-read under the lock: a writer may have changed the MDT
    if not mdt_sync_required(config):
        return []
    table_format = TableFormat.for_table(config, storage.base_uri)
    if expected is not None and expected.table_version != table_format.table_version:
        raise UnsupportedTableError(
            f"table {config.name!r} at {storage.base_uri}: a writer upgraded it to table version "
            f"{table_format.table_version} while this run, planned at version {expected.table_version}, "
            f"was completing {instant_time}; nothing written to the metadata table, rerun"
        )
    state = check_mdt(storage, config, table_format, data_timeline, instant_time)
    schema_name = state.mdt.record_schema
    records = merge_by_key(records, storage.qualify(MDT_BASE))
    existing = state.timeline.find(instant_time, Action.DELTA_COMMIT)
    if existing is not None and existing.is_completed:
        if _records_of(storage, state, instant_time) == records:
            log.info("table %s: MDT deltacommit %s already completed", config.name, instant_time)
            return []
        # A retry that wrote other files (BaseHoodieWriteClient re-attempts roll MDT T back first).
        log.info(
            "table %s: MDT deltacommit %s differs from this attempt; replacing it", config.name, instant_time
        )
    _remove_blocks_of(storage, state, instant_time)
    delete_deltacommit_files(storage, state, instant_time)
    requested = Instant(instant_time, Action.DELTA_COMMIT, State.REQUESTED)
    inflight = Instant(instant_time, Action.DELTA_COMMIT, State.INFLIGHT)
    avro = state.layout.writes_avro_commit_metadata
    _create(storage, state.layout, requested, b"")
    # Layout 2 stores Avro commit metadata in the inflight file (Hudi puts its workload profile there);
    # an empty operation record is what a reader of an interrupted attempt needs.
    workload = CommitMetadata(operation_type=WriteOperationType.UPSERT_PREPPED)
    _create(storage, state.layout, inflight, encode_commit(workload, avro=True) if avro else b"")
    appends = (
        [write_files_log(storage, state.file_slice, instant_time, records, schema_name)] if records else []
    )
    if index_records is not None:
        appends += write_index_partitions(
            storage,
            state.index_slices,
            instant_time,
            index_records(config, state.mdt, state.reader(storage, data_timeline, table_format.layout)),
            schema_name,
        )
    metadata = deltacommit_metadata(state.slices, appends, schema_name)
    if state.layout.names_completion_time:
        if now is None or tz is None:
            raise ValueError(f"completing MDT deltacommit {instant_time} on layout 2 needs a clock and zone")
        complete_instant(
            storage, state.layout, state.timeline, inflight, encode_commit(metadata, avro=True), now, tz
        )
    else:
        _create(storage, state.layout, inflight.completed_at(None), encode_commit(metadata))
    log.debug(
        "table %s: MDT deltacommit %s completed (%s)",
        config.name, instant_time, ", ".join(a.path for a in appends) or "no records",
    )  # fmt: skip
    return appends


def forget_rolled_back_instant(storage: Storage, data_timeline: Timeline, instant_time: str) -> None:
    """Before a rollback of data instant X completes (under the lock): take X out of the MDT.

    Once the data rollback completes, `getValidInstantTimestamps` trusts X's blocks again, so a
    completed MDT deltacommit X would bring the rolled-back files back into listings. Java rolls X back
    in the MDT with a command block (`BaseHoodieWriteClient.rollback(X, R+"006")`); the equivalent
    used here deletes X's log files, whose blocks are X's alone (one block per new log version, which
    is what this service writes and what Java writes on storage without append), then X's MDT
    instant files. A completed MDT compaction at or after X holds X's records in its base file:
    refused, as `HoodieBackedTableMetadataWriter.validateRollback` refuses it."""
    found = mdt_state(storage, data_timeline, instant_time)
    if found is None:
        return
    config, state = found
    compacted = compacted_after(state.timeline, instant_time)
    if compacted is not None:
        raise UnsupportedTableError(
            f"table {config.name!r} at {storage.base_uri}: the metadata table compacted ({compacted}) "
            f"after its deltacommit {instant_time}; rolling {instant_time} back needs a restore (Hudi "
            "refuses it too)"
        )
    _remove_blocks_of(storage, state, instant_time)
    delete_deltacommit_files(storage, state, instant_time)


def mdt_state(
    storage: Storage, data_timeline: Timeline, instant_time: str
) -> tuple[TableConfig, MdtState] | None:
    """The table's config (re-read) and its MDT as `check_mdt` reads it for work on data instant
    `instant_time`; None when the table keeps no metadata table in sync."""
    config = load_table_config(storage)
    if not mdt_sync_required(config):
        return None
    table_format = TableFormat.for_table(config, storage.base_uri)
    return config, check_mdt(storage, config, table_format, data_timeline, instant_time)


def compacted_after(mdt_timeline: Timeline, instant_time: str) -> str | None:
    """The MDT compaction that folded completed deltacommit `instant_time`'s records into a base file
    (the first completed at or after it), which no rollback can take out again
    (`HoodieBackedTableMetadataWriter.validateRollback`); None when there is none, or when the MDT
    holds no completed deltacommit `instant_time`."""
    existing = mdt_timeline.find(instant_time, Action.DELTA_COMMIT)
    if existing is None or not existing.is_completed:
        return None
    compactions = mdt_timeline.completed().by_actions((Action.COMMIT,))
    return next((i.timestamp for i in compactions if i.timestamp >= instant_time), None)


def _records_of(storage: Storage, state: MdtState, instant_time: str) -> list[FilesRecord]:
    """The `files` records MDT `instant_time` wrote into the current slice, one per key."""
    directory = f"{MDT_BASE}/{FILES_PARTITION}"
    found: list[FilesRecord] = []
    for name in storage.list_file_names(directory):
        parsed = parse_log_file_name(name)
        if parsed is None or parsed.base_instant != state.file_slice.base_instant:
            continue
        rel = f"{directory}/{name}"
        for block in read_log_blocks(storage.read_bytes(rel), storage.qualify(rel)):
            if block.instant_time != instant_time or block.block_type is not BlockType.HFILE_DATA_BLOCK:
                continue
            reader = HFileReader(block.content, block.source)
            schema = reader.schema_text or block.header.get(HeaderKey.SCHEMA, "")
            found.extend(decode_files_record(k, v, schema, block.source) for k, v in reader.items())
    return merge_by_key(found, storage.qualify(directory))


def _remove_blocks_of(storage: Storage, state: MdtState, instant_time: str) -> None:
    """Delete the log files of the current slices (`files`, and every file group of the served index
    partitions) holding blocks of MDT `instant_time`: an attempt that never completed (Java's eager
    rollback, `rollbackFailedWrites`, may already have removed its instant files and left the
    blocks), or one being rolled back. Completing T again would otherwise make the old blocks valid
    too. Refuses a file mixing T's blocks with others."""
    for file_slice in state.slices:
        directory = f"{MDT_BASE}/{file_slice.partition}"
        for name in storage.list_file_names(directory):
            parsed = parse_log_file_name(name)
            if (
                parsed is None
                or parsed.file_id != file_slice.file_id
                or parsed.base_instant != file_slice.base_instant
            ):
                continue
            rel = f"{directory}/{name}"
            blocks = read_log_blocks(storage.read_bytes(rel), storage.qualify(rel))
            matching = [b for b in blocks if b.instant_time == instant_time]
            if not matching:
                continue
            if len(matching) != len(blocks):
                raise UnsupportedTableError(
                    f"{storage.qualify(rel)}: holds blocks of MDT instant {instant_time} beside other "
                    "blocks (a writer appended to it); leave its rollback to Hudi's writers"
                )
            log.info("removing %s: blocks of MDT instant %s", storage.qualify(rel), instant_time)
            storage.delete_file(rel)


def delete_deltacommit_files(storage: Storage, state: MdtState, instant_time: str) -> None:
    """MDT deltacommit `instant_time`'s files, completed first; on layout 2 the completed name carries
    a completion time, taken from the timeline (never composed)."""
    existing = state.timeline.find(instant_time, Action.DELTA_COMMIT)
    if existing is not None and existing.is_completed:
        storage.delete_file(state.layout.instant_path(existing))
    elif not state.layout.names_completion_time:
        storage.delete_file(
            state.layout.instant_path(Instant(instant_time, Action.DELTA_COMMIT, State.COMPLETED))
        )
    for pending in (State.INFLIGHT, State.REQUESTED):
        storage.delete_file(state.layout.instant_path(Instant(instant_time, Action.DELTA_COMMIT, pending)))


def deltacommit_metadata(
    file_slices: Sequence[FilesSlice], appends: Sequence[LogAppend], schema_name: str = ON_DISK_SCHEMA
) -> CommitMetadata:
    """The MDT deltacommit's HoodieCommitMetadata as the MDT write client writes it: one
    HoodieDeltaWriteStat per file group appended to (fields as `HoodieAppendHandle` fills them), per
    MDT partition, the metadata record schema, operation UPSERT_PREPPED. `file_slices` are the slices
    the appends went to, as they were before."""
    slices = {(s.partition, s.file_id): s for s in file_slices}
    stats: dict[str, list[WriteStat]] = {}
    for append in appends:
        stat = WriteStat(
            file_id=append.file_id,
            path=append.path,
            prev_commit=append.base_instant,
            num_writes=append.num_records,
            num_update_writes=append.num_records,  # every record has a location (prepped upsert)
            num_deletes=append.num_deletes,
            total_write_bytes=append.size,
            partition_path=append.partition,
            file_size_in_bytes=append.size,
            other_fields={
                "logVersion": append.version,
                "logOffset": 0,
                "baseFile": slices[append.partition, append.file_id].base_file or "",
                "logFiles": [*slices[append.partition, append.file_id].log_files, append.log_file],
                "recordsStats": {"val": None},
            },
        )
        stats.setdefault(append.partition, []).append(stat)
    return CommitMetadata(
        partition_to_write_stats={k: tuple(v) for k, v in stats.items()},
        compacted=False,
        extra_metadata={"schema": commit_schema_text(schema_name)},
        operation_type=WriteOperationType.UPSERT_PREPPED,
    )


def _create(storage: Storage, layout: TimelineLayout, instant: Instant, content: bytes) -> None:
    storage.create_if_absent(layout.instant_path(instant), content)
