"""A columnar decode of an Avro data block's records, accepted only when provably the per-record one.

Decoding the records one `fastavro.schemaless_reader` call at a time, then building Arrow from
Python objects, was about two thirds of a compaction's CPU. Here the block's datums, concatenated,
are framed as one block of an Avro object container (the spec's header: magic, `avro.schema`,
`avro.codec=null`, sync marker) and decoded by polars' Avro reader (Rust, straight into Arrow
columns).

The content holds each record after its 4-byte big-endian length, so the container's records are
not the block's alone: each is a wrapper record of a `fixed(4)` (the length, as bytes) and the
block's record, and the content from the first length to its end is the container's one block as it
stands, with no pass over it in Python. `HoodieAvroDataBlock`'s reader decodes each record inside the
length that prefixes it; the container decode reads them back to back. The two agree exactly when
every record decoded from as many bytes as its length says and the last one ends where the content
does, so the decode is accepted only then: the encoded size of every decoded record is computed from
its values (the Avro binary encoding is a function of the values: zig-zag varints, length-prefixed
strings and bytes, one varint per union branch, fixed sizes) and compared with its length. By
induction each record then started where its length prefix put it.
Any other outcome (a schema outside what the size is computed for, a reader error or panic, one
size off) returns None and the caller decodes record by record, which names the record at fault.
Schemas with arrays or maps (their block counts let a writer split one value many ways), enums,
decimals as `bytes` or a named type used by reference (Spark's schemas define each record where
it is used) are left to the per-record decoder.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_MAGIC = b"Obj\x01"
_SYNC = os.urandom(16)  # any 16 bytes, written after the header and after the one block
_FIXED_WIDTH = {"boolean": 1, "float": 4, "double": 8}
_VARINT = frozenset({"int", "long"})
_LENGTH_PREFIXED = frozenset({"string", "bytes"})
# Logical types over int/long whose Arrow array reinterprets as the raw integer (avro_arrow's types).
_TEMPORAL = frozenset({"date", "time-millis", "time-micros", "timestamp-millis", "timestamp-micros",
                       "local-timestamp-millis", "local-timestamp-micros"})  # fmt: skip


def decode_columnar(
    data: bytes, pos: int, count: int, schema: Mapping[str, Any], arrow_schema: pa.Schema
) -> pa.Table | None:
    """The `count` length-prefixed records from `pos` to the end of `data` as a table of
    `arrow_schema`, or None when this decode is not provably the per-record one."""
    if count <= 0 or not _sized(schema):
        return None
    body_size = len(data) - pos
    container = b"".join([_header(_framed(schema), count, body_size), memoryview(data)[pos:], _SYNC])
    # polars turns Rust backtraces on when unset: a panic on a corrupt block would print pages of them.
    os.environ.setdefault("RUST_BACKTRACE", "0")
    try:
        import polars

        decoded = polars.read_avro(io.BytesIO(container)).to_arrow()
        lengths = _big_endian_int32(_one_chunk(decoded.column(_LENGTH)))
        record = _one_chunk(decoded.column(_RECORD))
        fields = [record.field(i) for i in range(record.type.num_fields)]
        columns = [_cast(c, f.type) for c, f in zip(fields, arrow_schema, strict=True)]
        table = pa.Table.from_arrays(columns, schema=arrow_schema)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # a Rust panic surfaces as pyo3's PanicException, a BaseException
        return None
    if table.num_rows != count or 4 * count + int(lengths.sum()) != body_size:
        return None
    try:
        sizes = _record_sizes(table.columns, schema, np.ones(count, dtype=bool))
    except (pa.ArrowException, ValueError):
        return None
    return table if np.array_equal(sizes, lengths) else None


# The wrapper record each length-prefixed datum is read as; names no Spark schema uses.
_LENGTH, _RECORD = "hts_length_prefix", "hts_record"


def _framed(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "hts_length_prefixed_record",
        "fields": [
            {"name": _LENGTH, "type": {"type": "fixed", "name": "hts_int32_big_endian", "size": 4}},
            {"name": _RECORD, "type": dict(schema)},
        ],
    }


def _big_endian_int32(array: pa.Array) -> np.ndarray:
    """Each 4-byte value of `array` (a `fixed(4)` column) as the int32 Java's `writeInt` wrote."""
    fixed = array.cast(pa.binary(4))
    if fixed.null_count:
        raise ValueError("a null length prefix")
    data = fixed.buffers()[1]
    assert data is not None
    words = np.frombuffer(data, dtype=">i4", count=len(fixed), offset=fixed.offset * 4)
    return words.astype(np.int64)


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    """`array` as `target`, struct by struct: a null record's fields are null in polars' output, which
    `Array.cast` refuses for fields that are not nullable (the record's own null says it all)."""
    if not pa.types.is_struct(target):
        return array.cast(target)
    children = [_cast(array.field(i), target.field(i).type) for i in range(target.num_fields)]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _header(schema: Mapping[str, Any], count: int, body_size: int) -> bytes:
    """An object container's header, then the head of its one block of `count` records."""
    out = bytearray(_MAGIC)
    meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": b"null"}
    out += _long(len(meta))
    for key, value in meta.items():
        out += _long(len(key)) + key.encode() + _long(len(value)) + value
    out += _long(0) + _SYNC + _long(count) + _long(body_size)
    return bytes(out)


def _long(n: int) -> bytes:
    """Avro's zig-zag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _sized(avro: Any) -> bool:
    """Whether a record's encoded size follows from its decoded values for every value of `avro`."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        return len(avro) == 2 and len(branches) == 1 and _sized(branches[0])
    if isinstance(avro, str):  # a primitive; a reference to a named type polars' reader refuses
        return avro in _FIXED_WIDTH or avro in _VARINT or avro in _LENGTH_PREFIXED
    if not isinstance(avro, dict):
        return False
    kind, logical = avro.get("type"), avro.get("logicalType")
    if kind == "record":
        fields = avro.get("fields")
        return isinstance(fields, list) and all(isinstance(f, dict) and _sized(f.get("type")) for f in fields)
    if kind == "fixed":
        return isinstance(avro.get("size"), int)
    if logical is not None:
        return logical in _TEMPORAL and kind in _VARINT
    return isinstance(kind, str) and _sized(kind)


def _record_sizes(columns: Sequence[Any], record: Mapping[str, Any], care: np.ndarray) -> np.ndarray:
    """Encoded sizes of the records whose fields are `columns`; rows where `care` is False (under a
    null parent) count 0 and may hold anything."""
    total = np.zeros(len(care), dtype=np.int64)
    for column, field in zip(columns, record["fields"], strict=True):
        total += _sizes(_one_chunk(column), field["type"], care)
    return total


def _sizes(array: pa.Array, avro: Any, care: np.ndarray) -> np.ndarray:
    """The encoded size of each value of `array`, whose Avro type is `avro` (0 where not `care`)."""
    valid = np.asarray(array.is_valid()) if array.null_count else np.ones(len(array), dtype=bool)
    if isinstance(avro, list):  # ["null", T] or [T, "null"]: the branch index, then T's value
        [branch] = [b for b in avro if b != "null"]
        inner = _sizes(array, branch, care & valid)
        return np.where(care, 1 + inner, 0)
    kind = avro if isinstance(avro, str) else avro["type"]
    if not valid[care].all():
        raise ValueError(f"a {kind} value is null outside a union")
    if kind == "record":
        return _record_sizes([array.field(i) for i in range(array.type.num_fields)], avro, care)
    if kind == "fixed":
        sizes = np.full(len(array), int(avro["size"]), dtype=np.int64)
    elif kind in _FIXED_WIDTH:
        sizes = np.full(len(array), _FIXED_WIDTH[kind], dtype=np.int64)
    elif kind in _LENGTH_PREFIXED:
        lengths = _filled(pc.binary_length(array))
        sizes = _varint_sizes(lengths) + lengths
    elif kind in _VARINT:
        if not pa.types.is_integer(array.type):  # a temporal type: its days or units, as stored
            array = array.view(pa.int32() if array.type.bit_width == 32 else pa.int64())
        sizes = _varint_sizes(_filled(array))
    else:
        raise ValueError(f"no encoded size for Avro type {kind!r}")
    return np.where(care, sizes, 0)


def _filled(integers: pa.Array) -> np.ndarray:
    """int64 values, 0 in null slots (which the caller does not count)."""
    if integers.null_count:
        integers = pc.fill_null(integers, 0)
    return integers.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    zigzag = ((values << 1) ^ (values >> 63)).view(np.uint64)
    sizes = np.ones(len(values), dtype=np.int64)
    for shift in range(7, 64, 7):
        sizes += zigzag >= np.uint64(1 << shift)
    return sizes


def _one_chunk(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
