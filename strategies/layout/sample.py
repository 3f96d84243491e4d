"""SAMPLE method: range bounds per sort column from a sample, and rows mapped to balanced bucket ids.

Like Hudi's `RangeSampleSort`: each column's sampled values are sorted and cut at equal-count
quantiles; a value's bucket is the number of bounds below it (a value equal to a bound falls in that
bound's bucket). Bucketing makes every dimension uniform, so Z-order and Hilbert split skewed and
uniform columns alike, which the raw bits of DIRECT cannot.

Ids: values map into [0, num_buckets), nulls to the extra bucket `num_buckets` (after every value, as
Hudi puts nulls after the last bound), so each dimension needs `num_buckets.bit_length()` bits. A column
with fewer distinct sampled values than buckets has its buckets spread over the whole id range (Hudi's
fill factor, without its random jitter), so it still takes its share of the curve's top bits.

Bounds compare whole values: for exact types through their rank keys, for strings, binaries and wide
decimals as Arrow values (`Bounds` carries them as a small Arrow array). `Bounds` pickles, for Spark's
broadcast; its size is about 8 bytes (or one value) per bucket per column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strategies.layout.rank import (
    column_rank_keys,
    normalize_column,
    rank_is_exact,
    valid_mask,
)
from strategies.layout.schema import column_of

MAX_DEFAULT_BUCKETS = 1 << 15
_MIN_SAMPLES_PER_BUCKET = 8


@dataclass(frozen=True)
class DimensionBounds:
    """Strictly increasing bounds of one column: rank keys (exact types) or the values themselves."""

    column: str
    rank_bounds_le: bytes = b""  # little-endian uint64 rank keys, when `values` is None
    values: pa.Array | None = None

    @property
    def rank_bounds(self) -> np.ndarray:
        return np.frombuffer(self.rank_bounds_le, dtype="<u8").astype(np.uint64)

    @property
    def num_bounds(self) -> int:
        return len(self.values) if self.values is not None else len(self.rank_bounds_le) // 8


@dataclass(frozen=True)
class Bounds:
    """Per-column range bounds for the SAMPLE method; one entry per sort column, in order."""

    num_buckets: int
    dimensions: tuple[DimensionBounds, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(d.column for d in self.dimensions)

    @property
    def bits_per_dim(self) -> int:
        """Bits of one bucket id, the null bucket `num_buckets` included."""
        return self.num_buckets.bit_length()


def default_num_buckets(sample_rows: int) -> int:
    """Buckets per column for a sample: a power of two, at least ~8 sampled rows each, at most 2^15."""
    target = max(2, sample_rows // _MIN_SAMPLES_PER_BUCKET)
    return min(MAX_DEFAULT_BUCKETS, 1 << (target.bit_length() - 1))


def _quantile_positions(count: int, num_buckets: int) -> np.ndarray:
    """Index (in sorted order) of the value closing each of the first num_buckets-1 buckets."""
    if count == 0 or num_buckets <= 1:
        return np.zeros(0, dtype=np.int64)
    j = np.arange(1, num_buckets, dtype=np.int64)
    return np.maximum((j * count + num_buckets - 1) // num_buckets - 1, 0)  # ceil(j*count/B) - 1


def _dimension_bounds(column: str, values: pa.Array, num_buckets: int) -> DimensionBounds:
    # A bound equal to the sampled maximum is dropped: the bucket above it would hold nothing sampled.
    if rank_is_exact(values.type):
        ranks = column_rank_keys(values, column)
        present = np.sort(ranks.keys[ranks.valid])
        bounds = np.unique(present[_quantile_positions(len(present), num_buckets)])
        if bounds.size and bounds[-1] == present[-1]:
            bounds = bounds[:-1]
        return DimensionBounds(column=column, rank_bounds_le=bounds.astype("<u8").tobytes())
    present_values = values.filter(pa.array(valid_mask(values)))
    ordered = present_values.take(pc.sort_indices(present_values))
    picked = pc.unique(ordered.take(pa.array(_quantile_positions(len(ordered), num_buckets))))
    if len(picked) and picked[-1] == ordered[-1]:  # sorted input: unique() kept it sorted
        picked = picked.slice(0, len(picked) - 1)
    return DimensionBounds(column=column, values=picked)


def build_sample_bounds(
    sample: pa.Table | pa.RecordBatch, columns: Sequence[str], num_buckets: int
) -> Bounds:
    """Equal-count bounds of each sort column over `sample` (nulls ignored)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be at least 1, got {num_buckets}")
    dimensions = tuple(
        _dimension_bounds(name, normalize_column(column_of(sample, name)), num_buckets) for name in columns
    )
    return Bounds(num_buckets=num_buckets, dimensions=dimensions)


def _count_bounds_below(values: pa.Array, bounds: pa.Array) -> np.ndarray:
    """For each value, how many bounds are strictly below it (exact Arrow comparison, one merged sort)."""
    if bounds.type != values.type:
        bounds = bounds.cast(values.type)
    nb = len(bounds)
    combined = pa.concat_arrays([bounds, values])
    is_value = np.concatenate([np.zeros(nb, dtype=np.uint8), np.ones(len(values), dtype=np.uint8)])
    # A bound sorts after the values equal to it, so it is not counted below them.
    order = pc.sort_indices(
        pa.table({"v": combined, "f": 1 - is_value}),
        sort_keys=[("v", "ascending"), ("f", "ascending")],
        null_placement="at_end",
    ).to_numpy()
    is_bound = order < nb
    below = np.cumsum(is_bound)
    counts = np.empty(len(values), dtype=np.int64)
    counts[order[~is_bound] - nb] = below[~is_bound]
    return counts


def _value_bucket(dim: DimensionBounds, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(number of bounds below each value, validity)."""
    ranks = column_rank_keys(values, dim.column)
    if dim.values is None:
        return np.searchsorted(dim.rank_bounds, ranks.keys, side="left").astype(np.int64), ranks.valid
    # Rank keys (8-byte prefixes) settle every value whose prefix no bound shares; the rest compare whole.
    bound_prefixes = column_rank_keys(dim.values, dim.column).keys
    low = np.searchsorted(bound_prefixes, ranks.keys, side="left").astype(np.int64)
    high = np.searchsorted(bound_prefixes, ranks.keys, side="right")
    unsettled = np.flatnonzero((low != high) & ranks.valid)
    if unsettled.size:
        low[unsettled] = _count_bounds_below(values.take(pa.array(unsettled)), dim.values)
    return low, ranks.valid


def bucket_ids(batch: pa.RecordBatch | pa.Table, bounds: Bounds) -> list[np.ndarray]:
    """Bucket id (uint64) per row for each of `bounds.columns`: [0, num_buckets), nulls num_buckets."""
    ids: list[np.ndarray] = []
    for dim in bounds.dimensions:
        values = normalize_column(column_of(batch, dim.column))
        below, valid = _value_bucket(dim, values)
        value_buckets = dim.num_bounds + 1
        if value_buckets < bounds.num_buckets:
            below = below * bounds.num_buckets // value_buckets
        ids.append(np.where(valid, below, bounds.num_buckets).astype(np.uint64))
    return ids
