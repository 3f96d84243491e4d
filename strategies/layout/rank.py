"""DIRECT mapping: a sort column's values to unsigned 64-bit rank keys that keep the column's order.

`a < b` implies `rank(a) <= rank(b)` for every supported type, strictly (`<`) where the type is *exact*
(see `rank_is_exact`). Rank keys of one column compare with each other, never with another column's.

- Integers, dates, times, timestamps (any unit, any zone: the stored value is a UTC instant) and
  durations: the value as int64 with its sign bit flipped, so unsigned order is numeric order. uint64
  keeps its raw value.
- Floating point (float16/32 widen exactly to float64, as Hudi widens float to double): IEEE bits, all
  bits inverted for negatives and the sign bit set for positives. -0.0 is folded into +0.0 and every NaN
  into one canonical NaN above +inf, as Spark orders them (so LINEAR matches Spark's sort).
- Booleans: false < true.
- Decimals: the unscaled integer (all values of a column share its scale). decimal32/64 and
  decimal128 up to precision 18 are exact; wider values saturate at the int64 range, which keeps
  order but ties every value beyond +-2^63 units (Hudi's `longValue()` silently wraps instead).
- Strings and binaries: the first 8 bytes, big-endian, padded on the *right* with zero bytes, so the
  key orders like the bytes (UTF-8 byte order is code-point order). Values sharing an 8-byte prefix tie:
  DIRECT cannot tell `customer#0001` from `customer#0002`; the SAMPLE method compares whole values.
  Hudi pads short values on the left, which breaks order (`"b"` above `"ab"`); we do not copy that.
- Nulls: NULL_RANK (all ones), after every value, as Hudi's DIRECT maps a null to the type's maximum.
  Only maxima of 64-bit integer-like types (int64, uint64, date64, time64, timestamps, durations),
  decimals saturated upwards and binaries starting with eight 0xFF bytes tie with it; `valid` tells
  them apart where it matters (LINEAR, SAMPLE).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.config.hoodie_keys import SORT_COLUMNS as SORT_COLUMNS_KEY
from service.errors import ConfigError

NULL_RANK = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_SIGN_BIT = np.uint64(1 << 63)
_CANONICAL_NAN_BITS = np.uint64(0x7FF8_0000_0000_0000)
_INT64_MIN = np.int64(-(1 << 63))
_INT64_MAX = np.int64((1 << 63) - 1)
_PREFIX_BYTES = 8


@dataclass(frozen=True, eq=False)
class RankKeys:
    """Rank keys of one column: `keys` (uint64, NULL_RANK where null) and `valid` (False where null)."""

    keys: np.ndarray
    valid: np.ndarray


def normalize_column(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array of a plain type: chunks combined, dictionaries decoded, views cast."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    if isinstance(values, pa.ExtensionArray):
        values = values.storage
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.large_string())
    elif pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())
    return values


_BINARY_LIKE = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
)


def is_binary_like(data_type: pa.DataType) -> bool:
    return any(is_type(data_type) for is_type in _BINARY_LIKE)


def _is_integer_like(data_type: pa.DataType) -> bool:
    return pa.types.is_integer(data_type) or (
        pa.types.is_temporal(data_type) and not pa.types.is_interval(data_type)
    )


def is_supported(data_type: pa.DataType) -> bool:
    return (
        _is_integer_like(data_type)
        or pa.types.is_floating(data_type)
        or pa.types.is_boolean(data_type)
        or pa.types.is_decimal(data_type)
        or pa.types.is_null(data_type)
        or is_binary_like(data_type)
    )


def rank_is_exact(data_type: pa.DataType) -> bool:
    """True when rank keys order the type's values strictly (no prefix, no saturation)."""
    if pa.types.is_decimal(data_type):
        return data_type.bit_width <= 64 or data_type.precision <= 18
    return is_supported(data_type) and not is_binary_like(data_type)


def check_supported(data_type: pa.DataType, column: str) -> None:
    if not is_supported(data_type):
        raise ConfigError(
            f"{SORT_COLUMNS_KEY}: column {column!r} has type {data_type}, which layout optimization "
            "cannot order (supported: integers, floats, decimals, booleans, strings, binaries, dates, "
            "times, timestamps)"
        )


def valid_mask(values: pa.Array) -> np.ndarray:
    """Validity as a numpy bool array (True where not null)."""
    n = len(values)
    if pa.types.is_null(values.type):
        return np.zeros(n, dtype=bool)
    if values.null_count == 0:
        return np.ones(n, dtype=bool)
    return _unpack_bitmap(values.buffers()[0], values.offset, n)


def _unpack_bitmap(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    first_byte, skip = divmod(offset, 8)
    nbytes = (skip + n + 7) // 8
    raw = np.frombuffer(buffer, dtype=np.uint8, count=nbytes, offset=first_byte)
    return np.unpackbits(raw, bitorder="little")[skip : skip + n].astype(bool)


def _fixed_width_values(values: pa.Array, dtype: np.dtype) -> np.ndarray:
    """Zero-copy view of a fixed-width array's value buffer (slots under nulls hold garbage)."""
    item = np.dtype(dtype).itemsize
    return np.frombuffer(values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * item)


def _signed_to_rank(signed: np.ndarray) -> np.ndarray:
    return signed.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN_BIT


def _integer_ranks(values: pa.Array) -> np.ndarray:
    data_type = values.type
    width = data_type.bit_width
    if pa.types.is_unsigned_integer(data_type):
        raw = _fixed_width_values(values, np.dtype(f"u{width // 8}"))
        if width == 64:
            return raw.copy()
        return _signed_to_rank(raw.astype(np.int64))
    return _signed_to_rank(_fixed_width_values(values, np.dtype(f"i{width // 8}")))


def float64_ranks(floats: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 of float64 values (-0.0 == +0.0; every NaN one value above +inf)."""
    canonical = floats.astype(np.float64) + 0.0  # -0.0 + 0.0 == +0.0 under round-to-nearest
    bits = canonical.view(np.uint64)
    bits[np.isnan(canonical)] = _CANONICAL_NAN_BITS
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | _SIGN_BIT)


def _float_ranks(values: pa.Array) -> np.ndarray:
    width = values.type.bit_width
    return float64_ranks(_fixed_width_values(values, np.dtype(f"f{width // 8}")))


def _bool_ranks(values: pa.Array) -> np.ndarray:
    bits = _unpack_bitmap(values.buffers()[1], values.offset, len(values))
    return bits.astype(np.uint64) | _SIGN_BIT


def _decimal_ranks(values: pa.Array) -> np.ndarray:
    width = values.type.bit_width
    if width <= 64:
        return _signed_to_rank(_fixed_width_values(values, np.dtype(f"i{width // 8}")))
    words_per_value = width // 64
    words = np.frombuffer(
        values.buffers()[1],
        dtype="<u8",
        count=len(values) * words_per_value,
        offset=values.offset * width // 8,
    ).reshape(len(values), words_per_value)
    low = words[:, 0].astype(np.uint64).view(np.int64)
    sign_extension = (low >> np.int64(63)).view(np.uint64)
    fits = np.all(words[:, 1:] == sign_extension[:, None], axis=1)
    negative = words[:, -1].astype(np.uint64).view(np.int64) < 0
    saturated = np.where(negative, _INT64_MIN, _INT64_MAX)
    return _signed_to_rank(np.where(fits, low, saturated))


def _prefix_ranks(values: pa.Array) -> np.ndarray:
    n = len(values)
    buffers = values.buffers()
    if pa.types.is_fixed_size_binary(values.type):
        width = values.type.byte_width
        starts = (np.arange(n, dtype=np.int64) + values.offset) * width
        lengths = np.full(n, width, dtype=np.int64)
        data_buffer = buffers[1]
    else:
        offset_dtype = (
            np.int64
            if pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
            else np.int32
        )
        offsets = np.frombuffer(
            buffers[1],
            dtype=offset_dtype,
            count=n + 1,
            offset=values.offset * np.dtype(offset_dtype).itemsize,
        ).astype(np.int64)
        starts = offsets[:-1]
        lengths = offsets[1:] - starts
        data_buffer = buffers[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    if n == 0 or data.size == 0:
        return np.zeros(n, dtype=np.uint64)
    lanes = np.arange(_PREFIX_BYTES, dtype=np.int64)
    gathered = data[np.minimum(starts[:, None] + lanes, data.size - 1)]
    gathered *= lanes < lengths[:, None]  # zero the bytes past each value's end (right padding)
    return np.ascontiguousarray(gathered).view(">u8").ravel().astype(np.uint64)


def column_rank_keys(values: pa.Array | pa.ChunkedArray, column: str = "<column>") -> RankKeys:
    """DIRECT rank keys of one column (see the module docstring for each type's mapping)."""
    array = normalize_column(values)
    data_type = array.type
    check_supported(data_type, column)
    valid = valid_mask(array)
    if pa.types.is_null(data_type):
        keys = np.full(len(array), NULL_RANK, dtype=np.uint64)
        return RankKeys(keys=keys, valid=valid)
    if _is_integer_like(data_type):
        keys = _integer_ranks(array)
    elif pa.types.is_floating(data_type):
        keys = _float_ranks(array)
    elif pa.types.is_boolean(data_type):
        keys = _bool_ranks(array)
    elif pa.types.is_decimal(data_type):
        keys = _decimal_ranks(array)
    else:
        keys = _prefix_ranks(array)
    if not valid.all():
        keys = np.where(valid, keys, NULL_RANK)
    return RankKeys(keys=keys, valid=valid)


def dense_ranks(values: pa.Array) -> np.ndarray:
    """Exact dense ranks (uint64) of a column's values within this array; nulls get rank 0."""
    if rank_is_exact(values.type):
        raise ValueError("dense_ranks is for inexact types; use column_rank_keys")
    ranks = pc.rank(values, sort_keys="ascending", null_placement="at_start", tiebreaker="dense")
    return np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.uint64)
