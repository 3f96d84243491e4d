"""Column statistics of a Parquet base file, as Hudi 0.15 indexes them in the MDT `column_stats` partition.

`ParquetUtils.readRangeFromParquetMetadata` reads the footer: for every column chunk whose dotted
path is one of the columns to index, the statistics' `genericGetMin`/`genericGetMax` turned into Java
values (`convertToNativeJavaType`: DATE -> date, DECIMAL -> BigDecimal, UTF8 -> String, other
BINARY -> ByteBuffer, the rest as the physical type: INT32 -> Integer, INT64 -> Long (timestamps
included), FLOAT, DOUBLE, BOOLEAN), the null count, the chunk's value count, total (compressed) size
and total uncompressed size. Row groups combine into one range per column
(`HoodieColumnRangeMetadata.merge`: Java `compareTo` min and max, sums of the counts).
`HoodieAvroUtils.wrapValueIntoAvro` then picks the wrapper record by Java type.

Columns to index (`HoodieTableMetadataUtil.getColumnsToIndex`): the writer's
`hoodie.metadata.index.column.stats.column.list` if set, else every top-level field of the commit's
`schema` (with the five `_hoodie_*` meta fields first when the table populates them); a nested field
never matches a leaf path, so it gets no record.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq

from service.errors import UnsupportedTableError
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.java_string_order import java_compare
from service.table.mdt.index_records import ColumnStats, ValueTypeInfo, WrappedValue

_UNSET_MIN_MAX: dict[str, Any] = {"INT32": 0, "INT64": 0, "FLOAT": 0.0, "DOUBLE": 0.0, "BOOLEAN": False}
_DECIMAL_PRECISION, _DECIMAL_SCALE = 30, 15  # DecimalWrapper's decimal(30, 15)


def columns_to_index(
    configured: Sequence[str], schema_fields: Sequence[str], populate_meta_fields: bool
) -> list[str]:
    """`HoodieTableMetadataUtil.getColumnsToIndex`: the configured list as given, else the schema's
    top-level fields, meta fields first when populated (`HoodieAvroUtils.addMetadataFields`)."""
    if configured:
        return list(configured)
    data = [f for f in schema_fields if f not in HOODIE_META_FIELDS]
    return [*HOODIE_META_FIELDS, *data] if populate_meta_fields else data


def _java_double_key(x: float) -> tuple[int, float]:
    """Order of `Double.compareTo`: -0.0 below 0.0, NaN above everything."""
    if math.isnan(x):
        return (2, 0.0)
    if x == 0.0:
        return (0, -1.0 if math.copysign(1.0, x) < 0 else 0.0)
    return (1 if x > 0 else -1, x)


def _java_less(a: WrappedValue, b: WrappedValue) -> bool:
    """`a.compareTo(b) < 0` for the Java values behind two wrappers of the same kind."""
    x, y = a.value, b.value
    if isinstance(x, str) and isinstance(y, str):
        return java_compare(x, y) < 0
    if isinstance(x, bytes) and isinstance(y, bytes):
        # ByteBuffer.compareTo compares the remaining bytes as signed Java bytes.
        sx = struct.unpack(f"{len(x)}b", x)
        sy = struct.unpack(f"{len(y)}b", y)
        return sx < sy
    if isinstance(x, float) and isinstance(y, float):
        return _java_double_key(x) < _java_double_key(y)
    return x < y  # type: ignore[operator]  # bool, int: Boolean/Integer/Long.compareTo


def _decimal(column: str, raw: Any, precision: int, scale: int, file_name: str) -> WrappedValue:
    """`extractDecimal` then `wrapValueIntoAvro`'s `tryUpcastDecimal` to DecimalWrapper's decimal(30, 15):
    `setScale(15, UNNECESSARY)` and at most 30 digits, else Hudi's write fails (and so do we)."""
    unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
    if scale <= _DECIMAL_SCALE:
        unscaled *= 10 ** (_DECIMAL_SCALE - scale)
    else:
        unscaled, dropped = divmod(unscaled, 10 ** (scale - _DECIMAL_SCALE))
        if dropped:
            raise UnsupportedTableError(
                f"{file_name}: decimal({precision}, {scale}) column {column!r}: Hudi cannot index a value "
                f"with more than {_DECIMAL_SCALE} decimal places"
            )
    if len(str(abs(unscaled))) > _DECIMAL_PRECISION:
        raise UnsupportedTableError(
            f"{file_name}: decimal column {column!r}: Hudi cannot index a value of more than "
            f"{_DECIMAL_PRECISION} digits"
        )
    return WrappedValue("DecimalWrapper", Decimal(unscaled).scaleb(-_DECIMAL_SCALE))


def _java_value(
    column: str, physical: str, column_schema: Any, raw: Any, file_name: str
) -> WrappedValue | None:
    """`convertToNativeJavaType` then `wrapValueIntoAvro`, for a footer min/max in its physical type."""
    if raw is None:
        return None
    original = _original_type(column_schema)
    if original == "DECIMAL":
        return _decimal(column, raw, int(column_schema.precision), int(column_schema.scale), file_name)
    if original == "DATE":
        return WrappedValue("DateWrapper", int(raw))
    if physical == "BYTE_ARRAY":
        data = bytes(raw)
        if original == "UTF8":
            return WrappedValue("StringWrapper", data.decode("utf-8"))
        return WrappedValue("BytesWrapper", data)
    if physical == "INT32":
        return WrappedValue("IntWrapper", int(raw))
    if physical == "INT64":
        return WrappedValue("LongWrapper", int(raw))
    if physical == "FLOAT":
        return WrappedValue("FloatWrapper", float(raw))
    if physical == "DOUBLE":
        return WrappedValue("DoubleWrapper", float(raw))
    if physical == "BOOLEAN":
        return WrappedValue("BooleanWrapper", bool(raw))
    # INT96 and FIXED_LEN_BYTE_ARRAY stay parquet Binary, which wrapValueIntoAvro rejects.
    raise UnsupportedTableError(
        f"{file_name}: Hudi cannot index column stats of {physical} column {column!r}"
    )


def _original_type(column_schema: Any) -> str | None:
    """Java's `PrimitiveType.getOriginalType()`: the converted type, derived from the logical type."""
    converted = str(column_schema.converted_type)
    if converted in ("DECIMAL", "DATE", "UTF8"):
        return converted
    logical = column_schema.logical_type
    kind = getattr(logical, "type", None) if logical is not None else None
    return {"STRING": "UTF8", "DATE": "DATE", "DECIMAL": "DECIMAL"}.get(str(kind)) if kind else None


def _signed_zero_bounds(raw_min: float, raw_max: float) -> tuple[float, float]:
    """parquet-java's statistics builders for FLOAT/DOUBLE (`Statistics.getBuilderForReading`, PARQUET-1246)
    widen a zero bound on read, since +0.0 and -0.0 compare equal when written: a min of zero becomes
    -0.0, a max of zero +0.0. Hudi reads its ranges through them (seen on Hudi 1.1.1's records)."""
    if raw_min == 0.0:
        raw_min = -0.0
    if raw_max == 0.0:
        raw_max = 0.0
    return raw_min, raw_max


# `org.apache.hudi.stats.ValueType` ordinals (Hudi 1.1), of the types a Parquet column maps to.
VALUE_TYPE_BOOLEAN, VALUE_TYPE_INT, VALUE_TYPE_LONG, VALUE_TYPE_FLOAT, VALUE_TYPE_DOUBLE = 2, 3, 4, 5, 6
VALUE_TYPE_STRING, VALUE_TYPE_BYTES, VALUE_TYPE_DECIMAL, VALUE_TYPE_DATE = 7, 8, 10, 12
VALUE_TYPE_TIME_MILLIS, VALUE_TYPE_TIME_MICROS = 13, 14
VALUE_TYPE_TIMESTAMP_MILLIS, VALUE_TYPE_TIMESTAMP_MICROS = 15, 16
_PHYSICAL_VALUE_TYPES = {
    ("BOOLEAN", None): (VALUE_TYPE_BOOLEAN, "BooleanWrapper"),
    ("INT32", None): (VALUE_TYPE_INT, "IntWrapper"),
    ("INT64", None): (VALUE_TYPE_LONG, "LongWrapper"),
    ("FLOAT", None): (VALUE_TYPE_FLOAT, "FloatWrapper"),
    ("DOUBLE", None): (VALUE_TYPE_DOUBLE, "DoubleWrapper"),
    ("BYTE_ARRAY", "STRING"): (VALUE_TYPE_STRING, "StringWrapper"),
    ("BYTE_ARRAY", None): (VALUE_TYPE_BYTES, "BytesWrapper"),
    ("INT32", "DATE"): (VALUE_TYPE_DATE, "IntWrapper"),
    ("INT32", "TIME_MILLIS"): (VALUE_TYPE_TIME_MILLIS, "IntWrapper"),
    ("INT64", "TIME_MICROS"): (VALUE_TYPE_TIME_MICROS, "LongWrapper"),
    ("INT64", "TIMESTAMP_MILLIS"): (VALUE_TYPE_TIMESTAMP_MILLIS, "LongWrapper"),
    ("INT64", "TIMESTAMP_MICROS"): (VALUE_TYPE_TIMESTAMP_MICROS, "LongWrapper"),
}


def _logical_kind(column_schema: Any) -> str | None:
    """The column's logical type as the V2 mapping needs it: STRING, DATE, DECIMAL, TIME_*/TIMESTAMP_*
    with their unit; integer widths (INT_8, INT_16, ...) and the rest count as the physical type."""
    original = _original_type(column_schema)
    if original in ("UTF8", "DATE", "DECIMAL"):
        return {"UTF8": "STRING"}.get(original, original)
    converted = str(column_schema.converted_type)
    if converted in ("TIME_MILLIS", "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"):
        return converted
    logical = column_schema.logical_type
    kind = str(getattr(logical, "type", "")) if logical is not None else ""
    if kind in ("TIME", "TIMESTAMP"):
        unit = str(json.loads(logical.to_json()).get("timeUnit", "")).upper()
        return f"{kind}_{unit}"
    if kind in ("ENUM", "JSON", "BSON"):
        return "STRING" if kind != "BSON" else None
    return None


def _v2_type(column: str, physical: str, column_schema: Any, file_name: str) -> tuple[ValueTypeInfo, str]:
    """A column's `HoodieValueTypeInfo` in Hudi 1.1's V2 column stats (the type ordinal, and for a
    decimal its `precision,scale`) and the wrapper its min/max go in (seen on Hudi's records): the
    physical type's, a date as IntWrapper days, a timestamp as LongWrapper in its unit, a decimal as
    BytesWrapper of its unscaled value."""
    kind = _logical_kind(column_schema)
    if kind == "DECIMAL":
        info = f"{column_schema.precision},{column_schema.scale}"
        return ValueTypeInfo(VALUE_TYPE_DECIMAL, info), "BytesWrapper"
    found = _PHYSICAL_VALUE_TYPES.get((physical, kind))
    if found is None:
        raise UnsupportedTableError(
            f"{file_name}: column {column!r} ({physical}, {kind or 'no logical type'}) has no V2 "
            "column-stats type the service writes"
        )
    return ValueTypeInfo(found[0], None), found[1]


def _typed_value(raw: Any, value_type: ValueTypeInfo, wrapper: str) -> WrappedValue | None:
    """A footer min/max in the V2 form `_v2_type` gave: a decimal's unscaled value in
    `BigInteger.toByteArray` form, strings decoded, the rest as their Python value."""
    if raw is None:
        return None
    if value_type.type_ordinal == VALUE_TYPE_DECIMAL:
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
        return WrappedValue(wrapper, _java_big_integer_bytes(unscaled))
    if wrapper == "StringWrapper":
        return WrappedValue(wrapper, bytes(raw).decode("utf-8"))
    if wrapper == "BytesWrapper":
        return WrappedValue(wrapper, bytes(raw))
    if wrapper in ("FloatWrapper", "DoubleWrapper"):
        return WrappedValue(wrapper, float(raw))
    if wrapper == "BooleanWrapper":
        return WrappedValue(wrapper, bool(raw))
    return WrappedValue(wrapper, int(raw))


def _java_big_integer_bytes(value: int) -> bytes:
    """`BigInteger.toByteArray()`: the shortest two's-complement big-endian form (at least one byte)."""
    length = (value + (value < 0)).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


def column_ranges(
    metadata: pq.FileMetaData,
    file_name: str,
    columns: Sequence[str],
    *,
    tight_bound_field: bool = False,
    typed: bool = False,
) -> list[ColumnStats]:
    """One `ColumnStats` per column of `columns` that the file has as a leaf column, in `columns` order.

    `tight_bound_field`: the record has Hudi 1.x's `isTightBound` (false for a file's range).
    `typed`: the column-stats index is version V2 (Hudi 1.1): values in the form `_v2_type` names,
    with their `valueType`."""
    wanted = set(columns)
    schema = metadata.schema
    found: dict[str, ColumnStats] = {}
    for rg_index in range(metadata.num_row_groups):
        row_group = metadata.row_group(rg_index)
        for i in range(row_group.num_columns):
            chunk = row_group.column(i)
            column = chunk.path_in_schema
            if column not in wanted:
                continue
            stats = chunk.statistics
            if stats is None or not stats.has_null_count:
                raise UnsupportedTableError(f"{file_name}: column {column!r} has no statistics in the footer")
            physical = str(chunk.physical_type)
            if stats.has_min_max:
                raw_min, raw_max = stats.min_raw, stats.max_raw
                if physical in ("FLOAT", "DOUBLE"):
                    raw_min, raw_max = _signed_zero_bounds(raw_min, raw_max)
            else:
                # A chunk with only nulls has no min/max in the footer. parquet-mr's statistics then
                # return their field defaults: null for Binary, but 0 / 0.0 / false for the primitive
                # types, which Hudi indexes as such (IntWrapper(0) for an all-null int column).
                raw_min = raw_max = _UNSET_MIN_MAX.get(physical)
            value_type: ValueTypeInfo | None = None
            if typed:
                value_type, wrapper = _v2_type(column, physical, schema.column(i), file_name)
                lo = _typed_value(raw_min, value_type, wrapper)
                hi = _typed_value(raw_max, value_type, wrapper)
            else:
                lo = _java_value(column, physical, schema.column(i), raw_min, file_name)
                hi = _java_value(column, physical, schema.column(i), raw_max, file_name)
            part = ColumnStats(
                file_name=file_name,
                column_name=column,
                min_value=lo,
                max_value=hi,
                null_count=int(stats.null_count),
                value_count=int(chunk.num_values),
                total_size=int(chunk.total_compressed_size),
                total_uncompressed_size=int(chunk.total_uncompressed_size),
                is_deleted=False,
                is_tight_bound=False if typed or tight_bound_field else None,
                value_type=value_type,
            )
            prev = found.get(column)
            found[column] = part if prev is None else merge_column_stats(prev, part)
    return [found[c] for c in columns if c in found]


def _pick(a: WrappedValue | None, b: WrappedValue | None, want_max: bool) -> WrappedValue | None:
    """One side of `HoodieColumnRangeMetadata.merge`: a null bound gives way to the other."""
    if a is None or b is None:
        return b if a is None else a
    if want_max:
        return b if _java_less(a, b) else a
    return a if _java_less(a, b) else b


def merge_column_stats(one: ColumnStats, other: ColumnStats) -> ColumnStats:
    """`HoodieColumnRangeMetadata.merge` of two ranges of one column (row groups of a file, files of a
    partition): the outer bounds, the sums of the counts and sizes; `one`'s name and flags."""
    return ColumnStats(
        file_name=one.file_name,
        column_name=one.column_name,
        min_value=_pick(one.min_value, other.min_value, want_max=False),
        max_value=_pick(one.max_value, other.max_value, want_max=True),
        null_count=one.null_count + other.null_count,
        value_count=one.value_count + other.value_count,
        total_size=one.total_size + other.total_size,
        total_uncompressed_size=one.total_uncompressed_size + other.total_uncompressed_size,
        is_deleted=False,
        is_tight_bound=one.is_tight_bound,
        value_type=one.value_type,
    )
