"""A writer task's own sort (`writer_sort`) gives the order Spark's `sortWithinPartitions` gives."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strategies.execution.writer_sort import (
    WRITER_SORT_MAX_ROWS,
    SortedView,
    sorts_in_arrow,
    sorts_in_writer,
    spark_sort_indices,
)

COLUMNS = ["f", "s", "i", "b", "d", "t", "m", "y"]


def _table(rows: int, seed: int) -> pa.Table:
    """Few distinct values per column (so later columns break ties), nulls in every column, NaN,
    -0.0 and infinities among the floats, non-ASCII strings (bytes >= 0x80 sort last)."""
    rng = random.Random(seed)

    def pick(values: list[Any]) -> list[Any]:
        return [rng.choice([*values, None]) for _ in range(rows)]

    floats = [float("nan"), -0.0, 0.0, 1.5, -2.0, float("inf"), float("-inf")]
    return pa.table(
        {
            "f": pa.array(pick(floats), pa.float64()),
            "s": pa.array(pick(["", "a", "b", "ab", "é", "z", "日本"]), pa.string()),
            "i": pa.array(pick([-(2**31), -1, 0, 7, 2**31 - 1]), pa.int32()),
            "b": pa.array(pick([True, False]), pa.bool_()),
            "d": pa.array(pick([dt.date(1969, 12, 31), dt.date(2024, 2, 29)]), pa.date32()),
            "t": pa.array(
                pick([dt.datetime(1960, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 1, 1, tzinfo=dt.UTC)]),
                pa.timestamp("us", tz="UTC"),
            ),
            "m": pa.array(pick([decimal.Decimal("-1.25"), decimal.Decimal("3.50")]), pa.decimal128(10, 2)),
            "y": pa.array(pick([b"", b"\x00", b"\x7f", b"\x80", b"\xff\x01"]), pa.binary()),
            "id": pa.array(range(rows), pa.int64()),
        }
    )


def _comparable(value: Any) -> str:
    """Spark and Arrow values as one text (NaN equal to NaN, -0.0 equal to 0.0: Spark ties them)."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value + 0.0)
    if isinstance(value, dt.datetime):
        return repr(value.timestamp())  # Spark returns naive local times; both read as local here
    if isinstance(value, bytearray):
        return repr(bytes(value))
    return repr(value)


@pytest.mark.spark
@pytest.mark.parametrize("columns", [COLUMNS, ["s", "f"], ["y", "m", "i"], ["t", "d", "b"]])
def test_the_writer_sorts_rows_as_spark_sorts_them(spark: Any, tmp_path: Path, columns: list[str]) -> None:
    table = _table(3_000, seed=len(columns))
    pq.write_table(table, tmp_path / "rows.parquet")  # Spark reads every type as written
    theirs = spark.read.parquet(str(tmp_path)).coalesce(1).sortWithinPartitions(*columns).collect()
    ours = table.take(spark_sort_indices(table, columns)).to_pylist()
    assert [[_comparable(r[c]) for c in columns] for r in ours] == [
        [_comparable(r[c]) for c in columns] for r in theirs
    ]


def test_nan_sorts_after_every_float_and_nulls_first() -> None:
    table = pa.table({"x": pa.array([1.0, None, float("nan"), -1.0, float("inf"), None], pa.float32())})
    order = spark_sort_indices(table, ["x"]).to_pylist()
    assert order[:2] == [1, 5]
    assert order[2:] == [3, 0, 4, 2]


def test_ties_keep_the_spilled_order() -> None:
    table = pa.table({"k": [2, 1, 2, 1, 2], "id": [0, 1, 2, 3, 4]})
    assert table.take(spark_sort_indices(table, ["k"])).column("id").to_pylist() == [1, 3, 0, 2, 4]


def test_nested_sort_columns_and_huge_tasks_are_left_to_spark() -> None:
    schema = pa.schema([("a", pa.int64()), ("n", pa.struct([("x", pa.int32())])), ("l", pa.list_(pa.int8()))])
    assert sorts_in_writer(schema, ["a"], rows_per_task=1_000)
    assert sorts_in_writer(schema, [], rows_per_task=WRITER_SORT_MAX_ROWS)  # by the binary order key
    assert not sorts_in_writer(schema, ["a"], rows_per_task=WRITER_SORT_MAX_ROWS + 1)
    assert not sorts_in_writer(schema, ["a", "n"], rows_per_task=1_000)
    assert not sorts_in_writer(schema, ["l"], rows_per_task=1_000)
    assert not sorts_in_writer(schema, ["missing"], rows_per_task=1_000)
    assert not sorts_in_arrow(pa.map_(pa.string(), pa.int32()))


@pytest.mark.parametrize(
    ("start", "length"), [(0, 1), (17, 1_024), (90_000, 40_000), (0, 150_000), (149_999, 1)]
)
def test_a_sorted_view_gathers_any_slice_of_the_order(start: int, length: int) -> None:
    rng = np.random.default_rng(start + length)
    n = 150_000
    data = pa.table({"k": rng.integers(0, 1_000, n), "s": pa.array([f"v{i}" for i in range(n)])})
    spilled = pa.Table.from_batches(data.to_batches(max_chunksize=7_000))  # many chunks, as spilled
    indices = pa.array(rng.permutation(n))
    gathered = SortedView(spilled, indices).slice(start, length)
    assert gathered.equals(data.take(indices.slice(start, length)))
