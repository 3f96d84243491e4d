"""`HoodieMetadataRecord`s of the MDT `column_stats` (type 3) and `bloom_filters` (type 4) partitions.

What Hudi 0.15 writes for a base file a commit adds (`HoodieTableMetadataUtil`'s
`convertMetadataToColumnStatsRecords` / `convertMetadataToBloomFilterRecords`) and for a base file a
clean deletes (their `HoodieCleanMetadata` overloads), built by `HoodieMetadataPayload`'s
`createColumnStatsRecords` / `createBloomFilterMetadataRecord`:

- column stats: one record per indexed column present in the Parquet file, from its footer
  (`column_ranges.py`); a deleted file gets, per indexed column, a stub (`HoodieColumnRangeMetadata.stub`:
  no min/max, every count -1) with `isDeleted=true`.
- bloom filter: `{type: <the writer's hoodie.bloom.index.filter.type>, timestamp: <instant>,
  bloomFilter: UTF-8 of the filter's serializeToString(), isDeleted: false}`; a deleted base file
  gets `{type: "", timestamp: <clean instant>, bloomFilter: b"", isDeleted: true}`.

Values are encoded as in `records.py`: the log block schema (meta fields null), `key` blanked.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from service.errors import CorruptTableError
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.mdt.index_keys import bloom_filter_key, column_stats_key
from service.table.mdt.records import ON_DISK_SCHEMA, encode_metadata_record, read_metadata_record

RECORD_TYPE_COLUMN_STATS = 3  # HoodieMetadataPayload.METADATA_TYPE_COLUMN_STATS
RECORD_TYPE_BLOOM_FILTER = 4  # HoodieMetadataPayload.METADATA_TYPE_BLOOM_FILTER
RECORD_TYPE_RECORD_INDEX = 5  # HoodieMetadataPayload.METADATA_TYPE_RECORD_INDEX
RECORD_TYPE_PARTITION_STATS = 6  # HoodieMetadataPayload.METADATA_TYPE_PARTITION_STATS (Hudi 1.x)
# A file id `<uuid>-<n>` is stored as the UUID's two signed 64-bit halves and n (encoding 0); any other
# as its string (encoding 1): `HoodieMetadataPayload.createRecordIndexUpdate`.
_UUID_FILE_ID = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)\Z")
AVRO_NAMESPACE = "org.apache.hudi.avro.model"
# The value wrappers of HoodieMetadataColumnStats.minValue/maxValue (HoodieAvroUtils.wrapValueIntoAvro).
WRAPPERS = (
    "BooleanWrapper",
    "IntWrapper",
    "LongWrapper",
    "FloatWrapper",
    "DoubleWrapper",
    "BytesWrapper",
    "StringWrapper",
    "DateWrapper",
    "DecimalWrapper",
    "TimeMicrosWrapper",
    "TimestampMicrosWrapper",
)
# FSUtils.isBaseFile: the base file formats (HoodieFileFormat.BASE_FILE_EXTENSIONS).
_BASE_FILE_EXTENSIONS = (".parquet", ".hfile", ".orc")
_COLUMN_STATS_EXTENSION = ".parquet"  # readColumnRangeMetadataFrom reads Parquet footers only


@dataclass(frozen=True)
class WrappedValue:
    """A min/max as Hudi stores it: the wrapper record's name (e.g. `IntWrapper`) and its `value`."""

    wrapper: str
    value: bool | int | float | str | bytes | Decimal

    def __post_init__(self) -> None:
        if self.wrapper not in WRAPPERS:
            raise ValueError(f"unknown column stats value wrapper {self.wrapper!r}")


@dataclass(frozen=True)
class ValueTypeInfo:
    """`HoodieValueTypeInfo` (Hudi 1.1, V2 column stats): `org.apache.hudi.stats.ValueType`'s ordinal,
    and for a decimal `precision,scale`."""

    type_ordinal: int
    additional_info: str | None = None


@dataclass(frozen=True)
class ColumnStats:
    """`HoodieMetadataColumnStats`. `is_tight_bound` (Hudi 1.x's field; None: a 0.x record without it)
    is false for a file's range, true for a partition's; `value_type` is set on V2 records only."""

    file_name: str
    column_name: str
    min_value: WrappedValue | None
    max_value: WrappedValue | None
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int
    is_deleted: bool
    is_tight_bound: bool | None = None
    value_type: ValueTypeInfo | None = None


@dataclass(frozen=True)
class BloomFilterMetadata:
    """`HoodieMetadataBloomFilter`."""

    type: str
    timestamp: str
    bloom_filter: bytes
    is_deleted: bool


@dataclass(frozen=True)
class RecordIndexInfo:
    """`HoodieRecordIndexInfo`: where a record key lives (partition, file group, the instant that
    wrote it as epoch milliseconds in the table's timeline zone)."""

    partition_name: str
    file_id_high_bits: int | None
    file_id_low_bits: int | None
    file_index: int | None
    file_id: str
    instant_time: int
    file_id_encoding: int


@dataclass(frozen=True)
class IndexRecord:
    """A type-3, -4 or -5 `HoodieMetadataRecord`: its key and payload."""

    key: str
    type: int
    payload: ColumnStats | BloomFilterMetadata | RecordIndexInfo


def record_location(partition_path: str, file_id: str, instant_millis: int) -> RecordIndexInfo:
    """Where a commit put the keys of file group `file_id`: the same for every key of one file, so a
    writer builds it (and its Avro value, which does not hold the key) once per file."""
    found = _UUID_FILE_ID.match(file_id)
    if found is None:
        return RecordIndexInfo(partition_path, None, None, None, file_id, instant_millis, 1)
    value = uuid.UUID(found[1]).int
    high, low = value >> 64, value & ((1 << 64) - 1)
    return RecordIndexInfo(
        partition_path, _signed64(high), _signed64(low), int(found[2]), "", instant_millis, 0
    )


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def is_base_file(file_name: str) -> bool:
    return file_name.endswith(_BASE_FILE_EXTENSIONS)


def column_stats_record(partition_path: str, stats: ColumnStats) -> IndexRecord:
    """`HoodieMetadataPayload.createColumnStatsRecords` for one column range of a file."""
    return IndexRecord(
        column_stats_key(partition_path, stats.file_name, stats.column_name), RECORD_TYPE_COLUMN_STATS, stats
    )


def column_stats_deletions(partition_path: str, deleted_entry: str, columns: list[str]) -> list[IndexRecord]:
    """The records a clean writes for one `deletePathPatterns` entry of a partition
    (`getColumnStatsRecords(..., isDeleted=true)`): per indexed column a `HoodieColumnRangeMetadata.stub`,
    none for a file that is not Parquet.

    Hudi 0.15 names the file `FSUtils.getFileName(entry, partition)`, which drops the first
    `len(partition) + 1` characters, meant for a path that starts with the partition; the entries are
    bare file names, so in a partitioned table the stub carries (and its key hashes) the file name
    without its first characters: `c2f3a2e0-...parquet` in `asia` becomes `a2e0-...parquet`. Those
    tombstones match no live record, and Hudi's readers keep the deleted file's stats (harmless: the
    file is no longer listed). We write exactly what Hudi writes.
    """
    if not deleted_entry.endswith(_COLUMN_STATS_EXTENSION):
        return []
    offset = len(partition_path) + 1 if partition_path else (1 if deleted_entry.startswith("/") else 0)
    name = deleted_entry[offset:].rsplit("/", 1)[-1]  # String.substring, then StoragePath.getName
    if not name:
        raise ValueError(f"Hudi's clean cannot name column stats of {deleted_entry!r} in {partition_path!r}")
    return [
        column_stats_record(partition_path, ColumnStats(name, column, None, None, -1, -1, -1, -1, True))
        for column in columns
    ]


def bloom_filter_record(
    partition_path: str, file_name: str, instant: str, bloom_type: str, serialized_filter: str
) -> IndexRecord:
    """The bloom filter record of a base file a commit adds: `serialized_filter` is the footer's
    `org.apache.hudi.bloomfilter` (Java re-serialises the filter it read, which gives the same string),
    `bloom_type` the writer's `hoodie.bloom.index.filter.type`."""
    if not is_base_file(file_name):
        raise ValueError(f"{file_name!r} is not a base file; Hudi indexes bloom filters of base files only")
    payload = BloomFilterMetadata(bloom_type, instant, serialized_filter.encode("utf-8"), False)
    return IndexRecord(bloom_filter_key(partition_path, file_name), RECORD_TYPE_BLOOM_FILTER, payload)


def bloom_filter_deletion(partition_path: str, file_name: str, clean_instant: str) -> IndexRecord | None:
    """The record a clean writes for a deleted file; None for a file that is not a base file."""
    if not is_base_file(file_name):
        return None
    payload = BloomFilterMetadata("", clean_instant, b"", True)
    return IndexRecord(bloom_filter_key(partition_path, file_name), RECORD_TYPE_BLOOM_FILTER, payload)


def _wrapped_to_avro(value: WrappedValue | None) -> Any:
    if value is None:
        return None
    # fastavro's tuple notation picks the union branch by name: IntWrapper and DateWrapper (or
    # LongWrapper and TimestampMicrosWrapper) have the same shape and would otherwise be ambiguous.
    return (f"{AVRO_NAMESPACE}.{value.wrapper}", {"value": value.value})


def encode_index_record(record: IndexRecord, schema_name: str = ON_DISK_SCHEMA) -> bytes:
    """The Avro value of the record in an HFile cell (meta fields null, `key` blanked: the row has it)."""
    bloom: Any = None
    stats: Any = None
    location: Any = None
    if isinstance(record.payload, RecordIndexInfo):
        r = record.payload
        location = {
            "partitionName": r.partition_name,
            "fileIdHighBits": r.file_id_high_bits,
            "fileIdLowBits": r.file_id_low_bits,
            "fileIndex": r.file_index,
            "fileId": r.file_id,
            "instantTime": r.instant_time,
            "fileIdEncoding": r.file_id_encoding,
            "position": None,
        }
    elif isinstance(record.payload, BloomFilterMetadata):
        p = record.payload
        bloom = {
            "type": p.type,
            "timestamp": p.timestamp,
            "bloomFilter": p.bloom_filter,
            "isDeleted": p.is_deleted,
        }
    else:
        s = record.payload
        stats = {
            "fileName": s.file_name,
            "columnName": s.column_name,
            "minValue": _wrapped_to_avro(s.min_value),
            "maxValue": _wrapped_to_avro(s.max_value),
            "valueCount": s.value_count,
            "nullCount": s.null_count,
            "totalSize": s.total_size,
            "totalUncompressedSize": s.total_uncompressed_size,
            "isDeleted": s.is_deleted,
            # Fields of Hudi 1.x's schemas; a 0.15 schema has neither and the writer ignores them.
            "isTightBound": bool(s.is_tight_bound),
            "valueType": None
            if s.value_type is None
            else {"typeOrdinal": s.value_type.type_ordinal, "additionalInfo": s.value_type.additional_info},
        }
    value = {
        **dict.fromkeys(HOODIE_META_FIELDS),
        "key": "",
        "type": record.type,
        "filesystemMetadata": None,
        "BloomFilterMetadata": bloom,
        "ColumnStatsMetadata": stats,
        "recordIndexMetadata": location,
    }
    return encode_metadata_record(value, schema_name)


def _wrapped_from_avro(raw: Any, where: str) -> WrappedValue | None:
    if raw is None:
        return None
    if not (isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[1], dict)):
        raise CorruptTableError(f"{where}: min/max {raw!r} is not a value wrapper")
    name = str(raw[0]).rsplit(".", 1)[-1]
    if name not in WRAPPERS:
        raise CorruptTableError(f"{where}: unknown value wrapper {raw[0]!r}")
    return WrappedValue(name, raw[1]["value"])


def decode_index_record(row_key: str, value: bytes, writer_schema: str, source: str) -> IndexRecord:
    """One record of `column_stats` or `bloom_filters`; CorruptTableError names `source` and the key."""
    where = f"{source}: MDT record {row_key!r}"
    record = read_metadata_record(row_key, value, writer_schema, where, record_names=True)
    key = row_key  # read_metadata_record checked the record agrees
    kind = record.get("type")
    payload: ColumnStats | BloomFilterMetadata | RecordIndexInfo
    if kind == RECORD_TYPE_RECORD_INDEX:
        r = _unwrap_union(record.get("recordIndexMetadata"))
        if r is None:
            raise CorruptTableError(f"{where}: type 5 without recordIndexMetadata")
        payload = RecordIndexInfo(
            str(r["partitionName"]),
            r.get("fileIdHighBits"),
            r.get("fileIdLowBits"),
            r.get("fileIndex"),
            str(r.get("fileId") or ""),
            int(r["instantTime"]),
            int(r.get("fileIdEncoding") or 0),
        )
    elif kind == RECORD_TYPE_BLOOM_FILTER:
        b = _unwrap_union(record.get("BloomFilterMetadata"))
        if b is None:
            raise CorruptTableError(f"{where}: type 4 without BloomFilterMetadata")
        payload = BloomFilterMetadata(
            str(b["type"]), str(b["timestamp"]), bytes(b["bloomFilter"]), bool(b["isDeleted"])
        )
    elif kind in (RECORD_TYPE_COLUMN_STATS, RECORD_TYPE_PARTITION_STATS):
        c = _unwrap_union(record.get("ColumnStatsMetadata"))
        if c is None:
            raise CorruptTableError(f"{where}: type {kind} without ColumnStatsMetadata")
        payload = ColumnStats(
            file_name=c["fileName"],
            column_name=c["columnName"],
            min_value=_wrapped_from_avro(c["minValue"], where),
            max_value=_wrapped_from_avro(c["maxValue"], where),
            null_count=c["nullCount"],
            value_count=c["valueCount"],
            total_size=c["totalSize"],
            total_uncompressed_size=c["totalUncompressedSize"],
            is_deleted=bool(c["isDeleted"]),
            # A 0.x writer's schema has no `isTightBound`: None, as our 0.x records carry it.
            is_tight_bound=bool(c["isTightBound"]) if '"isTightBound"' in writer_schema else None,
            value_type=_value_type_from_avro(c.get("valueType")),
        )
    else:
        raise CorruptTableError(
            f"{where}: type {kind} is not column or partition stats, a bloom filter or a record location"
        )
    return IndexRecord(key, int(kind), payload)


def _value_type_from_avro(raw: Any) -> ValueTypeInfo | None:
    info = _unwrap_union(raw)
    if info is None:
        return None
    return ValueTypeInfo(int(info["typeOrdinal"]), info.get("additionalInfo"))


def _unwrap_union(raw: Any) -> Any:
    """With `return_record_name`, a record in a union reads as (name, value)."""
    if isinstance(raw, tuple) and len(raw) == 2:
        return raw[1]
    return raw
