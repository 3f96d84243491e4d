"""Run one clustering group as Spark jobs: profile inputs, then range-partition, sort and write.

Spark distributes the work; Python workers read inputs and write Hudi base files with pyarrow, so
the project controls file names, meta columns and footers. Everything shipped to workers is a
picklable `GroupJob`; workers open storage from the base URI themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from service.config.parquet import ParquetWriteConfig
from service.table.base_file_writer import BaseFileSchema, BaseFileWriteResult, RollingBaseFileWriter
from service.table.markers import marker_path
from service.table.storage import Storage
from strategies.execution.sort_and_size import (
    KEY_COLUMN,
    PID_COLUMN,
    FileProfile,
    OrderSpec,
    assign_pids,
    conform_batch,
    order_keys,
    pid_bounds,
    profile_file,
    read_input_batches,
    sample_keys,
    sampled_sort_columns,
)
from strategies.layout import CurveBuildMethod, LayoutStrategy, build_sample_bounds, default_num_buckets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_RESULT_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("partition_path", pa.string()),
        ("file_id", pa.string()),
        ("file_name", pa.string()),
        ("file_size_bytes", pa.int64()),
        ("record_count", pa.int64()),
        ("min_record_key", pa.string()),
        ("max_record_key", pa.string()),
        ("write_time_ms", pa.int64()),
    ]
)


@dataclass(frozen=True)
class GroupJob:
    """Everything a worker needs for one clustering group."""

    base_uri: str
    storage_options: dict[str, str]
    table_name: str
    instant_time: str
    partition_path: str
    input_paths: tuple[str, ...]  # base-relative base-file paths
    input_sizes: tuple[int, ...]
    order: OrderSpec
    curve_build_method: CurveBuildMethod
    curve_sample_size: int
    target_file_bytes: int
    parquet: ParquetWriteConfig
    avro_schema_json: str | None
    group_index: int = 0
    # Spark tasks that write the group. Each task's last file is a remainder, so only 1 guarantees
    # every file but the group's last is >= 0.8x the target; more trade that for write parallelism.
    writer_tasks: int = 1
    arrow_schema: pa.Schema | None = None
    pid_bounds: tuple[bytes, ...] = field(default=(), repr=False)

    def storage(self) -> Storage:
        return Storage.for_base_uri(self.base_uri, self.storage_options)


def unified_input_schema(storage: Storage, paths: tuple[str, ...]) -> pa.Schema:
    """Union of the input files' schemas (older files may lack newer nullable columns)."""
    schemas = []
    for path in paths:
        with storage.open_input(path) as f:
            schemas.append(pq.read_schema(f).remove_metadata())
    return pa.unify_schemas(schemas, promote_options="permissive")


# ---------------------------------------------------------------- worker functions


def _profile_partition(job: GroupJob, rows: Iterable[tuple[int, str]]) -> Iterator[FileProfile]:
    storage = job.storage()
    assert job.arrow_schema is not None
    per_file = max(1, job.curve_sample_size // max(1, len(job.input_paths)))
    for index, path in rows:
        with storage.open_input(path) as f:
            parquet = pq.ParquetFile(f)
            batches = [conform_batch(b, job.arrow_schema) for b in parquet.iter_batches(batch_size=65_536)]
            data_bytes = compressed_data_bytes(parquet.metadata)
        yield profile_file(batches, path, data_bytes, job.order, index, per_file)


def compressed_data_bytes(metadata: pq.FileMetaData) -> int:
    """Compressed bytes of a file's column data: its size without footers (a small Hudi file is
    mostly its ~430 KB bloom-filter footer, which says nothing about how big its rows are)."""
    return sum(
        metadata.row_group(g).column(c).total_compressed_size
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
    )


def _read_with_keys(job: GroupJob, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    storage = job.storage()
    assert job.arrow_schema is not None
    for batch in batches:
        for index, path in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            offset = 0
            with storage.open_input(path) as f:
                for data in read_input_batches(f, job.arrow_schema):
                    keys = order_keys(data, job.order, index, offset)
                    offset += data.num_rows
                    pids = assign_pids(keys, job.pid_bounds)
                    yield pa.RecordBatch.from_arrays(
                        [*data.columns, keys, pids], names=[*data.schema.names, KEY_COLUMN, PID_COLUMN]
                    )


def _write_sorted(job: GroupJob, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    token = f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.taskAttemptId()}" if ctx else "0-0-0"
    storage = job.storage()
    assert job.arrow_schema is not None
    schema = BaseFileSchema.create(job.arrow_schema, job.avro_schema_json, table_name=job.table_name)
    results: list[BaseFileWriteResult] = []
    writer: RollingBaseFileWriter | None = None

    def on_create(path: str) -> None:
        storage.write_bytes(marker_path(job.instant_time, path), b"")

    try:
        # Rows arrive range-partitioned and sorted; files are cut by actual size only, never by an
        # estimate, so within a task every file but the last is nearly full.
        for batch in batches:
            if writer is None:
                writer = RollingBaseFileWriter(
                    storage,
                    schema,
                    job.parquet,
                    partition_path=job.partition_path,
                    instant_time=job.instant_time,
                    target_file_size_bytes=job.target_file_bytes,
                    write_token=token,
                    file_id_prefix=str(uuid.uuid4()),
                    on_create=on_create,
                )
            writer.write(batch.select(job.arrow_schema.names))
        if writer is not None:
            results.extend(writer.close())
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if results:
        yield pa.RecordBatch.from_pylist([_result_row(r) for r in results], schema=_RESULT_SCHEMA)


def _result_row(r: BaseFileWriteResult) -> dict[str, Any]:
    return {
        "path": r.path,
        "partition_path": r.partition_path,
        "file_id": r.file_id,
        "file_name": r.file_name,
        "file_size_bytes": r.file_size_bytes,
        "record_count": r.record_count,
        "min_record_key": r.min_record_key,
        "max_record_key": r.max_record_key,
        "write_time_ms": r.write_time_ms,
    }


# ---------------------------------------------------------------- driver


def run_group(spark: SparkSession, job: GroupJob) -> list[BaseFileWriteResult]:
    """Profile, order and rewrite one clustering group; returns the files written."""
    from pyspark.sql.pandas.types import from_arrow_schema

    storage = job.storage()
    schema = unified_input_schema(storage, job.input_paths)
    job = replace(job, arrow_schema=schema)
    sc = spark.sparkContext
    indexed = list(enumerate(job.input_paths))
    slices = max(1, min(len(indexed), sc.defaultParallelism * 2))

    profiles: list[FileProfile] = (
        sc.parallelize(indexed, slices).mapPartitions(lambda rows: _profile_partition(job, rows)).collect()
    )
    order = job.order
    if (
        order.layout is not LayoutStrategy.LINEAR
        and len(order.sort_columns) > 1
        and job.curve_build_method is CurveBuildMethod.SAMPLE
    ):
        sample = sampled_sort_columns(profiles)
        if sample is not None and sample.num_rows:
            bounds = build_sample_bounds(
                sample, list(order.sort_columns), default_num_buckets(sample.num_rows)
            )
            order = replace(order, bounds=bounds)
    index_of = {path: i for i, path in indexed}
    weighted = [sample_keys(p, order, index_of[p.path]) for p in profiles]
    total_bytes = sum(p.size_bytes for p in profiles)
    tasks = max(1, job.writer_tasks)
    cuts = pid_bounds(weighted, total_bytes, -(-total_bytes // tasks), fill_fraction=1.0) if tasks > 1 else []
    job = replace(job, order=order, pid_bounds=tuple(cuts))
    num_tasks = len(cuts) + 1

    if num_tasks > 1:
        # Each range partition is a writer task: adaptive execution must not merge them. Ranging on
        # (pid, key), not pid alone: Spark's sampled bounds over two or three distinct values can put
        # every row in one task; (pid, key) follows the sort order, so the global order still holds.
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    keyed_schema = schema.append(pa.field(KEY_COLUMN, pa.binary())).append(pa.field(PID_COLUMN, pa.int32()))
    paths_df = spark.createDataFrame(indexed, "idx int, path string").repartition(slices)
    keyed = paths_df.mapInArrow(lambda it: _read_with_keys(job, it), from_arrow_schema(keyed_schema))
    if num_tasks > 1:
        keyed = keyed.repartitionByRange(num_tasks, PID_COLUMN, KEY_COLUMN)
    else:
        keyed = keyed.repartition(1)
    # LINEAR (and any single column) sorts by the real columns, exactly; curves by their key.
    exact = order.sort_columns and (order.layout is LayoutStrategy.LINEAR or len(order.sort_columns) == 1)
    sort_columns = [PID_COLUMN, *(order.sort_columns if exact else [KEY_COLUMN])]
    ordered = keyed.sortWithinPartitions(*sort_columns)
    written = ordered.mapInArrow(lambda it: _write_sorted(job, it), from_arrow_schema(_RESULT_SCHEMA))
    rows = written.collect()
    return [
        BaseFileWriteResult(
            path=r["path"],
            partition_path=r["partition_path"],
            file_id=r["file_id"],
            file_name=r["file_name"],
            file_size_bytes=r["file_size_bytes"],
            record_count=r["record_count"],
            min_record_key=r["min_record_key"],
            max_record_key=r["max_record_key"],
            write_time_ms=r["write_time_ms"],
        )
        for r in rows
    ]
