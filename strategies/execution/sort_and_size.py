"""Sort-and-size execution (Hudi's SparkSortAndSizeExecutionStrategy), as functions on Arrow data.

A clustering group runs as two passes over its input files, both inside Spark's Python workers:

1. *profile*: read each input file, count rows and bytes, and keep a sample of the order key;
2. *rewrite*: read again, attach the order key and, when the group is big enough for several
   writer tasks, the task whose key range holds the row (`task_bounds`: row quantiles of the
   sample); Spark shuffles each range to its task, the task sorts it (`writer_sort`; Spark does
   for very large tasks) and writes Hudi base files, cut by actual size (one task) or evenly from
   a size profile (`next_file_end`, several tasks).

Order keys are unsigned-byte-ordered binaries (Spark and Arrow compare binary that way):
no sort columns → input order (file index, row index); LINEAR → the first sort column's rank
(monotone in the full lexicographic order, which Spark's sort then makes exact); ZORDER/HILBERT →
the curve value, DIRECT or from SAMPLE bounds.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from strategies.layout import Bounds, LayoutStrategy, column_rank_keys, curve_sort_key

KEY_COLUMN = "_hts_key"
PID_COLUMN = "_hts_pid"
MAX_SAMPLE_PER_FILE = 20_000


@dataclass(frozen=True)
class OrderSpec:
    layout: LayoutStrategy
    sort_columns: tuple[str, ...]
    bounds: Bounds | None = None  # SAMPLE curve bounds; None means DIRECT

    @property
    def keeps_input_order(self) -> bool:
        return not self.sort_columns


@dataclass(frozen=True)
class FileProfile:
    """What the profile pass learns about one input file."""

    path: str
    rows: int
    size_bytes: int
    sample_keys: tuple[bytes, ...] = field(repr=False, default=())
    sample_columns: bytes = field(repr=False, default=b"")  # Arrow IPC of sampled sort columns


def read_input_batches(
    source: pa.NativeFile | str, schema: pa.Schema, filesystem: object = None
) -> Iterator[pa.RecordBatch]:
    """Batches of one input base file, conformed to `schema` (missing columns null); columns of the
    file that `schema` lacks are not read."""
    parquet = (
        pq.ParquetFile(source, filesystem=filesystem) if filesystem is not None else pq.ParquetFile(source)
    )
    present = set(parquet.schema_arrow.names)
    columns = [name for name in schema.names if name in present]
    for batch in parquet.iter_batches(batch_size=65_536, columns=columns or None):
        yield conform_batch(batch, schema)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.remove_metadata() == schema.remove_metadata():
        return batch
    columns = []
    for f in schema:
        idx = batch.schema.get_field_index(f.name)
        columns.append(batch.column(idx).cast(f.type) if idx >= 0 else pa.nulls(batch.num_rows, f.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def order_keys(batch: pa.RecordBatch, spec: OrderSpec, file_index: int, row_offset: int) -> pa.Array:
    """The order key of every row of `batch` (see module docstring)."""
    n = batch.num_rows
    if spec.keeps_input_order:
        seq = (np.uint64(file_index) << np.uint64(40)) + np.arange(
            row_offset, row_offset + n, dtype=np.uint64
        )
        return _words_to_binary(seq.reshape(n, 1))
    if spec.layout is LayoutStrategy.LINEAR or len(spec.sort_columns) == 1:
        column = spec.sort_columns[0]
        rank = column_rank_keys(batch.column(batch.schema.get_field_index(column)), column)
        # Spark sorts nulls first ascending: a leading 0 word for nulls, 1 for values.
        words = np.stack([rank.valid.astype(np.uint64), rank.keys.astype(np.uint64)], axis=1)
        return _words_to_binary(words)
    return curve_sort_key(batch, list(spec.sort_columns), spec.layout, spec.bounds)


def _words_to_binary(words: np.ndarray) -> pa.Array:
    n, width = words.shape
    raw = np.ascontiguousarray(words.astype(">u8")).view(np.uint8).reshape(n, width * 8)
    offsets = np.arange(0, (n + 1) * width * 8, width * 8, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw.tobytes())])


def sample_rows(n: int, limit: int, seed: int) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


@dataclass(frozen=True)
class WeightedKeys:
    """Sampled order keys of one input file, each standing for `rows_per_key` rows of it."""

    keys: tuple[bytes, ...]
    rows_per_key: float


def sample_keys(profile: FileProfile, spec: OrderSpec, file_index: int) -> WeightedKeys:
    """Order keys of a file's sample; computed on the driver, after SAMPLE bounds are known."""
    if profile.sample_keys:
        keys = profile.sample_keys
    elif profile.sample_columns:
        table = pa.ipc.open_stream(profile.sample_columns).read_all().combine_chunks()
        batch = table.to_batches()[0] if table.num_rows else None
        keys = tuple(order_keys(batch, spec, file_index, 0).to_pylist()) if batch is not None else ()
    else:
        keys = ()
    return WeightedKeys(keys, profile.rows / len(keys) if keys else 0.0)


# A writer task sizes its files evenly within [0.8, 0.97] x the target, which is always possible
# once it holds >= 4 files' worth, and holds up to a few per cent of error in the task's own size
# estimate from ~5 files' worth; planning 8 per task leaves room for the input-based estimate of
# the output size to be 1.5x too high.
MIN_FILES_PER_WRITER_TASK = 8
# Files of a group too small for that, and of a task holding a few, are planned at this fill of the
# target: estimates (the output's size from the input's, a task's from its size profile) then leave
# room for the file to come out ~10 % larger without rolling over into a short one.
FEW_FILES_FILL = 0.9


def writer_task_count(estimated_bytes: float, target_file_bytes: int, max_tasks: int) -> int:
    """How many Spark tasks write one group.

    A group of `MIN_FILES_PER_WRITER_TASK` files per task or more: as many tasks as cores allow
    while each task still holds enough files for every file to be sized evenly within the bounds.
    A smaller group (Hudi's default sizes: 1 GB files in 2 GB groups) written by one task would be
    sorted on one core however many the machine has, where Hudi's bulk insert sorts and writes each
    output group (`numOutputGroups`) in its own Spark task. So its files, planned at
    `FEW_FILES_FILL` of the target, are spread over as few tasks as `max_tasks` allows: one file per
    task when the cores suffice, else an equal number each; each task still cuts its share evenly
    by its own size profile.
    """
    target = max(1, target_file_bytes)
    even = int(estimated_bytes / target // MIN_FILES_PER_WRITER_TASK)
    if even >= 2 or max_tasks < 2:
        return max(1, min(max_tasks, even))
    files = math.ceil(estimated_bytes / (FEW_FILES_FILL * target))
    if files < 2:
        return 1
    return math.ceil(files / math.ceil(files / max_tasks))


def encode_thread_count(estimated_bytes: float, target_file_bytes: int, tasks: int, cores: int) -> int:
    """Threads that encode a writer task's files concurrently.

    A group that one task writes although it spans several target files (the job allows one writer
    task: `GroupJob.writer_tasks`) would encode its files one after another on one core. Such a
    task cuts its files up front and encodes one per thread instead, as many as the cores and its
    files allow; tasks of a split group keep one thread each (the cores are already busy).
    """
    if tasks > 1:
        return 1
    files = int(estimated_bytes / max(1, target_file_bytes))
    return max(1, min(cores, files))


def task_bounds(samples: Sequence[WeightedKeys], tasks: int) -> list[bytes]:
    """Order-key boundaries that cut the group into `tasks` parts of about equal row counts.

    Boundaries are weighted quantiles of the sampled keys (each sample stands for its file's rows
    divided by the file's sample count); a part starts at its boundary key, inclusive.
    """
    keys = [k for s in samples for k in s.keys]
    weights = [s.rows_per_key for s in samples for _ in s.keys]
    if tasks <= 1 or not keys:
        return []
    order = sorted(range(len(keys)), key=keys.__getitem__)
    cumulative = np.cumsum(np.asarray(weights, dtype=np.float64)[order])
    total = float(cumulative[-1])
    bounds: list[bytes] = []
    for k in range(1, tasks):
        idx = int(np.searchsorted(cumulative, k * total / tasks, side="left"))
        if idx >= len(order):
            break
        key = keys[order[idx]]
        if not bounds or key > bounds[-1]:
            bounds.append(key)
    return bounds


def assign_tasks(keys: pa.Array, bounds: Sequence[bytes]) -> np.ndarray:
    """Writer-task index per row: the number of boundaries <= its key (monotone in the key)."""
    index = np.zeros(len(keys), dtype=np.int32)
    for bound in bounds:
        index += pc.greater_equal(keys, pa.scalar(bound, keys.type)).to_numpy(zero_copy_only=False)
    return index


def common_prefix(samples: Sequence[WeightedKeys]) -> bytes:
    """The leading bytes every sampled key shares (curve keys of narrow values share many)."""
    keys = [k for s in samples for k in s.keys]
    if not keys:
        return b""
    low, high = min(keys), max(keys)
    n = 0
    while n < min(len(low), len(high)) and low[n] == high[n]:
        n += 1
    return low[:n]


# The rank bytes as raw bytes, made scalars where used: `pa.scalar` at import would import pandas
# (pyarrow's conversion looks for it), a tenth of a second on every command and daemon start.
_BELOW, _SHARED, _ABOVE = b"\x00", b"\x01", b"\x02"


def compact_sort_keys(keys: pa.Array, prefix: bytes) -> pa.Array:
    """Keys in the same order, with `prefix` dropped where a key starts with it.

    Spark's sort compares an 8-byte prefix of a binary column first and the whole value only on
    ties; curve keys of values far below their type's range start with many constant bytes (two
    int columns under 2^20: 11 of 16), so every comparison would tie and sorting runs twice as
    slow. A leading byte keeps the order exact for keys that do not share the (sampled) prefix:
    0 = below it, then the full key; 1 = starts with it, then the rest; 2 = above it, then the full key.
    """
    if not prefix or not len(keys):
        return keys
    head = pc.binary_slice(keys, 0, len(prefix))
    shared = pc.equal(head, pa.scalar(prefix, keys.type))
    below = pc.less(head, pa.scalar(prefix, keys.type))
    below_rank, shared_rank, above_rank = (pa.scalar(r, pa.binary()) for r in (_BELOW, _SHARED, _ABOVE))
    rank = pc.if_else(shared, shared_rank, pc.if_else(below, below_rank, above_rank))
    longest = int(pc.max(pc.binary_length(keys)).as_py() or 0)  # pyarrow needs an explicit stop
    body = pc.if_else(shared, pc.binary_slice(keys, len(prefix), max(longest, len(prefix))), keys)
    return pc.binary_join_element_wise(rank, body, pa.scalar(b""))


@dataclass(frozen=True)
class SizeProfile:
    """Estimated compressed bytes along a sorted run of rows: `cumulative[i]` bytes before row
    `rows_at[i]` (piecewise linear in between), from compressing a slice of every stretch."""

    rows_at: np.ndarray
    cumulative: np.ndarray

    @property
    def total(self) -> float:
        return float(self.cumulative[-1])

    def bytes_before(self, row: int) -> float:
        return float(np.interp(row, self.rows_at, self.cumulative))

    def row_after(self, start: int, nbytes: float) -> int:
        """The first row at which `nbytes` more bytes than before `start` are reached."""
        goal = self.bytes_before(start) + nbytes
        return int(np.ceil(np.interp(goal, self.cumulative, self.rows_at)))


def size_profile(num_rows: int, stretch_bytes: Sequence[float]) -> SizeProfile:
    """A profile from the estimated bytes of equal stretches of `num_rows` rows, in order."""
    stretches = max(1, len(stretch_bytes))
    edges = np.linspace(0, num_rows, stretches + 1).round().astype(np.int64)
    cumulative = np.concatenate([[0.0], np.cumsum(np.asarray(stretch_bytes, dtype=np.float64))])
    return SizeProfile(edges, cumulative)


def next_file_end(
    profile: SizeProfile, start: int, num_rows: int, file_data_bytes: float, correction: float = 1.0
) -> int:
    """Where the file starting at row `start` should end so the rest splits into even files.

    `file_data_bytes` is the most column data one file should hold; `correction` scales the
    profile by what the files written so far measured against it. Evenly sized files, all but
    possibly the first and last within a few per cent of each other, are each at least 0.8x
    `file_data_bytes` whenever the rest holds at least 4 files' worth.
    """
    left = (profile.total - profile.bytes_before(start)) * correction
    files_left = max(1, int(np.ceil(left / max(1.0, file_data_bytes))))
    if files_left == 1:
        return num_rows
    end = profile.row_after(start, left / files_left / correction)
    return min(num_rows, max(start + 1, end))


def profile_file(
    sort_values: pa.Table,
    num_rows: int,
    path: str,
    size_bytes: int,
    spec: OrderSpec,
    file_index: int,
    sample_limit: int,
) -> FileProfile:
    """Row count of one file and a sample: input positions (no sort columns) or sort-column values
    (`sort_values` holds the file's sort columns, every row)."""
    if not num_rows:
        return FileProfile(path, 0, size_bytes)
    picked = sample_rows(num_rows, min(sample_limit, MAX_SAMPLE_PER_FILE), seed=file_index)
    if spec.keeps_input_order:
        seq = (np.uint64(file_index) << np.uint64(40)) + picked.astype(np.uint64)
        keys = tuple(_words_to_binary(seq.reshape(-1, 1)).to_pylist())
        return FileProfile(path, num_rows, size_bytes, keys)
    sample = sort_values.select(list(spec.sort_columns)).take(pa.array(picked))
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, sample.schema) as writer:
        writer.write_table(sample)
    return FileProfile(path, num_rows, size_bytes, (), sink.getvalue())


def sampled_sort_columns(profiles: Iterable[FileProfile]) -> pa.Table | None:
    """All sampled sort-column values (for building SAMPLE curve bounds on the driver)."""
    tables = [pa.ipc.open_stream(p.sample_columns).read_all() for p in profiles if p.sample_columns]
    return pa.concat_tables(tables, promote_options="permissive") if tables else None
