"""Run one clustering group as Spark jobs: profile inputs, then range-partition, sort and write.

Spark distributes the work; Python workers read inputs and write Hudi base files with pyarrow, so
the project controls file names, meta columns and footers. Everything shipped to workers is a
picklable `GroupJob`; workers open storage from the base URI themselves.
"""

from __future__ import annotations

import itertools
import os
import posixpath
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from service.config.parquet import ParquetWriteConfig
from service.errors import CorruptTableError, HudiTableServiceError
from service.table.avro_schema import FILE_NAME_FIELD
from service.table.base_file_writer import BaseFileSchema, BaseFileWriteResult, RollingBaseFileWriter
from service.table.data_files import parse_base_file, parse_log_file
from service.table.fs_view import FileSlice
from service.table.log_format.merge import InstantFilter, MergeConfig
from service.table.log_format.slice_reader import read_file_slice
from service.table.markers import marker_path
from service.table.parquet_dictionary import first_page_row_limit
from service.table.storage import Storage
from strategies.execution.direct_read import reads_inputs_in_writer
from strategies.execution.sort_and_size import (
    FEW_FILES_FILL,
    KEY_COLUMN,
    MIN_FILES_PER_WRITER_TASK,
    PID_COLUMN,
    FileProfile,
    OrderSpec,
    SizeProfile,
    assign_tasks,
    common_prefix,
    compact_sort_keys,
    conform_batch,
    encode_thread_count,
    next_file_end,
    order_keys,
    profile_file,
    read_input_batches,
    sample_keys,
    sampled_sort_columns,
    size_profile,
    task_bounds,
    writer_task_count,
)
from strategies.execution.writer_sort import SortedView, sorts_in_writer, spark_sort_indices
from strategies.layout import CurveBuildMethod, LayoutStrategy, build_sample_bounds, default_num_buckets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_Rows = TypeVar("_Rows", pa.Table, pa.RecordBatch)

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
class MergedSliceInput:
    """A merge-on-read input slice with log files: read merged (base + logs) as Hudi's clustering
    reads it (`MultipleSparkJobExecutionStrategy.readRecordsForGroupWithLogs`)."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file_path: str  # base-relative; "" for a log-only slice
    log_file_paths: tuple[str, ...]  # base-relative

    def file_slice(self, storage: Storage) -> FileSlice:
        """The slice as the merged reader takes it (log order and sizes do not matter to it)."""
        base = None
        if self.base_file_path:
            base = parse_base_file(self.partition_path, posixpath.basename(self.base_file_path))
        logs = []
        for path in self.log_file_paths:
            log = parse_log_file(self.partition_path, posixpath.basename(path))
            if log is None:
                raise CorruptTableError(
                    f"clustering input {path} of file group {self.file_id} is not a log file"
                )
            logs.append(log)
        return FileSlice(self.partition_path, self.file_id, self.base_instant_time, base, tuple(logs))


@dataclass(frozen=True)
class MergedRead:
    """How a group's merge-on-read slices are read: the table's merge rules and the timeline as of
    the clustering instant (blocks of instants not completed are skipped, later ones end the scan)."""

    merge: MergeConfig
    instants: InstantFilter
    # Parallel to `GroupJob.input_paths`: the slice to read merged, None for a base file alone.
    slices: tuple[MergedSliceInput | None, ...]


@dataclass(frozen=True)
class GroupJob:
    """Everything a worker needs for one clustering group."""

    base_uri: str
    storage_options: dict[str, str]
    table_name: str
    instant_time: str
    partition_path: str
    # Base-relative base-file paths; a slice read merged (`merged_read`) is named by its base file,
    # or for a log-only slice by its newest log file.
    input_paths: tuple[str, ...]
    input_sizes: tuple[int, ...]  # bytes of each input slice (base and log files)
    order: OrderSpec
    curve_build_method: CurveBuildMethod
    curve_sample_size: int
    target_file_bytes: int
    parquet: ParquetWriteConfig
    avro_schema_json: str | None
    group_index: int = 0
    # Most Spark tasks that write the group (None: the cluster's default parallelism). A group gets
    # fewer when it is too small for every task to size its files evenly (`writer_task_count`).
    writer_tasks: int | None = None
    arrow_schema: pa.Schema | None = None
    task_bounds: tuple[bytes, ...] = field(default=(), repr=False)
    # The `_hts_pid` value of each writer task: one that Spark's hash partitioning sends to the
    # task's own partition, so every task gets exactly its key range.
    task_values: tuple[int, ...] = (0,)
    key_prefix: bytes = b""  # leading bytes shared by the sampled order keys (see compact_sort_keys)
    # `hoodie.populate.meta.fields`: False writes files as Hudi does for virtual keys (no key footers).
    populate_meta_fields: bool = True
    # Whether the order key column goes through the shuffle. An exact order (LINEAR, or one sort
    # column) sorts by the real columns, so its key only picks the writer task and is dropped
    # before the shuffle: on wide keys that is a fifth of the shuffled bytes.
    ship_key: bool = True
    # Threads that encode a writer task's files at once; > 1 only for a group written by one task
    # that spans several target files (`encode_thread_count`).
    encode_threads: int = 1
    merged_read: MergedRead | None = None  # set when some input slice has log files
    # Writer tasks sort their spilled rows in Arrow (`writer_sort`) instead of Spark sorting them.
    sort_in_writer: bool = False

    def storage(self) -> Storage:
        return Storage.for_base_uri(self.base_uri, self.storage_options)

    @property
    def shuffled_schema(self) -> pa.Schema:
        """The columns read and shuffled: all but `_hoodie_file_name`, which the writer sets to
        each new file's name anyway (`BaseFileWriter.write_row_group`, as Hudi's
        `HoodieRowCreateHandle` does). A file-name string is about two fifths of a row's bytes in
        a typical table, and every shuffled byte is converted, shuffled, sorted (spilled) and
        converted back. Kept only in the odd table sorted by it."""
        assert self.arrow_schema is not None
        schema = self.arrow_schema
        index = schema.get_field_index(FILE_NAME_FIELD)
        if index < 0 or FILE_NAME_FIELD in self.order.sort_columns:
            return schema
        return schema.remove(index)

    def merged_slice(self, index: int) -> MergedSliceInput | None:
        return self.merged_read.slices[index] if self.merged_read is not None else None


def unified_input_schema(storage: Storage, paths: tuple[str, ...], job: GroupJob | None = None) -> pa.Schema:
    """Union of the input files' schemas (older files may lack newer nullable columns). A log-only
    slice has no base file: its schema is its merged read's (the newest data block's SCHEMA)."""
    schemas = []
    for index, path in enumerate(paths):
        merged = job.merged_slice(index) if job is not None else None
        if job is not None and merged is not None and not merged.base_file_path:
            schemas.append(_read_merged(job, storage, index, None).schema.remove_metadata())
            continue
        with storage.open_input(path) as f:
            schemas.append(pq.read_schema(f).remove_metadata())
    return pa.unify_schemas(schemas, promote_options="permissive")


def _read_merged(job: GroupJob, storage: Storage, index: int, schema: pa.Schema | None) -> pa.Table:
    """Input slice `index` read merged (base + logs; deleted keys dropped), as `schema` if given."""
    assert job.merged_read is not None
    merged = job.merged_read.slices[index]
    assert merged is not None
    file_slice = merged.file_slice(storage)
    return read_file_slice(storage, file_slice, job.merged_read.instants, job.merged_read.merge, schema)


def _input_batches(job: GroupJob, storage: Storage, index: int, path: str) -> Iterator[pa.RecordBatch]:
    """Input slice `index` as batches of the group's shuffled schema: its base file, or (with log
    files) its merged read."""
    assert job.arrow_schema is not None
    shuffled = job.shuffled_schema
    if job.merged_slice(index) is not None:
        for batch in _read_merged(job, storage, index, job.arrow_schema).to_batches(max_chunksize=65_536):
            yield conform_batch(batch, shuffled)
        return
    with storage.open_input(path) as f:
        yield from read_input_batches(f, shuffled)


# ---------------------------------------------------------------- worker functions


def _profile_partition(job: GroupJob, rows: Iterable[tuple[int, str]]) -> Iterator[FileProfile]:
    storage = job.storage()
    assert job.arrow_schema is not None
    per_file = max(1, job.curve_sample_size // max(1, len(job.input_paths)))
    # Only the sort columns are sampled, so only they are read; the row count is in the footer.
    wanted = pa.schema([job.arrow_schema.field(c) for c in job.order.sort_columns])
    for index, path in rows:
        if job.merged_slice(index) is not None:
            yield _profile_merged(job, storage, index, path, wanted, per_file)
            continue
        with storage.open_input(path) as f:
            parquet = pq.ParquetFile(f)
            num_rows = parquet.metadata.num_rows
            present = [c for c in wanted.names if c in parquet.schema_arrow.names]
            if present:
                batches = parquet.iter_batches(batch_size=65_536, columns=present)
                values = pa.Table.from_batches([conform_batch(b, wanted) for b in batches], schema=wanted)
            else:  # no sort columns, or a file older than all of them (nulls)
                values = pa.table([pa.nulls(num_rows, f.type) for f in wanted], schema=wanted)
            data_bytes = compressed_data_bytes(parquet.metadata)
        yield profile_file(values, num_rows, path, data_bytes, job.order, index, per_file)


def _profile_merged(
    job: GroupJob, storage: Storage, index: int, path: str, wanted: pa.Schema, per_file: int
) -> FileProfile:
    """The profile of a slice read merged: its rows after the merge; its size the base file's column
    bytes plus its log files' bytes (an estimate of the output, as for base files)."""
    assert job.arrow_schema is not None
    merged = _read_merged(job, storage, index, job.arrow_schema)
    values = merged.select(list(wanted.names))
    data_bytes = 0
    slice_input = job.merged_slice(index)
    assert slice_input is not None
    if slice_input.base_file_path:
        with storage.open_input(slice_input.base_file_path) as f:
            data_bytes += compressed_data_bytes(pq.ParquetFile(f).metadata)
    data_bytes += sum(s.size for p in slice_input.log_file_paths if (s := storage.status(p)) is not None)
    return profile_file(values, merged.num_rows, path, data_bytes, job.order, index, per_file)


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
    for batch in batches:
        for index, path in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            yield from _keyed_batches(job, storage, index, path)


def _keyed_batches(job: GroupJob, storage: Storage, index: int, path: str) -> Iterator[pa.RecordBatch]:
    """Input slice `index` with each row's writer task (`PID_COLUMN`, one of `job.task_values`) and,
    when the order key is shipped, the key."""
    assert job.arrow_schema is not None
    bounds = list(job.task_bounds)
    offset = 0
    for data in _input_batches(job, storage, index, path):
        keys = order_keys(data, job.order, index, offset)
        offset += data.num_rows
        pids = pa.array(np.asarray(job.task_values, dtype=np.int32)[assign_tasks(keys, bounds)])
        if not job.ship_key:
            yield pa.RecordBatch.from_arrays([*data.columns, pids], names=[*data.schema.names, PID_COLUMN])
            continue
        keys = compact_sort_keys(keys, job.key_prefix)
        yield pa.RecordBatch.from_arrays(
            [*data.columns, keys, pids], names=[*data.schema.names, KEY_COLUMN, PID_COLUMN]
        )


def _own_rows(job: GroupJob, task: int) -> Iterator[pa.RecordBatch]:
    """Writer task `task`'s rows read from the inputs themselves (`direct_read`): every input's rows
    keyed as the shuffle would key them, those of other tasks dropped."""
    storage = job.storage()
    value = job.task_values[task]
    for index, path in enumerate(job.input_paths):
        for batch in _keyed_batches(job, storage, index, path):
            mine = batch.filter(pc.equal(batch.column(PID_COLUMN), value))
            if mine.num_rows:
                yield mine


def _write_own_rows(job: GroupJob, tasks: Iterable[int]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        for written in _write_sorted(job, _own_rows(job, task)):
            yield from written.to_pylist()


def _write_sorted(job: GroupJob, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    token = f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.taskAttemptId()}" if ctx else "0-0-0"
    storage = job.storage()
    assert job.arrow_schema is not None
    schema = BaseFileSchema.create(
        job.arrow_schema,
        job.avro_schema_json,
        table_name=job.table_name,
        populate_meta_fields=job.populate_meta_fields,
    )
    writers: list[RollingBaseFileWriter] = []

    def on_create(path: str) -> None:
        storage.write_bytes(marker_path(job.instant_time, path), b"")

    def new_writer() -> RollingBaseFileWriter:
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
        writers.append(writer)
        return writer

    results: list[BaseFileWriteResult] = []
    try:
        if _cuts_by_actual_size(job) and not job.sort_in_writer:
            writer = new_writer()
            for batch in batches:
                writer.write(_with_file_name_column(job, batch))
            results.extend(writer.close())
        else:
            results.extend(_write_spilled(job, new_writer, batches))
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    if results:
        yield pa.RecordBatch.from_pylist([asdict(r) for r in results], schema=_RESULT_SCHEMA)


def _with_file_name_column(job: GroupJob, rows: _Rows) -> _Rows:
    """Shuffled rows in the group's schema: the order key and task columns dropped, and
    `_hoodie_file_name` (not shuffled, see `GroupJob.shuffled_schema`) back in its place, empty
    until the writer sets it."""
    assert job.arrow_schema is not None
    shuffled = job.shuffled_schema
    rows = rows.select(shuffled.names)
    if len(shuffled) == len(job.arrow_schema):
        return rows
    index = job.arrow_schema.get_field_index(FILE_NAME_FIELD)
    field = job.arrow_schema.field(index)
    placeholder = pa.nulls(rows.num_rows, field.type) if field.nullable else pa.repeat("", rows.num_rows)
    return rows.add_column(index, field, placeholder.cast(field.type))


def _cuts_by_actual_size(job: GroupJob) -> bool:
    """The group's only writer cuts its files by actual size, so every file but the last is nearly
    full; several writers (or encode threads) cut them evenly from a size profile."""
    return len(job.task_values) == 1 and job.encode_threads <= 1


class _SpilledRows:
    """A writer task's spilled rows, in the group's order and the group's schema: as spilled (Spark
    sorted them), or gathered in the task's own order (`writer_sort`). Slices of gathered rows are
    copies, so they are made one bounded piece at a time."""

    def __init__(self, job: GroupJob, spilled: pa.Table) -> None:
        self._job = job
        self._table = spilled
        self._sorted: SortedView | None = None
        if job.sort_in_writer:
            columns = (KEY_COLUMN,) if job.ship_key else job.order.sort_columns
            self._sorted = SortedView(spilled, spark_sort_indices(spilled, columns))
        self.num_rows = spilled.num_rows

    def slice(self, start: int, length: int) -> pa.Table:
        view = self._sorted if self._sorted is not None else self._table
        return _with_file_name_column(self._job, view.slice(start, length))

    def pieces(self, start: int, end: int) -> Iterator[pa.Table]:
        for at in range(start, end, _GATHER_ROWS):
            yield self.slice(at, min(_GATHER_ROWS, end - at))


def _spilled_columns(job: GroupJob) -> list[str]:
    """What a writer task spills: the shuffled columns, and the order key when it sorts by it."""
    columns = list(job.shuffled_schema.names)
    if job.sort_in_writer and job.ship_key:
        columns.append(KEY_COLUMN)
    return columns


# Rows gathered at once from a sorted spill: a bounded copy, large enough that Arrow's gather
# costs little per call.
_GATHER_ROWS = 1_000_000
# Rows per batch of the spill file: Spark hands Python batches of 10k rows; Arrow gathers from a
# table of 100k-row chunks about 3x faster than from one of 10k-row chunks.
_SPILL_BATCH_ROWS = 100_000

# Files of a task holding several are sized evenly at up to this share of the target.
_EVEN_FILL = 0.97
_SIZE_STRETCHES = 64
# Rows compressed per stretch; the head calibration below absorbs what small slices misjudge.
_SIZE_SLICE_ROWS = 1024
_SIZE_CALIBRATION_ROWS = 32768


def _write_spilled(
    job: GroupJob, new_writer: Callable[[], RollingBaseFileWriter], batches: Iterable[pa.RecordBatch]
) -> list[BaseFileWriteResult]:
    """Write one writer task's rows from a spill to local scratch.

    The task spills its rows first: to sort them itself (`job.sort_in_writer`), and to size its
    files evenly, since cutting by actual size alone would leave every task a small last file. The
    even cut estimates the compressed size along the rows from dense slices, then cuts files so
    the rest always splits evenly, correcting the estimate by what each written file measured.

    With `job.encode_threads` > 1 (the group's only writer task, on a machine with more cores),
    the files are cut up front and encoded by that many threads at once: pyarrow releases the GIL
    while it encodes and compresses, so a group of a few target files still uses every core.
    """
    columns = _spilled_columns(job)
    selected = (batch.select(columns) for batch in batches)
    first = next(selected, None)
    if first is None:
        return []
    fd, spill = tempfile.mkstemp(prefix="hts-sorted-", suffix=".arrow", dir=_scratch_dir())
    os.close(fd)
    try:
        with pa.OSFile(spill, "wb") as sink, pa.ipc.new_file(sink, first.schema) as ipc:
            for batch in _coalesced(itertools.chain([first], selected), _SPILL_BATCH_ROWS):
                ipc.write_batch(batch)
        with pa.memory_map(spill) as source:
            rows = _SpilledRows(job, pa.ipc.open_file(source).read_all())
            # Each path leaves nothing buffered that references the mapping.
            if _cuts_by_actual_size(job):
                writer = new_writer()
                for piece in rows.pieces(0, rows.num_rows):
                    writer.write(piece)
                return writer.close()
            if job.encode_threads > 1:
                return _write_cut_files_at_once(job, new_writer, rows)
            writer = new_writer()
            _cut_evenly(job, writer, rows)
            return writer.close()
    finally:
        os.unlink(spill)


def _coalesced(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """`batches` regrouped into batches of about `rows` rows (one copy, as they are spilled)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.concat_batches(pending)


def _cut_evenly(job: GroupJob, writer: RollingBaseFileWriter, rows: _SpilledRows) -> None:
    n = rows.num_rows
    if n == 0:
        return
    profile, file_data = _even_file_data(job, writer, rows)
    start, estimated, measured = 0, 0.0, 0
    while start < n:
        correction = measured / estimated if estimated > 0 else 1.0
        end = next_file_end(profile, start, n, file_data, correction)
        writer.write_file(rows.pieces(start, end))
        estimated += profile.bytes_before(end) - profile.bytes_before(start)
        measured = writer.data_bytes_written
        start = end


def _write_cut_files_at_once(
    job: GroupJob, new_writer: Callable[[], RollingBaseFileWriter], rows: _SpilledRows
) -> list[BaseFileWriteResult]:
    """Cut every file from the size profile first (no correction by measured files: they are
    written concurrently), then encode the files in `job.encode_threads` threads."""
    n = rows.num_rows
    if n == 0:
        return []
    profile, file_data = _even_file_data(job, new_writer(), rows)
    cuts = [0]
    while cuts[-1] < n:
        cuts.append(next_file_end(profile, cuts[-1], n, file_data))
    spans = list(itertools.pairwise(cuts))
    writers = [new_writer() for _ in spans]

    def write(index: int) -> list[BaseFileWriteResult]:
        writers[index].write_file(rows.pieces(*spans[index]))
        return writers[index].close()

    with ThreadPoolExecutor(max_workers=job.encode_threads, thread_name_prefix="hts-encode") as pool:
        return [result for results in pool.map(write, range(len(spans))) for result in results]


def _even_file_data(
    job: GroupJob, writer: RollingBaseFileWriter, rows: _SpilledRows
) -> tuple[SizeProfile, float]:
    """The task's size profile and the column data one file should hold (`_EVEN_FILL` of the target
    less the footer)."""
    profile = _size_profile(writer, rows, job.target_file_bytes, job.parquet.page_size_bytes)
    # A task of a few files cannot correct its estimate by the files it measured before the last
    # one: planned at `FEW_FILES_FILL`, a share a few per cent larger than its profile still
    # splits into even files instead of rolling over into a short one.
    few = profile.total < MIN_FILES_PER_WRITER_TASK / 2 * job.target_file_bytes
    fill = FEW_FILES_FILL if few else _EVEN_FILL
    files = max(1.0, profile.total / (fill * job.target_file_bytes))
    overhead = writer.counted_footer_bytes(writer.file_overhead_bytes(int(rows.num_rows / files)))
    return profile, max(1.0, fill * job.target_file_bytes - overhead)


def _size_profile(
    writer: RollingBaseFileWriter, rows: _SpilledRows, target_file_bytes: int, page_size_bytes: int
) -> SizeProfile:
    """Compressed bytes along `rows`, from one dense slice of each of up to 64 equal stretches."""
    n = rows.num_rows
    # The dictionary columns the task's first file will keep (only its first page's rows decide).
    writer.estimate_dictionary_from(rows.slice(0, min(n, first_page_row_limit(page_size_bytes))))
    probe = rows.slice(0, min(n, _SIZE_SLICE_ROWS))
    file_rows = max(1, int(target_file_bytes * probe.num_rows / max(1, writer.compressed_bytes(probe, n))))
    # Slices well below a file's rows, in up to 64 equal stretches.
    slice_rows = max(1, min(_SIZE_SLICE_ROWS, file_rows // 4))
    stretches = max(1, min(_SIZE_STRETCHES, n // slice_rows))
    stretch_rows = n / stretches
    estimates = []
    for i in range(stretches):
        piece = rows.slice(int(i * stretch_rows), max(1, min(slice_rows, int(stretch_rows))))
        estimates.append(writer.compressed_bytes(piece, file_rows) * stretch_rows / piece.num_rows)
    profile = size_profile(n, estimates)
    # Slices compress a little worse than whole files: calibrate on up to a file's first rows
    # compressed at once, so the first file (cut before any file was measured) is sized right too.
    head = rows.slice(0, min(n, file_rows, _SIZE_CALIBRATION_ROWS))
    sliced = profile.bytes_before(head.num_rows)
    calibration = writer.compressed_bytes(head, file_rows) / sliced if sliced > 0 else 1.0
    return size_profile(n, [e * calibration for e in estimates])


def _scratch_dir() -> str | None:
    """Spark's local directory for this application on a worker (where Spark spills too)."""
    from pyspark import SparkFiles

    try:
        root = SparkFiles.getRootDirectory()
    except Exception:  # not on a Spark worker (unit tests): the system default
        return None
    return root if root and os.path.isdir(root) else None


# ---------------------------------------------------------------- driver


def _partition_values(spark: SparkSession, tasks: int) -> tuple[int, ...]:
    """For each of `tasks` partitions, an int that Spark's hash partitioning sends there."""
    if tasks == 1:
        return (0,)
    candidates = spark.range(0, 64 * tasks).selectExpr(
        "CAST(id AS INT) AS value", f"PMOD(HASH(CAST(id AS INT)), {tasks}) AS part"
    )
    first: dict[int, int] = {}
    for row in candidates.collect():
        first.setdefault(row["part"], row["value"])
    if len(first) < tasks:
        raise HudiTableServiceError(f"no hash value found for each of {tasks} writer tasks")
    return tuple(first[p] for p in range(tasks))


def run_group(spark: SparkSession, job: GroupJob) -> list[BaseFileWriteResult]:
    """Profile, order and rewrite one clustering group; returns the files written."""
    from pyspark.sql.pandas.types import from_arrow_schema

    storage = job.storage()
    schema = unified_input_schema(storage, job.input_paths, job)
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
    # Input column bytes estimate the output's size; `writer_task_count` tolerates its error.
    estimated_bytes = sum(p.size_bytes for p in profiles)
    tasks = writer_task_count(
        estimated_bytes, job.target_file_bytes, job.writer_tasks or sc.defaultParallelism
    )
    cuts = task_bounds(weighted, tasks)
    values = _partition_values(spark, len(cuts) + 1)
    # LINEAR (and any single column) sorts by the real columns, exactly; curves by their key.
    exact = bool(order.sort_columns) and (
        order.layout is LayoutStrategy.LINEAR or len(order.sort_columns) == 1
    )
    prefix = common_prefix(weighted) if order.sort_columns and not exact else b""
    rows_per_task = sum(p.rows for p in profiles) / max(1, len(cuts) + 1)
    job = replace(
        job,
        order=order,
        task_bounds=tuple(cuts),
        task_values=values,
        key_prefix=prefix,
        ship_key=not exact,
        encode_threads=encode_thread_count(
            estimated_bytes, job.target_file_bytes, tasks, sc.defaultParallelism
        ),
    )
    # An exact order sorts by the real columns, a curve (or the input order) by its binary key.
    job = replace(
        job,
        sort_in_writer=sorts_in_writer(
            job.shuffled_schema, order.sort_columns if exact else (), rows_per_task
        ),
    )

    shuffled = job.shuffled_schema
    if reads_inputs_in_writer(shuffled, len(values), job.sort_in_writer, job.merged_read is not None):
        # One Spark task per writer task, each reading the inputs itself: no shuffle (`direct_read`).
        own = (
            sc.parallelize(range(len(values)), len(values))
            .mapPartitions(lambda tasks: _write_own_rows(job, tasks))
            .collect()
        )
        return [BaseFileWriteResult(**row) for row in own]
    keyed_schema = shuffled.append(pa.field(KEY_COLUMN, pa.binary())) if job.ship_key else shuffled
    keyed_schema = keyed_schema.append(pa.field(PID_COLUMN, pa.int32()))
    paths_df = spark.createDataFrame(indexed, "idx int, path string").repartition(slices)
    keyed = paths_df.mapInArrow(lambda it: _read_with_keys(job, it), from_arrow_schema(keyed_schema))
    # Hash partitioning on the task value puts each key range in its own task (see task_values);
    # adaptive execution never merges a repartition with an explicit count.
    keyed = keyed.repartition(len(values), PID_COLUMN)
    if not job.sort_in_writer:
        keyed = keyed.sortWithinPartitions(*(order.sort_columns if exact else [KEY_COLUMN]))
    written = keyed.mapInArrow(lambda it: _write_sorted(job, it), from_arrow_schema(_RESULT_SCHEMA))
    # Both paths return `_RESULT_SCHEMA`'s fields, which are `BaseFileWriteResult`'s.
    return [BaseFileWriteResult(**r.asDict()) for r in written.collect()]
