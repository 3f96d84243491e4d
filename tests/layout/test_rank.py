"""DIRECT rank keys: monotone for every type Hudi maps, strictly where the type is exact; nulls last."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import ConfigError
from strategies.layout.rank import NULL_RANK, column_rank_keys, rank_is_exact


def _assert_monotone(
    values: Sequence[Any],
    data_type: pa.DataType,
    *,
    order: Callable[[Any], Any] = lambda v: v,
    strict: Callable[[Any, Any], bool] | None = None,
) -> None:
    """Sorted by `order`, keys never decrease; where `strict(a, b)` holds they strictly increase."""
    keys = column_rank_keys(pa.array(values, type=data_type)).keys
    ranked = sorted(zip(values, keys.tolist(), strict=True), key=lambda vk: order(vk[0]))
    for (a, key_a), (b, key_b) in itertools.pairwise(ranked):
        assert key_a <= key_b, (a, b, hex(key_a), hex(key_b))
        if order(a) < order(b) and (strict is None or strict(a, b)):
            assert key_a < key_b, (a, b, hex(key_a))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@given(data=st.data())
def test_rank_signed_integers_strictly_monotone(bits: int, data: st.DataObject) -> None:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    values = data.draw(st.lists(st.integers(lo, hi), min_size=2) | st.just([lo, -1, 0, 1, hi]))
    _assert_monotone(values, pa.int64() if bits == 64 else getattr(pa, f"int{bits}")())


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@given(data=st.data())
def test_rank_unsigned_integers_strictly_monotone(bits: int, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=2))
    _assert_monotone([*values, 0, 2**bits - 1], getattr(pa, f"uint{bits}")())


def _float_order(v: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


@pytest.mark.parametrize("width", [16, 32, 64])
@given(data=st.data())
def test_rank_floats_strictly_monotone_nan_last(width: int, data: st.DataObject) -> None:
    floats = st.floats(width=width, allow_nan=True)  # type: ignore[arg-type]  # width is a Literal
    values = [*data.draw(st.lists(floats, min_size=2)), 0.0, -0.0, math.inf, -math.inf, math.nan]
    data_type = {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]
    if width == 16:
        array = pa.array(np.array(values, dtype=np.float16))
        keys = column_rank_keys(array).keys
        ranked = sorted(zip(values, keys.tolist(), strict=True), key=lambda vk: _float_order(vk[0]))
        assert all(a[1] <= b[1] for a, b in itertools.pairwise(ranked))
        return
    _assert_monotone(values, data_type, order=_float_order)


def test_rank_floats_fold_signed_zero_and_nans() -> None:
    nan_payload = np.array([0x7FF8_0000_0000_0001, 0xFFF8_0000_0000_0000], dtype=np.uint64).view(np.float64)
    values = [-0.0, 0.0, math.inf, *nan_payload.tolist(), math.nan, None]
    keys = column_rank_keys(pa.array(values, type=pa.float64())).keys
    assert keys[0] == keys[1]
    assert keys[3] == keys[4] == keys[5] > keys[2]  # every NaN equal, above +inf
    assert keys[6] == NULL_RANK > keys[5]


def test_rank_booleans_false_true_null() -> None:
    keys = column_rank_keys(pa.array([True, None, False])).keys
    assert keys[2] < keys[0] < keys[1] == NULL_RANK


@pytest.mark.parametrize(
    ("data_type", "digits"),
    [
        (pa.decimal32(9, 2), 9),
        (pa.decimal64(18, 3), 18),
        (pa.decimal128(18, 4), 18),
        (pa.decimal128(38, 6), 38),
        (pa.decimal256(60, 10), 60),
    ],
)
@given(data=st.data())
def test_rank_decimals_monotone_strict_within_int64(
    data_type: pa.DataType, digits: int, data: st.DataObject
) -> None:
    scale = data_type.scale
    exact = decimal.Context(prec=100)  # the default 28 digits would round wide values
    unscaled = st.integers(-(10**digits - 1), 10**digits - 1)
    decimals = unscaled.map(lambda u: decimal.Decimal(u).scaleb(-scale, context=exact))
    values = data.draw(st.lists(decimals, min_size=2))
    limit = decimal.Decimal(2**63) / (decimal.Decimal(10) ** scale)

    def both_within_int64(a: decimal.Decimal, b: decimal.Decimal) -> bool:
        return -limit <= a < limit and -limit <= b < limit

    _assert_monotone(values, data_type, strict=both_within_int64)
    assert rank_is_exact(data_type) == (digits <= 18)


def test_rank_wide_decimals_saturate() -> None:
    big = decimal.Decimal(10) ** 30
    keys = column_rank_keys(pa.array([-big, big, decimal.Decimal(1)], type=pa.decimal128(38, 0))).keys
    assert keys.tolist() == [0, NULL_RANK, (1 << 63) + 1]


def _prefix_differs(a: bytes, b: bytes) -> bool:
    return a[:8].ljust(8, b"\0") != b[:8].ljust(8, b"\0")


@given(st.lists(st.text(alphabet=st.characters(codec="utf-8")), min_size=2))
def test_rank_strings_monotone_by_utf8_prefix(values: list[str]) -> None:
    def strict(a: str, b: str) -> bool:
        return _prefix_differs(a.encode(), b.encode())

    _assert_monotone(values, pa.string(), order=lambda s: s.encode(), strict=strict)
    _assert_monotone(values, pa.large_string(), order=lambda s: s.encode(), strict=strict)


@given(st.lists(st.binary(), min_size=2))
def test_rank_binaries_monotone_by_prefix(values: list[bytes]) -> None:
    _assert_monotone(values, pa.binary(), strict=_prefix_differs)
    _assert_monotone(values, pa.large_binary(), strict=_prefix_differs)


@given(st.lists(st.binary(min_size=5, max_size=5), min_size=2))
def test_rank_fixed_size_binary_monotone(values: list[bytes]) -> None:
    _assert_monotone(values, pa.binary(5))


def test_rank_strings_pad_on_the_right_unlike_hudi() -> None:
    keys = column_rank_keys(pa.array(["b", "ab", "", "abcdefghXYZ", "abcdefgh"])).keys
    assert keys[2] < keys[1] < keys[0]  # Hudi's left padding would put "b" below "ab"
    assert keys[3] == keys[4] == int.from_bytes(b"abcdefgh", "big")  # only 8 bytes count


@given(st.lists(st.dates(), min_size=2))
def test_rank_dates_strictly_monotone(values: list[dt.date]) -> None:
    _assert_monotone(values, pa.date32())
    _assert_monotone(values, pa.date64())


_MAX_DELTA = dt.timedelta(days=100_000)
_NS_MIN, _NS_MAX = dt.datetime(1678, 1, 1), dt.datetime(2261, 12, 31)  # int64 nanoseconds


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Kolkata", "America/Los_Angeles"])
@given(data=st.data())
def test_rank_timestamps_strictly_monotone(unit: str, tz: str | None, data: st.DataObject) -> None:
    naive = st.datetimes(_NS_MIN, _NS_MAX)
    values = data.draw(st.lists(naive, min_size=2))
    if unit == "s":
        values = [v.replace(microsecond=0) for v in values]
    elif unit == "ms":
        values = [v.replace(microsecond=v.microsecond // 1000 * 1000) for v in values]
    if tz is not None:
        values = [v.replace(tzinfo=dt.UTC) for v in values]  # stored instants; the zone is display only
    _assert_monotone(values, pa.timestamp(unit, tz=tz))


@given(st.lists(st.times(), min_size=2), st.lists(st.timedeltas(-_MAX_DELTA, _MAX_DELTA), min_size=2))
def test_rank_times_and_durations_strictly_monotone(times: list[dt.time], deltas: list[dt.timedelta]) -> None:
    _assert_monotone(times, pa.time64("us"))
    _assert_monotone([t.replace(microsecond=0) for t in times], pa.time32("s"))
    _assert_monotone(deltas, pa.duration("us"))


@settings(max_examples=50)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 2)), min_size=1))
def test_rank_nulls_sort_after_every_value(values: list[int | None]) -> None:
    ranks = column_rank_keys(pa.array(values, type=pa.int64()))
    present = [k for v, k in zip(values, ranks.keys.tolist(), strict=True) if v is not None]
    absent = [k for v, k in zip(values, ranks.keys.tolist(), strict=True) if v is None]
    assert all(k == NULL_RANK for k in absent)
    assert all(k < NULL_RANK for k in present)
    assert ranks.valid.tolist() == [v is not None for v in values]


def test_rank_slices_chunks_and_dictionaries_match_plain_arrays() -> None:
    plain = pa.array(["pear", None, "apple", "fig", "kiwi"])
    expected = column_rank_keys(plain).keys
    assert column_rank_keys(plain.slice(2)).keys.tolist() == expected[2:].tolist()
    chunked = pa.chunked_array([plain.slice(0, 2), plain.slice(2)])
    assert column_rank_keys(chunked).keys.tolist() == expected.tolist()
    assert column_rank_keys(plain.dictionary_encode()).keys.tolist() == expected.tolist()
    ints = pa.array([5, None, -3, 7, None, 1], type=pa.int32())
    assert column_rank_keys(ints.slice(3)).keys.tolist() == column_rank_keys(ints).keys[3:].tolist()
    bools = pa.array([True, False, None, True, False, True, False, False, True, None, True])
    for start in range(1, 10):
        assert (
            column_rank_keys(bools.slice(start)).keys.tolist()
            == column_rank_keys(bools).keys[start:].tolist()
        )


def test_rank_all_null_column() -> None:
    keys = column_rank_keys(pa.nulls(3)).keys
    assert keys.tolist() == [NULL_RANK] * 3


def test_rank_rejects_nested_types_naming_the_column() -> None:
    with pytest.raises(ConfigError, match=r"'tags'.*list<item: int64>"):
        column_rank_keys(pa.array([[1], [2]]), "tags")
