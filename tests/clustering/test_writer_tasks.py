"""Several writer tasks per clustering group: task count, key ranges, and evenly sized files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies.execution.direct_read import (
    DIRECT_READ_MAX_TASKS,
    passes_spark_unchanged,
    reads_inputs_in_writer,
)
from strategies.execution.sort_and_size import (
    MIN_FILES_PER_WRITER_TASK,
    WeightedKeys,
    assign_tasks,
    common_prefix,
    compact_sort_keys,
    encode_thread_count,
    next_file_end,
    size_profile,
    task_bounds,
    writer_task_count,
)

TARGET = 100 * 1024 * 1024


def test_writer_task_count_needs_enough_files_per_task() -> None:
    assert writer_task_count(2 * MIN_FILES_PER_WRITER_TASK * TARGET, TARGET, max_tasks=8) == 2
    assert writer_task_count(1000 * TARGET, TARGET, max_tasks=3) == 3
    assert writer_task_count(0, TARGET, max_tasks=3) == 1
    assert writer_task_count(0.85 * TARGET, TARGET, max_tasks=3) == 1  # one file's worth
    assert writer_task_count(40 * TARGET, TARGET, max_tasks=1) == 1


def test_a_group_of_a_few_files_is_spread_over_the_cores() -> None:
    """Hudi's default sizes (1 GB files, 2 GB groups): too few files for even cuts across tasks of 8,
    so each task holds whole planned files (at 0.9 of the target), one each when the cores suffice."""
    # 1.78 target files' worth -> 2 planned files -> 2 tasks of one file each.
    assert writer_task_count(1.78 * TARGET, TARGET, max_tasks=2) == 2
    # 2 target files' worth -> 3 planned files: 3 tasks on 8 cores, one file each ...
    assert writer_task_count(2 * TARGET, TARGET, max_tasks=8) == 3
    # ... and on 2 cores 2 tasks of 2 planned files each, cut evenly.
    assert writer_task_count(2 * TARGET, TARGET, max_tasks=2) == 2
    # 12 planned files on 8 cores: 6 tasks of 2 each, not 8 tasks of 1 or 2.
    assert writer_task_count(10.5 * TARGET, TARGET, max_tasks=8) == 6


def test_task_bounds_split_rows_evenly_across_files_of_different_sizes() -> None:
    # File A: 1,000 rows, keys 0..99 sampled; file B: 3,000 rows, keys 100..199 sampled: the middle
    # of the rows is inside B's keys, not at key 100.
    a = WeightedKeys(tuple(bytes([k]) for k in range(100)), rows_per_key=10.0)
    b = WeightedKeys(tuple(bytes([k]) for k in range(100, 200)), rows_per_key=30.0)
    (bound,) = task_bounds([a, b], tasks=2)
    assert bound == bytes([133])
    assert task_bounds([a, b], tasks=1) == []


def test_assign_tasks_is_monotone_and_bounds_start_their_task() -> None:
    keys = pa.array([b"\x00", b"\x05", b"\x05\x00", b"\x06", b"\xff"], pa.binary())
    index = assign_tasks(keys, [b"\x05", b"\x06"])
    assert index.tolist() == [0, 1, 1, 2, 2]
    assert assign_tasks(keys, []).tolist() == [0] * 5


def _cut_all(stretch_bytes: list[float], rows: int, file_data: float, actual_factor: float) -> list[float]:
    """Simulate a writer task: cut with the profile, measure files `actual_factor` x the estimate."""
    profile = size_profile(rows, stretch_bytes)
    start, estimated, measured = 0, 0.0, 0.0
    sizes = []
    while start < rows:
        correction = measured / estimated if estimated else 1.0
        end = next_file_end(profile, start, rows, file_data, correction)
        est = profile.bytes_before(end) - profile.bytes_before(start)
        sizes.append(est * actual_factor)
        estimated += est
        measured += est * actual_factor
        start = end
    return sizes


@settings(max_examples=300, deadline=None)
@given(
    files=st.floats(min_value=5.3, max_value=40.0),
    skew=st.lists(st.floats(min_value=0.2, max_value=5.0), min_size=1, max_size=64),
    actual_factor=st.floats(min_value=0.96, max_value=1.02),
)
def test_even_cuts_keep_every_file_within_bounds(
    files: float, skew: list[float], actual_factor: float
) -> None:
    """However bytes spread along the rows, with the task's estimate up to a few per cent off, a
    task holding >= 5.3 files' worth (8 planned, the input-based plan 1.5x too high) writes every
    file within [0.8, 1.0] x the target."""
    rows = 1_000_000
    target = 1_000.0
    weights = np.asarray(skew) / sum(skew)
    stretch_bytes = list(weights * files * target / actual_factor)
    sizes = _cut_all(stretch_bytes, rows, 0.97 * target, actual_factor)
    assert sum(sizes) == pytest.approx(files * target)
    # Rows are whole: a file may miss its share by a row's bytes (<= 0.5% here).
    assert max(sizes) <= 1.0 * target, sizes
    assert min(sizes) >= 0.795 * target, sizes


def test_even_cuts_of_a_small_task_give_one_file() -> None:
    assert _cut_all([300.0, 300.0], 10_000, 1_000.0, 1.0) == [pytest.approx(600.0)]


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.binary(min_size=0, max_size=6).map(lambda tail: b"\x00\x00\x07" + tail), max_size=40)
    | st.lists(st.binary(min_size=0, max_size=6), max_size=40),
    prefix=st.binary(min_size=0, max_size=4),
)
def test_compact_sort_keys_keep_the_order_of_any_keys(keys: list[bytes], prefix: bytes) -> None:
    """Keys sharing the prefix, keys around it and keys shorter than it all keep their order."""
    compact = compact_sort_keys(pa.array(keys, pa.binary()), prefix).to_pylist()
    assert sorted(range(len(keys)), key=compact.__getitem__) == sorted(range(len(keys)), key=keys.__getitem__)
    assert len(set(compact)) == len(set(keys))


def test_compact_sort_keys_make_the_first_bytes_tell_curve_keys_apart() -> None:
    keys = [bytes(11) + bytes([i, 255 - i, 0, 0, 1]) for i in range(200)]
    prefix = common_prefix([WeightedKeys(tuple(keys), 1.0)])
    assert prefix == bytes(11)
    compact = compact_sort_keys(pa.array(keys, pa.binary()), prefix).to_pylist()
    assert len({k[:8] for k in compact}) == 200  # Spark's 8-byte sort prefix now differs per key


def test_encode_threads_only_for_a_group_of_one_task_spanning_several_files() -> None:
    assert encode_thread_count(2.5 * TARGET, TARGET, tasks=1, cores=8) == 2
    assert encode_thread_count(20 * TARGET, TARGET, tasks=1, cores=2) == 2
    assert encode_thread_count(1.9 * TARGET, TARGET, tasks=1, cores=8) == 1
    assert encode_thread_count(40 * TARGET, TARGET, tasks=2, cores=2) == 1


@pytest.mark.parametrize(
    ("data_type", "unchanged"),
    [
        (pa.int8(), True), (pa.int64(), True), (pa.float32(), True), (pa.float64(), True),
        (pa.bool_(), True), (pa.string(), True), (pa.binary(), True), (pa.date32(), True),
        (pa.timestamp("us", tz="UTC"), True), (pa.timestamp("us", tz="Asia/Tokyo"), True),
        (pa.decimal128(38, 4), True),
        # Spark converts these on the way through a shuffle: the writer must get what it would get.
        (pa.timestamp("us"), False), (pa.timestamp("ns", tz="UTC"), False),
        (pa.timestamp("ms", tz="UTC"), False),
        (pa.uint32(), False), (pa.float16(), False), (pa.large_string(), False), (pa.large_binary(), False),
        (pa.date64(), False), (pa.struct([("x", pa.int32())]), False), (pa.list_(pa.int32()), False),
        (pa.map_(pa.string(), pa.int32()), False), (pa.dictionary(pa.int32(), pa.string()), False),
    ],
)  # fmt: skip
def test_only_types_a_spark_round_trip_keeps_are_read_by_the_writer(
    data_type: pa.DataType, unchanged: bool
) -> None:
    assert passes_spark_unchanged(data_type) is unchanged
    schema = pa.schema([("id", pa.int64()), ("v", data_type)])
    assert reads_inputs_in_writer(schema, 2, sorts_in_writer=True, merged=False) is unchanged


def test_writer_tasks_read_their_inputs_only_when_few_sorting_and_base_files_alone() -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    assert reads_inputs_in_writer(schema, 1, sorts_in_writer=True, merged=False)
    assert reads_inputs_in_writer(schema, DIRECT_READ_MAX_TASKS, sorts_in_writer=True, merged=False)
    # Each task reads every input: past a few tasks the shuffle reads less.
    assert not reads_inputs_in_writer(schema, DIRECT_READ_MAX_TASKS + 1, sorts_in_writer=True, merged=False)
    # Spark sorts (past WRITER_SORT_MAX_ROWS, or nested sort columns): the rows go through its shuffle.
    assert not reads_inputs_in_writer(schema, 2, sorts_in_writer=False, merged=False)
    # A slice with log files would be merged once per task.
    assert not reads_inputs_in_writer(schema, 2, sorts_in_writer=True, merged=True)
