"""SAMPLE bounds: balanced buckets on skewed data, exact comparisons, nulls last, small and picklable."""

from __future__ import annotations

import bisect
import itertools
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import ConfigError
from strategies.layout.sample import Bounds, bucket_ids, build_sample_bounds, default_num_buckets


def _skewed_table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"exp": rng.exponential(scale=3.0, size=rows), "uni": rng.uniform(-5, 5, size=rows)})


def test_sample_bounds_balance_exponential_and_uniform_columns() -> None:
    data = _skewed_table(1_000_000, seed=7)
    rng = np.random.default_rng(8)
    sample = data.take(rng.choice(data.num_rows, 200_000, replace=False))
    bounds = build_sample_bounds(sample, ["exp", "uni"], num_buckets=64)
    for ids in bucket_ids(data, bounds):
        counts = np.bincount(ids.astype(np.int64), minlength=64)
        assert len(counts) == 64  # no null bucket used, every value bucket in [0, 64)
        assert counts.max() <= 1.2 * counts.min(), counts


def test_sample_bucket_is_count_of_bounds_below() -> None:
    sample = pa.table({"x": pa.array(list(range(100)), pa.int32())})
    bounds = build_sample_bounds(sample, ["x"], num_buckets=4)
    assert bounds.dimensions[0].rank_bounds.size == 3
    batch = pa.table({"x": pa.array([-10, 0, 24, 25, 49, 50, 74, 75, 99, 1000, None], pa.int32())})
    (ids,) = bucket_ids(batch, bounds)
    assert ids.tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 4]
    assert build_sample_bounds(sample, ["x"], num_buckets=100).dimensions[0].num_bounds == 99
    assert (
        build_sample_bounds(sample, ["x"], num_buckets=1000).dimensions[0].num_bounds == 99
    )  # a value equal to a bound stays below it


def test_sample_few_distinct_values_spread_over_all_ids() -> None:
    sample = pa.table({"flag": pa.array([True, False] * 500), "n": pa.array(np.arange(1000))})
    bounds = build_sample_bounds(sample, ["flag", "n"], num_buckets=256)
    flag_ids, _ = bucket_ids(pa.table({"flag": [False, True, None], "n": [1, 2, 3]}), bounds)
    assert flag_ids.tolist() == [0, 128, 256]
    assert bounds.bits_per_dim == 9


def test_sample_nulls_take_the_extra_last_bucket() -> None:
    sample = pa.table({"s": pa.array(["a", None, "c", "e", None])})
    bounds = build_sample_bounds(sample, ["s"], num_buckets=8)
    (ids,) = bucket_ids(pa.table({"s": pa.array([None, "zzz", "a"])}), bounds)
    assert ids[0] == 8 and ids[1] < 8 and ids[2] < ids[1]


def _reference_buckets(sample: list[str], values: list[str], num_buckets: int) -> list[int]:
    ordered = sorted(s.encode() for s in sample)
    picks = [ordered[max(-(-j * len(ordered) // num_buckets) - 1, 0)] for j in range(1, num_buckets)]
    bounds = sorted(set(picks))
    if bounds and bounds[-1] == ordered[-1]:
        bounds.pop()
    groups = len(bounds) + 1
    return [bisect.bisect_left(bounds, v.encode()) * num_buckets // groups for v in values]


_PREFIXED = st.sampled_from(["", "customer#", "customer#0000", "ab"]).flatmap(
    lambda p: st.text(alphabet="0123456789abc\u00e9\U0001f600", max_size=6).map(lambda s: p + s)
)


@settings(max_examples=60)
@given(
    st.lists(_PREFIXED, min_size=1, max_size=80),
    st.lists(_PREFIXED, min_size=1, max_size=80),
    st.sampled_from([2, 5, 16]),
)
def test_sample_strings_compare_whole_values_beyond_the_prefix(
    sample: list[str], values: list[str], num_buckets: int
) -> None:
    bounds = build_sample_bounds(pa.table({"s": sample}), ["s"], num_buckets)
    for data_type in (pa.string(), pa.large_string()):
        (ids,) = bucket_ids(pa.table({"s": pa.array(values, data_type)}), bounds)
        assert ids.tolist() == _reference_buckets(sample, values, num_buckets)


@settings(max_examples=60)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=200), st.integers(1, 40))
def test_sample_buckets_are_monotone_in_the_value(values: list[int], num_buckets: int) -> None:
    table = pa.table({"v": pa.array(values, pa.int64())})
    (ids,) = bucket_ids(table, build_sample_bounds(table, ["v"], num_buckets))
    ranked = sorted(zip(values, ids.tolist(), strict=True))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(ranked))
    assert max(ids) < num_buckets


def test_sample_wide_decimals_compare_exactly() -> None:
    import decimal

    big = decimal.Decimal(10) ** 25
    sample = pa.table({"d": pa.array([big + i for i in range(100)], pa.decimal128(38, 0))})
    bounds = build_sample_bounds(sample, ["d"], num_buckets=4)
    (ids,) = bucket_ids(
        pa.table({"d": pa.array([big, big + 30, big + 60, big + 99], pa.decimal128(38, 0))}), bounds
    )
    assert ids.tolist() == [0, 1, 2, 3]  # DIRECT saturates these to one key; SAMPLE does not


def test_sample_bounds_pickle_round_trip_and_stay_small() -> None:
    data = _skewed_table(200_000, seed=3).append_column("s", pa.array([f"k{i:07d}" for i in range(200_000)]))
    buckets = default_num_buckets(200_000)
    bounds = build_sample_bounds(data, ["exp", "uni", "s"], buckets)
    payload = pickle.dumps(bounds)
    assert len(payload) < 1_000_000
    restored = pickle.loads(payload)
    assert isinstance(restored, Bounds) and restored.columns == ("exp", "uni", "s")
    for a, b in zip(bucket_ids(data, restored), bucket_ids(data, bounds), strict=True):
        assert (a == b).all()


def test_sample_default_num_buckets() -> None:
    assert default_num_buckets(200_000) == 16_384
    assert default_num_buckets(10_000_000) == 32_768
    assert default_num_buckets(10) == 2


def test_sample_empty_or_all_null_sample_puts_values_in_bucket_zero() -> None:
    bounds = build_sample_bounds(pa.table({"x": pa.array([None, None], pa.float64())}), ["x"], 16)
    (ids,) = bucket_ids(pa.table({"x": [1.0, None, -3.0]}), bounds)
    assert ids.tolist() == [0, 16, 0]


def test_sample_missing_column_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'nope'"):
        build_sample_bounds(pa.table({"x": [1]}), ["nope"], 4)
