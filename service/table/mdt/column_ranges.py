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

import math
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow.parquet as pq

from service.errors import UnsupportedTableError
from service.table.java_string_order import java_compare
from service.table.mdt.index_records import ColumnStats, WrappedValue

# HoodieRecord.HOODIE_META_COLUMNS, in the order HoodieAvroUtils.addMetadataFields prepends them.
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def columns_to_index(
    configured: Sequence[str], schema_fields: Sequence[str], populate_meta_fields: bool
) -> list[str]:
    """`HoodieTableMetadataUtil.getColumnsToIndex`: the configured list as given, else the schema's
    top-level fields, meta fields first when populated (`HoodieAvroUtils.addMetadataFields`)."""
    if configured:
        return list(configured)
    data = [f for f in schema_fields if f not in META_COLUMNS]
    return [*META_COLUMNS, *data] if populate_meta_fields else data


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


def _java_value(column: str, physical: str, original: str | None, raw: Any, file_name: str) -> WrappedValue:
    """`convertToNativeJavaType` then `wrapValueIntoAvro`, for a footer min/max in its physical type."""
    if original == "DECIMAL":
        # wrapValueIntoAvro re-scales to DecimalWrapper's decimal(30, 15) (tryUpcastDecimal); not
        # proven against Hudi here, so refuse rather than write a value Hudi would not.
        raise UnsupportedTableError(
            f"{file_name}: column stats of decimal column {column!r} are not supported"
        )
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


def column_ranges(metadata: pq.FileMetaData, file_name: str, columns: Sequence[str]) -> list[ColumnStats]:
    """One `ColumnStats` per column of `columns` that the file has as a leaf column, in `columns` order."""
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
            if not stats.has_min_max:
                # parquet-mr leaves an all-null chunk's min/max unset: Binary stays null, but the
                # primitive statistics return their zero default. Not proven against Hudi: refuse.
                raise UnsupportedTableError(
                    f"{file_name}: column {column!r} has no min/max (all null in a row group)"
                )
            physical = str(chunk.physical_type)
            original = _original_type(schema.column(i))
            lo = _java_value(column, physical, original, stats.min_raw, file_name)
            hi = _java_value(column, physical, original, stats.max_raw, file_name)
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
            )
            prev = found.get(column)
            found[column] = part if prev is None else _merge(prev, part)
    return [found[c] for c in columns if c in found]


def _merge(one: ColumnStats, other: ColumnStats) -> ColumnStats:
    """`HoodieColumnRangeMetadata.merge` of two row groups' ranges of one column."""
    assert one.min_value is not None and other.min_value is not None
    assert one.max_value is not None and other.max_value is not None
    lo = one.min_value if _java_less(one.min_value, other.min_value) else other.min_value
    hi = other.max_value if _java_less(one.max_value, other.max_value) else one.max_value
    return ColumnStats(
        file_name=one.file_name,
        column_name=one.column_name,
        min_value=lo,
        max_value=hi,
        null_count=one.null_count + other.null_count,
        value_count=one.value_count + other.value_count,
        total_size=one.total_size + other.total_size,
        total_uncompressed_size=one.total_uncompressed_size + other.total_uncompressed_size,
        is_deleted=False,
    )
