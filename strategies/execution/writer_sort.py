"""Sorting a writer task's rows in Arrow, in the order Spark's `sortWithinPartitions` gives them.

A writer task spills its rows to local scratch before it writes them (`clustering_job._write_spilled`),
so it can sort them there instead of asking Spark to: Spark's sort of a task's rows spills and
merges them on disk when they outgrow the executor's execution memory (at Hudi's default 1 GB
files it was a fifth of the task), while an Arrow sort of the sort columns plus a gather of the
rows in that order costs a few seconds. The rows stay in the memory-mapped spill; only the sort
columns, one index per row and one slice of gathered rows are in memory at once, so the sort
runs in the writer only up to `WRITER_SORT_MAX_ROWS` rows a task (Spark's external sort beyond).

Spark's ascending order (`SortOrder` with the default `NULLS FIRST`, `SQLOrderingUtil`):
nulls first, NaN greater than every other float, strings and binaries by unsigned bytes.
Arrow agrees except that it puts NaN first beside the nulls, so a float column is preceded by an
"is NaN" key (null for a null value).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

# Rows one writer task sorts itself: its sort columns and 8-byte indices stay in memory (about
# 1 GB at 24-byte keys); larger tasks keep Spark's external sort.
WRITER_SORT_MAX_ROWS = 40_000_000


def sorts_in_arrow(data_type: pa.DataType) -> bool:
    """Whether Arrow sorts values of this type as Spark does (nested and other types: Spark sorts)."""
    t = pa.types
    return bool(
        t.is_integer(data_type)
        or t.is_floating(data_type)
        or t.is_decimal(data_type)
        or t.is_boolean(data_type)
        or t.is_string(data_type)
        or t.is_large_string(data_type)
        or t.is_binary(data_type)
        or t.is_large_binary(data_type)
        or t.is_date(data_type)
        or t.is_timestamp(data_type)
    )


def sorts_in_writer(schema: pa.Schema, sort_columns: Sequence[str], rows_per_task: float) -> bool:
    """Whether writer tasks of about `rows_per_task` rows sort by `sort_columns` themselves."""
    if rows_per_task > WRITER_SORT_MAX_ROWS:
        return False
    return all(schema.get_field_index(c) >= 0 and sorts_in_arrow(schema.field(c).type) for c in sort_columns)


def spark_sort_indices(rows: pa.Table, sort_columns: Sequence[str]) -> pa.Array:
    """Row indices of `rows` in Spark's ascending order by `sort_columns` (ties in input order)."""
    keys: dict[str, pa.Array | pa.ChunkedArray] = {}
    for index, name in enumerate(sort_columns):
        column = rows.column(name)
        if pa.types.is_floating(column.type):
            keys[f"nan{index}"] = pc.is_nan(column)  # null stays null: nulls still come first
        keys[f"value{index}"] = column
    table = pa.table(keys).combine_chunks()
    return pc.sort_indices(
        table, sort_keys=[(name, "ascending") for name in table.column_names], null_placement="at_start"
    )


# Below this many rows a gather goes batch by batch (`SortedView.slice`): Arrow's `Table.take` on
# a table of many chunks costs about as much for a thousand rows as for a million.
_SMALL_TAKE_ROWS = 65_536


class SortedView:
    """Rows of a (memory-mapped, many-chunk) table in the order of `indices`, gathered one slice at
    a time: only the gathered slice is copied."""

    def __init__(self, rows: pa.Table, indices: pa.Array) -> None:
        self._rows = rows
        self._indices = indices
        self._batches = rows.to_batches()
        self._offsets = np.cumsum([0, *(b.num_rows for b in self._batches)])

    def slice(self, start: int, length: int) -> pa.Table:
        """Rows `start` to `start + length` of the sorted order."""
        wanted = self._indices.slice(start, length)
        if length >= _SMALL_TAKE_ROWS or not self._batches:
            return self._rows.take(wanted)
        return pa.Table.from_batches([self._take_by_batch(wanted.to_numpy())], schema=self._rows.schema)

    def _take_by_batch(self, wanted: npt.NDArray[np.int64]) -> pa.RecordBatch:
        batch_of = np.searchsorted(self._offsets, wanted, side="right") - 1
        by_batch = np.argsort(batch_of, kind="stable")
        grouped = batch_of[by_batch]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        ends = np.r_[starts[1:], len(grouped)]
        pieces = [
            self._batches[grouped[lo]].take(pa.array(wanted[by_batch[lo:hi]] - self._offsets[grouped[lo]]))
            for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        gathered = pa.concat_batches(pieces) if pieces else self._batches[0].slice(0, 0)
        back = np.empty_like(by_batch)
        back[by_batch] = np.arange(len(by_batch))
        return gathered.take(pa.array(back))
