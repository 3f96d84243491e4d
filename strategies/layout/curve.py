"""The entry points clustering calls: a sortable curve key per row, and sort indices for any strategy.

Coordinates per sort column:
- DIRECT (`bounds is None`): the column's 64-bit rank key (`rank.py`), all 64 bits. The key is
  therefore 8 bytes per column, as Hudi's DIRECT Z-order interleaves 8 bytes per column. Keeping only
  the top 64/n bits would not do: a rank key's top bits are shared by every value near zero (all int32
  values, all timestamps of one decade), so a truncated key would lose each column's varying bits.
- SAMPLE (`bounds` from `build_sample_bounds`): the bucket id, `bounds.bits_per_dim` bits per column,
  e.g. 16 bits for the default 2^15 buckets, so two to four columns fit in 8 bytes.

The key is the Z-order interleave (ZORDER) or the Hilbert index (HILBERT) of the coordinates, as a
fixed-width big-endian `binary` column (Spark's mapInArrow has no unsigned or fixed-size-binary type;
Spark and Arrow both order binary by unsigned bytes). Sorting by it gives the curve order; equal keys
keep their input order in `sort_indices`.

One sort column: the key is the column's own rank key (DIRECT) or bucket id (SAMPLE), i.e. plain range
order. Hudi skips the curve for one column and range-orders by the column, so `sort_indices` sorts
such data exactly like LINEAR.

LINEAR (Spark's `sort(cols)`, as Hudi's RowCustomColumnsSortPartitioner): ascending, nulls first,
-0.0 == 0.0, NaN above +inf, strings and binaries by bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from service.config.clustering import LayoutStrategy
from strategies.layout.bits import interleave_words, key_bytes, words_to_bytes
from strategies.layout.hilbert import hilbert_words
from strategies.layout.rank import column_rank_keys, dense_ranks, normalize_column, rank_is_exact
from strategies.layout.sample import Bounds, bucket_ids
from strategies.layout.schema import column_of

DIRECT_BITS_PER_DIM = 64
_ROWS_PER_CHUNK = 32_768  # keeps the per-level working arrays in cache


def _check_request(columns: Sequence[str], strategy: LayoutStrategy, bounds: Bounds | None) -> None:
    if not columns:
        raise ValueError("layout optimization needs at least one sort column")
    if bounds is not None and bounds.columns != tuple(columns):
        raise ValueError(f"bounds were built for columns {list(bounds.columns)}, not {list(columns)}")
    if not isinstance(strategy, LayoutStrategy):
        raise TypeError(f"strategy must be a LayoutStrategy, got {strategy!r}")


def curve_coordinates(
    batch: pa.RecordBatch | pa.Table, columns: Sequence[str], bounds: Bounds | None
) -> tuple[list[np.ndarray], int]:
    """One uint64 coordinate array per sort column, and the bits each coordinate uses."""
    if bounds is None:
        coords = [column_rank_keys(column_of(batch, name), name).keys for name in columns]
        return coords, DIRECT_BITS_PER_DIM
    return bucket_ids(batch, bounds), bounds.bits_per_dim


def curve_key_width(num_columns: int, bounds: Bounds | None) -> int:
    """Bytes of every key `curve_sort_key` returns for these columns and bounds."""
    bits = DIRECT_BITS_PER_DIM if bounds is None else bounds.bits_per_dim
    return key_bytes(num_columns, bits)


def curve_key_words(
    batch: pa.RecordBatch | pa.Table, columns: Sequence[str], strategy: LayoutStrategy, bounds: Bounds | None
) -> np.ndarray:
    """The curve key as (N, W) uint64 words, word 0 most significant (lexicographic = curve order)."""
    _check_request(columns, strategy, bounds)
    if not strategy.is_curve:
        raise ValueError("LINEAR has no curve key: sort by the columns themselves (see sort_indices)")
    coords, bits = curve_coordinates(batch, columns, bounds)
    encode = hilbert_words if strategy is LayoutStrategy.HILBERT else interleave_words
    rows = batch.num_rows
    num_words = (len(columns) * bits + 63) // 64
    words = np.empty((rows, num_words), dtype=np.uint64)
    for start in range(0, rows, _ROWS_PER_CHUNK):
        stop = min(rows, start + _ROWS_PER_CHUNK)
        words[start:stop] = encode([c[start:stop] for c in coords], bits)
    return words


def curve_sort_key(
    batch: pa.RecordBatch | pa.Table, columns: Sequence[str], strategy: LayoutStrategy, bounds: Bounds | None
) -> pa.Array:
    """Fixed-width big-endian `binary` key per row; sorting by it yields the ZORDER/HILBERT order.

    `bounds=None` is the DIRECT method, otherwise SAMPLE. The width is `curve_key_width(...)`, the same
    for every batch given the same columns and bounds, so keys from different workers compare.
    """
    words = curve_key_words(batch, columns, strategy, bounds)
    width = curve_key_width(len(columns), bounds)
    data = words_to_bytes(words, width)
    offsets = np.arange(0, (len(words) + 1) * width, width, dtype=np.int64)
    if offsets[-1] >= 2**31:
        return pa.Array.from_buffers(
            pa.large_binary(), len(words), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    return pa.Array.from_buffers(
        pa.binary(), len(words), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )


def _linear_sort_keys(batch: pa.RecordBatch | pa.Table, columns: Sequence[str]) -> list[np.ndarray]:
    """np.lexsort keys, least significant first: per column (rank, non-null flag)."""
    keys: list[np.ndarray] = []
    for name in reversed(columns):
        values = normalize_column(column_of(batch, name))
        ranks = column_rank_keys(values, name)
        exact = ranks.keys if rank_is_exact(values.type) else dense_ranks(values)
        keys.append(exact)
        keys.append(ranks.valid)  # False (null) sorts first
    return keys


def _order_words(words: np.ndarray) -> np.ndarray:
    if words.shape[1] == 1:
        return np.argsort(words[:, 0], kind="stable")
    return np.lexsort([words[:, i] for i in reversed(range(words.shape[1]))])


def sort_indices(
    batch: pa.RecordBatch | pa.Table, columns: Sequence[str], strategy: LayoutStrategy, bounds: Bounds | None
) -> np.ndarray:
    """Row order (int64 indices, stable) of `batch` under `strategy`; `batch.take(...)` applies it."""
    _check_request(columns, strategy, bounds)
    if not strategy.is_curve or len(columns) == 1:
        return np.lexsort(_linear_sort_keys(batch, columns)).astype(np.int64)
    return _order_words(curve_key_words(batch, columns, strategy, bounds)).astype(np.int64)
