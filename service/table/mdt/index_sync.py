"""The `column_stats` and `bloom_filters` records of an instant the service completes, and where they go.

Hudi's `HoodieBackedTableMetadataWriter.update` turns a data instant into the records of every enabled
MDT partition (`HoodieTableMetadataUtil.convertMetadataToRecords`) and writes them all in one MDT
deltacommit (`commitInternal` -> `prepRecords` -> `tagRecordsWithLocation`):

- a commit (clustering's replacecommit, compaction's commit): per base file it wrote, the column
  ranges from the file's Parquet footer for the columns of the commit's `schema` (meta fields first
  when the table populates them; no schema, no column stats) and the footer's bloom filter
  (`convertMetadataToColumnStatsRecords` / `convertMetadataToBloomFilterRecords`; a file without a
  filter is skipped with an error log, as Java does);
- a clean: per `deletePathPatterns` entry a bloom tombstone and column-stats stubs, the columns from
  the table's latest schema (`TableSchemaResolver`);
- a rollback: nothing in these partitions (only `files` records).

A record goes to file group `mapRecordKeyToFileGroupIndex(key, n)` of its partition, n its existing
file group count; each file group with records gets one HFile data block (keys in HBase order) in a
new log file of its latest slice, as `HoodieAppendHandle` writes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo

import pyarrow.parquet as pq

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.avro_schema import RECORD_KEY_FIELD
from service.table.base_file_writer import BLOOM_FILTER_KEY, BLOOM_FILTER_TYPE_KEY
from service.table.codecs.clean import CleanMetadata
from service.table.codecs.commit import CommitMetadata
from service.table.mdt.column_ranges import column_ranges, columns_to_index
from service.table.mdt.files_listing import FilesSlice
from service.table.mdt.index_definitions import index_definition, indexed_columns_of, load_index_definitions
from service.table.mdt.index_keys import (
    BLOOM_FILTERS_PARTITION,
    COLUMN_STATS_PARTITION,
    PARTITION_STATS_PARTITION,
    RECORD_INDEX_PARTITION,
    column_stats_key,
    file_group_indexes,
)
from service.table.mdt.index_reader import MdtReader
from service.table.mdt.index_records import (
    RECORD_TYPE_RECORD_INDEX,
    ColumnStats,
    IndexRecord,
    RecordIndexInfo,
    bloom_filter_deletion,
    bloom_filter_record,
    column_stats_deletions,
    column_stats_record,
    encode_index_record,
    is_base_file,
    record_location,
)
from service.table.mdt.log_writer import LogAppend, write_log
from service.table.mdt.mdt_format import MdtFormat
from service.table.mdt.partition_stats import PartitionFiles, partition_stats_records
from service.table.properties import TableConfig
from service.table.storage import Storage
from service.table.timeline import parse_instant_time

log = logging.getLogger(__name__)

SIMPLE_BLOOM_TYPE = "SIMPLE"  # BloomFilterTypeCode.SIMPLE: a footer without a type code holds one


@dataclass(frozen=True)
class IndexDeletion:
    """An MDT record deleted by key (Hudi 1.x writes a clean's column-stats entries so: a DELETE block)."""

    key: str


# MDT partition -> its records (and deletions) of one instant
IndexRecords = Mapping[str, Sequence[IndexRecord | IndexDeletion]]


def served_index_partitions(config: TableConfig, mdt: MdtFormat) -> tuple[str, ...]:
    """The index partitions the service writes on this version that the data table lists as
    completed MDT partitions."""
    return tuple(p for p in mdt.index_partitions_written if p in config.metadata_partitions)


def _schema_fields(schema_json: str, source: str) -> list[str]:
    try:
        fields = json.loads(schema_json)["fields"]
        return [str(f["name"]) for f in fields]
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptTableError(f"{source}: writer schema is not an Avro record schema: {e}") from None


def indexed_columns(config: TableConfig, schema_json: str | None, source: str) -> list[str]:
    """`getColumnsToIndex` without `hoodie.metadata.index.column.stats.column.list` (a writer option the
    table does not record: the service indexes what Hudi's default does, every top-level field)."""
    if not schema_json:
        return []
    return columns_to_index([], _schema_fields(schema_json, source), config.populate_meta_fields)


def commit_index_records(
    storage: Storage,
    config: TableConfig,
    mdt: MdtFormat,
    reader: MdtReader,
    metadata: CommitMetadata,
    instant_time: str,
    *,
    relocated_in: tzinfo | None = None,
    partition_files: PartitionFiles | None = None,
) -> dict[str, list[IndexRecord | IndexDeletion]]:
    """The index records of a commit's written base files, read from their footers, in the version's
    form: 0.x's for the commit schema's columns; 1.x's for the `column_stats` index definition's
    columns, with `isTightBound` false and, for a V2 definition, typed values (matching, record for
    record, what Hudi 1.0.2 and 1.1.1 write for their compactions' files).

    `relocated_in`: the commit moves records to new file groups (a clustering), so the record index,
    when served, gets every moved key's new location, its instant time taken in this timeline zone;
    a compaction keeps every key where it was (None).

    `partition_files`: the files of each partition the commit wrote into, as the commit leaves them
    (`partition_stats.partition_files`); a 1.x table's `partition_stats` is recomputed from them and
    `reader`. Without them a table with `partition_stats` is refused."""
    out = file_index_records(storage, config, mdt, metadata, instant_time)
    if mdt.columns_from_index_definitions and PARTITION_STATS_PARTITION in config.metadata_partitions:
        if partition_files is None:
            raise UnsupportedTableError(
                f"{storage.base_uri}: commit {instant_time} would have to recompute the metadata table's "
                "partition_stats, which the service does not write for this action yet"
            )
        out[PARTITION_STATS_PARTITION] = list(
            _partition_stats(storage, config, metadata, reader, out, partition_files)
        )
    if relocated_in is not None and RECORD_INDEX_PARTITION in out:
        out[RECORD_INDEX_PARTITION].extend(
            record_index_records(storage, config, metadata, instant_time, relocated_in)
        )
    return out


def _partition_stats(
    storage: Storage,
    config: TableConfig,
    metadata: CommitMetadata,
    reader: MdtReader,
    written: Mapping[str, Sequence[IndexRecord | IndexDeletion]],
    partition_files: PartitionFiles,
) -> list[IndexRecord]:
    """`partition_stats` of the partitions `metadata` wrote into, over the index definition's columns;
    the ranges of the commit's own files are those just computed for `column_stats`."""
    # Hudi 1.0.2 writes no definition of its own for partition_stats: it indexes column_stats' columns
    # (`getColumnsToIndex` for both); 1.1.1 writes one.
    definitions = load_index_definitions(storage, config)
    name = PARTITION_STATS_PARTITION if PARTITION_STATS_PARTITION in definitions else COLUMN_STATS_PARTITION
    columns = list(index_definition(storage, config, name).source_fields)
    partition_of = {
        stat.path.rsplit("/", 1)[-1]: partition
        for partition, stats in metadata.partition_to_write_stats.items()
        for stat in stats
        if stat.path is not None
    }
    ranges = [
        (partition_of[r.payload.file_name], r.payload)
        for r in written.get(COLUMN_STATS_PARTITION, ())
        if isinstance(r, IndexRecord) and isinstance(r.payload, ColumnStats)
    ]
    partitions = set(metadata.partition_to_write_stats)
    files = {p: partition_files.get(p, frozenset()) for p in partitions}
    return partition_stats_records(reader, ranges, files, columns)


def file_index_records(
    storage: Storage, config: TableConfig, mdt: MdtFormat, metadata: CommitMetadata, instant_time: str
) -> dict[str, list[IndexRecord | IndexDeletion]]:
    """The per-file index records (`column_stats`, `bloom_filters`) of a commit's written base files:
    `commit_index_records` without the partition-level indexes."""
    partitions = served_index_partitions(config, mdt)
    out: dict[str, list[IndexRecord | IndexDeletion]] = {p: [] for p in partitions}
    if not partitions:
        return out
    typed = False
    if not mdt.columns_from_index_definitions:
        columns = indexed_columns(config, metadata.table_schema, storage.qualify(instant_time))
    elif COLUMN_STATS_PARTITION in out:
        definition = index_definition(storage, config, COLUMN_STATS_PARTITION)
        columns, typed = list(definition.source_fields), definition.is_v2
    else:
        columns = []
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats:
            if stat.path is None:
                continue
            name = stat.path.rsplit("/", 1)[-1]
            if not is_base_file(name):
                continue
            with storage.open_input(stat.path) as f:
                footer = pq.ParquetFile(f).metadata
            if COLUMN_STATS_PARTITION in out and columns:
                ranges = column_ranges(
                    footer,
                    name,
                    columns,
                    tight_bound_field=mdt.columns_from_index_definitions,
                    typed=typed,
                )
                out[COLUMN_STATS_PARTITION].extend(column_stats_record(partition, r) for r in ranges)
            if BLOOM_FILTERS_PARTITION in out:
                kv = footer.metadata or {}
                serialized = kv.get(BLOOM_FILTER_KEY.encode())
                if serialized is None:
                    # convertMetadataToBloomFilterRecords: "Failed to read bloom filter", no record.
                    log.error("%s: no bloom filter in the footer; no bloom_filters record", stat.path)
                    continue
                kind = kv.get(BLOOM_FILTER_TYPE_KEY.encode(), SIMPLE_BLOOM_TYPE.encode()).decode()
                out[BLOOM_FILTERS_PARTITION].append(
                    bloom_filter_record(partition, name, instant_time, kind, serialized.decode("utf-8"))
                )
    return out


def record_index_records(
    storage: Storage, config: TableConfig, metadata: CommitMetadata, instant_time: str, zone: tzinfo
) -> list[IndexRecord]:
    """The `record_index` upserts of a commit that moves records (a clustering): every record key in
    each base file it wrote, located at that file's partition and file group, at the commit's instant
    time as epoch milliseconds in the table's timeline zone (`zone`)
    (`BaseFileRecordParsingUtils.generateRLIMetadataHoodieRecordsForBaseFile`; seen on Hudi 1.1.1's
    clustering). The keys come from the `_hoodie_record_key` meta column."""
    if not config.populate_meta_fields:
        raise UnsupportedTableError(
            f"{storage.base_uri}: record-index entries of a table without meta fields are not written yet"
        )
    millis = int(parse_instant_time(instant_time, zone).timestamp() * 1000)
    out: list[IndexRecord] = []
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats:
            if stat.path is None or not is_base_file(stat.path.rsplit("/", 1)[-1]) or not stat.file_id:
                continue
            with storage.open_input(stat.path) as f:
                keys = pq.read_table(f, columns=[RECORD_KEY_FIELD]).column(RECORD_KEY_FIELD).to_pylist()
            location = record_location(partition, stat.file_id, millis)
            out.extend(IndexRecord(str(k), RECORD_TYPE_RECORD_INDEX, location) for k in keys)
    return out


def clean_index_records(
    storage: Storage,
    config: TableConfig,
    mdt: MdtFormat,
    metadata: CleanMetadata,
    clean_instant: str,
    schema_json: str | None,
    *,
    schema_source: str | None = None,
) -> dict[str, list[IndexRecord | IndexDeletion]]:
    """The tombstones of a clean's deleted files, in the version's form (`MdtFormat`): 0.x's stub
    records for the latest writer schema's columns (`schema_json`, read from the commit file
    `schema_source` for errors to name), or 1.x's deletions by key for every deleted file and every
    column of the `column_stats` index definition."""
    partitions = served_index_partitions(config, mdt)
    out: dict[str, list[IndexRecord | IndexDeletion]] = {p: [] for p in partitions}
    columns: list[str] = []
    if COLUMN_STATS_PARTITION in out:
        if mdt.columns_from_index_definitions:
            columns = indexed_columns_of(storage, config, COLUMN_STATS_PARTITION)
        else:
            columns = indexed_columns(config, schema_json, schema_source or storage.base_uri)
    for key, pm in metadata.partition_metadata.items():
        partition = pm.partition_path if pm.partition_path is not None else key
        for entry in pm.delete_path_patterns:
            if BLOOM_FILTERS_PARTITION in out:
                tomb = bloom_filter_deletion(partition, entry.rsplit("/", 1)[-1], clean_instant)
                if tomb is not None:
                    out[BLOOM_FILTERS_PARTITION].append(tomb)
            if COLUMN_STATS_PARTITION not in out:
                continue
            if mdt.column_stats_deletes_as_keys:
                out[COLUMN_STATS_PARTITION].extend(
                    IndexDeletion(column_stats_key(partition, entry, column)) for column in columns
                )
            else:
                out[COLUMN_STATS_PARTITION].extend(column_stats_deletions(partition, entry, columns))
    return out


def write_index_partitions(
    storage: Storage,
    slices: Mapping[str, Sequence[FilesSlice]],
    instant_time: str,
    records: IndexRecords,
    schema_name: str,
) -> list[LogAppend]:
    """One log file per file group that receives records or deletions, in every partition of
    `records`; `slices` holds each served partition's file groups in index order (their count is what
    keys hash over)."""
    appends = []
    for partition, in_partition in records.items():
        if not in_partition:
            continue
        groups = slices[partition]
        by_group: dict[int, dict[str, bytes]] = {}
        deleted: dict[int, set[str]] = {}
        # A value does not hold its key: the record-index entries of every key a clustering moved into
        # one file share one encoding. (Not column stats: 0.0 == -0.0 would share a value.)
        locations: dict[int, bytes] = {}  # by the payload object's id: one per file, shared
        indexes = file_group_indexes([record.key for record in in_partition], len(groups))
        for record, index in zip(in_partition, indexes, strict=True):
            if isinstance(record, IndexDeletion):
                deleted.setdefault(index, set()).add(record.key)
                continue
            cells = by_group.setdefault(index, {})
            if isinstance(record.payload, RecordIndexInfo):
                value = locations.get(id(record.payload)) or encode_index_record(record, schema_name)
                locations[id(record.payload)] = value
            else:
                value = encode_index_record(record, schema_name)
            if cells.get(record.key, value) != value:
                raise UnsupportedTableError(
                    f"{storage.qualify(instant_time)}: two different {partition} records for key "
                    f"{record.key!r}"
                )
            cells[record.key] = value
        for index in sorted(set(by_group) | set(deleted)):
            both = set(by_group.get(index, {})) & deleted.get(index, set())
            if both:
                raise UnsupportedTableError(
                    f"{storage.qualify(instant_time)}: {partition} key {sorted(both)[0]!r} both written "
                    "and deleted by one instant"
                )
            appends.append(
                write_log(
                    storage,
                    groups[index],
                    instant_time,
                    list(by_group.get(index, {}).items()),
                    schema_name,
                    sorted(deleted.get(index, ())),
                )
            )
    return appends
