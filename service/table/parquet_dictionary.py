"""Which columns of a base file are dictionary-encoded: parquet-mr's first-page rule, decided up front.

parquet-mr (the writer behind Hudi's Avro and row-writer paths) starts every column chunk with a
dictionary writer and keeps it only if the first page came out smaller that way:
`FallbackValuesWriter.getBytes` asks `DictionaryValuesWriter.isCompressionSatisfying(rawSize,
encodedSize)`, i.e. dictionary ids plus dictionary bytes < the plain bytes of the page's values, and
otherwise rewrites the chunk as plain. The first page closes once the plain bytes of its values
reach the page size (`FallbackValuesWriter.getBufferedSize` reports the raw size). So record keys,
sequence numbers, random doubles and other near-unique columns are written plain by Java, while
pyarrow, which only falls back when the dictionary outgrows its page limit, would first build a
dictionary of them: CPU spent for a file that is larger and slower to read than Java's.

`dictionary_columns` applies that rule to the first page's worth of a file's first rows, so our
files choose per column as Java's do. Nested columns keep the dictionary (pyarrow decides them
per leaf; parquet-mr's rule per leaf is not modelled here).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# parquet-mr's plain encoding: 4-byte length prefix per binary value; fixed widths otherwise.
_BINARY_LENGTH_PREFIX = 4
# An RLE run of the hybrid encoding costs its varint header plus one value; runs shorter than
# this are cheaper bit-packed (`RunLengthBitPackingHybridEncoder` switches at 8 repeats).
_MIN_RLE_RUN = 8


def dictionary_columns(rows: pa.Table, page_size_bytes: int) -> list[str]:
    """Top-level columns parquet-mr would keep dictionary-encoded for a file starting with `rows`."""
    rows = first_page_rows(rows, page_size_bytes)
    keep: list[str] = []
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        if _is_nested(column.type):
            keep.append(name)
            continue
        if _first_page_keeps_dictionary(column, page_size_bytes):
            keep.append(name)
    return keep


def first_page_row_limit(page_size_bytes: int) -> int:
    """Most rows a first page can hold: every plain value takes at least 4 bytes (booleans aside)."""
    return page_size_bytes // 4 + 1


def first_page_rows(rows: pa.Table | pa.RecordBatch, page_size_bytes: int) -> pa.Table | pa.RecordBatch:
    """The leading rows that can matter to `dictionary_columns` (zero-copy)."""
    return rows.slice(0, first_page_row_limit(page_size_bytes))


def _is_nested(data_type: pa.DataType) -> bool:
    return pa.types.is_nested(data_type) or pa.types.is_dictionary(data_type)


def _first_page_keeps_dictionary(column: pa.ChunkedArray, page_size_bytes: int) -> bool:
    values = column.drop_null()
    if len(values) == 0:
        return True  # nothing to decide on: parquet-mr keeps the (empty) dictionary
    plain = _plain_sizes(values)
    if plain is None:
        return True  # booleans: parquet-mr never dictionary-encodes them; pyarrow ignores the flag
    cumulative = np.cumsum(plain)
    first_page = int(np.searchsorted(cumulative, page_size_bytes, side="left")) + 1
    first_page = min(first_page, len(values))
    page = values.slice(0, first_page)
    raw_bytes = int(cumulative[first_page - 1])
    encoded = pc.dictionary_encode(page.combine_chunks())
    dictionary = encoded.dictionary
    dictionary_bytes = int(_plain_sizes(pa.chunked_array([dictionary])).sum())  # type: ignore[union-attr]
    id_bytes = _hybrid_encoded_bytes(encoded.indices.to_numpy(zero_copy_only=False), len(dictionary))
    return id_bytes + dictionary_bytes < raw_bytes


def _plain_sizes(values: pa.ChunkedArray) -> np.ndarray | None:
    """Plain-encoded bytes of each value, or None for booleans (bit-packed, no dictionary)."""
    data_type = values.type
    if pa.types.is_boolean(data_type):
        return None
    if (
        pa.types.is_binary(data_type)
        or pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_large_binary(data_type)
    ):
        lengths = pc.binary_length(values).to_numpy()
        return lengths.astype(np.int64) + _BINARY_LENGTH_PREFIX
    if pa.types.is_fixed_size_binary(data_type):
        return np.full(len(values), data_type.byte_width, dtype=np.int64)
    if pa.types.is_decimal(data_type):
        # Written FIXED_LEN_BYTE_ARRAY of the precision's minimal width (docs/format.md).
        width = _decimal_bytes(data_type.precision)
        return np.full(len(values), width, dtype=np.int64)
    width = max(4, data_type.bit_width // 8)  # INT32 for byte/short/int/date, INT64/DOUBLE wider
    return np.full(len(values), width, dtype=np.int64)


def _decimal_bytes(precision: int) -> int:
    return math.ceil((precision * math.log2(10) + 1) / 8)


def _hybrid_encoded_bytes(ids: np.ndarray, dictionary_size: int) -> int:
    """Bytes of `ids` in the RLE/bit-packing hybrid at the dictionary's bit width (plus its byte)."""
    bit_width = max(1, int(dictionary_size - 1).bit_length())
    n = len(ids)
    if n == 0:
        return 1
    boundaries = np.flatnonzero(np.diff(ids)) + 1
    run_lengths = np.diff(np.concatenate(([0], boundaries, [n])))
    long_runs = run_lengths[run_lengths >= _MIN_RLE_RUN]
    packed_values = n - int(long_runs.sum())
    rle_bytes = len(long_runs) * (2 + math.ceil(bit_width / 8))
    packed_bytes = math.ceil(packed_values / 8) * bit_width + 2 * math.ceil(packed_values / 504)
    return 1 + rle_bytes + packed_bytes
