"""Compaction operations as Spark tasks: `HoodieCompactor.compact` parallelizes the plan's operations
(`context.parallelize(operations, operations.size())`), one task per file slice, each merging its
slice and writing the new base file.

Everything shipped to a task is the picklable `CompactionJob`; a task opens storage from the base
URI itself, so the same job runs in local Python workers or on a cluster's executors. The driver
resolves the plan (file names confined to their partitions, sizes from storage) and the timeline
(`InstantFilter`); tasks only read slices and write files. Write stats come back to the driver,
which commits.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from service.config.parquet import ParquetWriteConfig
from service.table import codecs
from service.table.base_file_writer import BaseFileSchema, BaseFileTarget, BaseFileWriter
from service.table.fs_view import FileSlice
from service.table.log_format.merge import InstantFilter, MergeConfig
from service.table.log_format.slice_reader import read_file_slice
from service.table.markers import IOType, create_marker
from service.table.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_COMMIT_TIME = "_hoodie_commit_time"
_RECORD_KEY = "_hoodie_record_key"


@dataclass(frozen=True)
class CompactionJob:
    """Everything a task needs for the operations of one compaction plan."""

    base_uri: str
    storage_options: dict[str, str]
    table_name: str
    instant_time: str
    populate_meta_fields: bool
    parquet: ParquetWriteConfig
    avro_schema_json: str | None
    merge: MergeConfig
    # The compactor's scanner reads blocks of instants up to the last completed commit,
    # deltacommit or rollback (`HoodieCompactor.compact`'s `maxInstantTime`).
    instants: InstantFilter
    slices: tuple[FileSlice, ...]  # one per plan operation, in plan order
    # The plan's `TOTAL_LOG_FILES_SIZE` metric of each operation (`totalLogSizeCompacted`).
    log_bytes: tuple[int, ...]

    def storage(self) -> Storage:
        return Storage.for_base_uri(self.base_uri, self.storage_options)


def compact_operation(job: CompactionJob, index: int, write_token: str) -> codecs.WriteStat | None:
    """Merge operation `index`'s slice and write `<fileId>_<token>_<instant>.parquet` in the same file
    group after a DIRECT marker (MERGE with a base file, CREATE for a log-only slice); None for a
    log-only slice that merges to nothing (Java's create handle writes nothing then)."""
    storage = job.storage()
    file_slice = job.slices[index]
    started = time.perf_counter()
    merged = read_file_slice(storage, file_slice, job.instants, job.merge)
    scan_ms = round((time.perf_counter() - started) * 1000)
    if merged.num_rows == 0 and file_slice.base_file is None:
        return None
    schema = BaseFileSchema.create(
        merged.schema,
        job.avro_schema_json,
        table_name=job.table_name,
        populate_meta_fields=job.populate_meta_fields,
    )
    target = BaseFileTarget(
        storage, schema, job.parquet, file_slice.partition_path, job.instant_time, write_token
    )
    io_type = IOType.MERGE if file_slice.base_file is not None else IOType.CREATE
    create_marker(storage, job.instant_time, target.path(file_slice.file_id), io_type)
    writer = BaseFileWriter(target, file_slice.file_id)
    try:
        writer.write_row_group(schema.conform(merged))
        written = writer.close()
    except BaseException:
        writer.abort()
        raise
    inserts, updates, deletes = _record_counts(storage, file_slice, merged)
    return codecs.WriteStat(
        file_id=file_slice.file_id,
        path=written.path,
        prev_commit=file_slice.base_instant_time if file_slice.base_file is not None else codecs.NULL_COMMIT,
        num_writes=written.record_count,
        num_deletes=deletes,
        num_update_writes=updates,
        num_inserts=inserts,
        total_write_bytes=written.file_size_bytes,
        partition_path=file_slice.partition_path,
        total_log_files_compacted=len(file_slice.log_files),
        total_log_size_compacted=job.log_bytes[index],
        total_updated_records_compacted=updates,
        file_size_in_bytes=written.file_size_bytes,
        runtime_stats=codecs.RuntimeStats(total_scan_time=scan_ms, total_upsert_time=written.write_time_ms),
    )


def _record_counts(storage: Storage, file_slice: FileSlice, merged: pa.Table) -> tuple[int, int, int]:
    base = None
    if file_slice.base_file is not None:
        with storage.filesystem.open_input_file(storage.fs_path(file_slice.base_file.path)) as source:
            base = pq.read_table(source, columns=[_RECORD_KEY, _COMMIT_TIME])
    return record_counts(base, merged)


def record_counts(base: pa.Table | None, merged: pa.Table) -> tuple[int, int, int]:
    """(inserts, updates, deletes) of the merged records against the base file's keys and commit
    times: keys new to it, keys whose `_hoodie_commit_time` changed, distinct base keys gone."""
    out_keys = pc.cast(merged.column(_RECORD_KEY), pa.string()).combine_chunks()
    if base is None:
        return len(out_keys), 0, 0
    # Reversed, so that a repeated base key answers with its last row, as a key -> time dict would.
    base_keys = pc.cast(base.column(_RECORD_KEY), pa.string()).combine_chunks()[::-1]
    base_times = pc.cast(base.column(_COMMIT_TIME), pa.string()).combine_chunks()[::-1]
    at = pc.index_in(out_keys, value_set=base_keys)
    in_base = at.is_valid()
    was = base_times.take(pc.drop_null(at))
    now = pc.cast(merged.column(_COMMIT_TIME), pa.string()).combine_chunks().filter(in_base)
    # `!=` as Python compares: a null time against a string differs, two nulls do not.
    changed = pc.and_not(
        pc.fill_null(pc.not_equal(was, now), True), pc.and_(pc.is_null(was), pc.is_null(now))
    )
    distinct = pc.unique(base_keys)
    inserts = len(out_keys) - (pc.sum(in_base).as_py() or 0)
    updates = pc.sum(changed).as_py() or 0
    deletes = len(distinct) - (pc.sum(pc.is_in(distinct, value_set=out_keys)).as_py() or 0)
    return int(inserts), int(updates), int(deletes)


def _compact_partition(job: CompactionJob, indexes: Iterable[int]) -> Iterator[codecs.WriteStat]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    # Hudi's write token: `partitionId-stageId-taskAttemptId` (`FSUtils.makeWriteToken`); a retried
    # task writes a file of its own, and the commit's finalize deletes the failed attempt's.
    token = f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.taskAttemptId()}" if ctx else "0-0-0"
    for index in indexes:
        stat = compact_operation(job, index, token)
        if stat is not None:
            yield stat


def run_compaction(spark: SparkSession, job: CompactionJob) -> list[codecs.WriteStat]:
    """Every operation of the plan as a Spark task of one job; the stats of the files written."""
    count = len(job.slices)
    if count == 0:
        return []
    indexes = spark.sparkContext.parallelize(range(count), count)
    return indexes.mapPartitions(lambda it: _compact_partition(job, it)).collect()
