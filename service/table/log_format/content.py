"""Block contents: Avro and Parquet data blocks, Avro delete blocks (content version 3).

Layouts follow the Java writers: `HoodieAvroDataBlock.serializeRecords` (version, count, then
length-prefixed Avro binary datums in the header's SCHEMA), `HoodieParquetDataBlock.serializeRecords`
(a whole Parquet file), `HoodieDeleteBlock.getContentBytes` (version, length, Avro datum of
`HoodieDeleteRecordList`). Every length is checked against the bytes actually there.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from fastavro.schema import SchemaParseException

from service.errors import CorruptLogBlockError, UnsupportedLogBlockError
from service.table.log_format.avro_arrow import avro_record_to_arrow_schema
from service.table.log_format.avro_columnar import decode_columnar
from service.table.log_format.blocks import BLOCK_CONTENT_VERSION, BlockLocation, DeleteRecord

_INT = struct.Struct(">i")
_AVRO_FAILURES = (ValueError, TypeError, KeyError, EOFError, IndexError, struct.error, UnicodeDecodeError)


class _Cursor:
    """Big-endian reads over one block's content; running past its end is corruption."""

    def __init__(self, content: memoryview, location: BlockLocation, what: str) -> None:
        self.content = content
        self.pos = 0
        self.location = location
        self.what = what

    def int32(self, field: str) -> int:
        return int(_INT.unpack(self.take(4, field))[0])

    def take(self, size: int, field: str) -> memoryview:
        if size < 0 or size > len(self.content) - self.pos:
            raise CorruptLogBlockError(
                self.location.path,
                self.location.offset,
                f"{self.what} {field} needs {size} bytes at content offset {self.pos}, "
                f"content has {len(self.content) - self.pos} left",
            )
        out = self.content[self.pos : self.pos + size]
        self.pos += size
        return out


def avro_data_datums(content: memoryview, location: BlockLocation) -> tuple[bytes, list[tuple[int, int]]]:
    """`HoodieAvroDataBlock` content: its bytes and the (start, length) of each record's datum."""
    cursor = _Cursor(content, location, "Avro data block")
    count = _avro_data_count(cursor, content, location)
    data = bytes(content)
    return data, _datum_bounds(data, cursor.pos, count, location)


def _avro_data_count(cursor: _Cursor, content: memoryview, location: BlockLocation) -> int:
    location.require_version(
        "Avro data block content version",
        cursor.int32("content version"),
        BLOCK_CONTENT_VERSION,
        "Hudi 0.6+ writers, `HoodieAvroDataBlockVersion`",
    )
    count = cursor.int32("record count")
    # Each record takes at least its 4-byte length: a count the content cannot hold is corruption,
    # caught before anything is allocated for it.
    if count < 0 or count * 4 > len(content) - cursor.pos:
        raise CorruptLogBlockError(
            location.path, location.offset, f"Avro data block claims {count} records in {len(content)} bytes"
        )
    return count


def decode_avro_data(content: memoryview, schema_json: str, location: BlockLocation) -> pa.Table:
    """`HoodieAvroDataBlock` content: records decoded with the block's own writer schema."""
    cursor = _Cursor(content, location, "Avro data block")
    count = _avro_data_count(cursor, content, location)
    schema = _parse_schema(schema_json, location)
    try:
        raw_schema = _without_cast_logical_types(schema)
        parsed = fastavro.parse_schema(raw_schema)
        arrow_schema = avro_record_to_arrow_schema(schema)
    except (SchemaParseException, *_AVRO_FAILURES) as err:  # JSON, but no Avro schema (UnknownType, ...)
        raise CorruptLogBlockError(
            location.path, location.offset, f"header SCHEMA is not an Avro schema: {err!r}"
        ) from err
    data = bytes(content)
    # Most blocks: decoded as columns in one call, when that is provably the per-record decode.
    columnar = decode_columnar(data, cursor.pos, count, schema, arrow_schema)
    if columnar is not None:
        return columnar
    bounds = _datum_bounds(data, cursor.pos, count, location)
    # One stream over the whole content, each datum decoded where its length prefix says it starts:
    # per-datum streams and fastavro's datetime objects cost more than the decoding itself.
    stream = io.BytesIO(data)
    rows: list[Any] = []
    for index, (pos, length) in enumerate(bounds):
        stream.seek(pos)
        try:
            row = fastavro.schemaless_reader(stream, parsed, None)
        except _AVRO_FAILURES as err:
            raise CorruptLogBlockError(
                location.path,
                location.offset,
                f"record {index} is not an Avro datum of the block schema: {err}",
            ) from err
        # Java decodes each datum inside its length; one that needs more or fewer bytes is corrupt.
        if stream.tell() != pos + length:
            raise CorruptLogBlockError(
                location.path,
                location.offset,
                f"record {index} decodes to {stream.tell() - pos} bytes, its length says {length}",
            )
        rows.append(row)
    raw = pa.Table.from_pylist(rows, schema=avro_record_to_arrow_schema(raw_schema))
    return raw.cast(arrow_schema)


def _datum_bounds(data: bytes, pos: int, count: int, location: BlockLocation) -> list[tuple[int, int]]:
    """(start, length) of each of the `count` length-prefixed datums from `pos`, each inside `data`."""
    read_length = _INT.unpack_from
    end = len(data)
    bounds = []
    for index in range(count):
        if end - pos < 4:
            raise CorruptLogBlockError(
                location.path,
                location.offset,
                f"record {index} length needs 4 bytes at content offset {pos}, content has {end - pos} left",
            )
        (length,) = read_length(data, pos)
        pos += 4
        if length < 0 or length > end - pos:
            raise CorruptLogBlockError(
                location.path,
                location.offset,
                f"record {index} needs {length} bytes at content offset {pos}, content has {end - pos} left",
            )
        bounds.append((pos, length))
        pos += length
    return bounds


# Logical types whose Arrow type is a plain cast of the Avro primitive (days, millis, micros since
# the epoch or midnight): top-level fields of these are decoded raw and cast by Arrow.
_CAST_LOGICAL_TYPES = frozenset(
    {
        "date",
        "time-millis",
        "time-micros",
        "timestamp-millis",
        "timestamp-micros",
        "local-timestamp-millis",
        "local-timestamp-micros",
    }
)


def _without_cast_logical_types(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with `_CAST_LOGICAL_TYPES` dropped from its top-level fields (as the field's type or
    a branch of its union); nested types keep theirs."""

    def raw(avro: Any) -> Any:
        if isinstance(avro, list):
            return [raw(branch) for branch in avro]
        if isinstance(avro, dict) and avro.get("logicalType") in _CAST_LOGICAL_TYPES:
            return avro["type"]
        return avro

    fields = schema.get("fields")
    if not isinstance(fields, list):
        return schema
    return {
        **schema,
        "fields": [
            {**f, "type": raw(f["type"])} if isinstance(f, dict) and "type" in f else f for f in fields
        ],
    }


def decode_parquet_data(content: memoryview, schema_json: str, location: BlockLocation) -> pa.Table:
    """`HoodieParquetDataBlock` content: a whole Parquet file; zero bytes is a block of no records."""
    if len(content) == 0:
        return avro_record_to_arrow_schema(_parse_schema(schema_json, location)).empty_table()
    try:
        return pq.read_table(pa.BufferReader(pa.py_buffer(content)))
    except (pa.ArrowException, OSError) as err:
        raise CorruptLogBlockError(
            location.path, location.offset, f"Parquet data block content is not a Parquet file: {err}"
        ) from err


def decode_deletes(content: memoryview, location: BlockLocation) -> tuple[DeleteRecord, ...]:
    """`HoodieDeleteBlock` content. Versions 1 and 2 are Kryo-serialized Java objects
    (`SerializationUtils.deserialize` of `HoodieKey[]` / `DeleteRecord[]`): refused by name."""
    cursor = _Cursor(content, location, "delete block")
    version = cursor.int32("content version")
    if version in (1, 2):
        raise UnsupportedLogBlockError(
            location.path,
            location.offset,
            f"delete block content version {version} holds Kryo-serialized Java objects "
            "(written by Hudi before 0.14); only version 3 (Avro HoodieDeleteRecordList) is read",
        )
    if version != BLOCK_CONTENT_VERSION:
        raise UnsupportedLogBlockError(
            location.path, location.offset, f"delete block content version {version} is unknown"
        )
    length = cursor.int32("payload length")
    payload = cursor.take(length, "payload")
    stream = io.BytesIO(payload)
    try:
        decoded = fastavro.schemaless_reader(stream, _delete_schema(), None, return_record_name=True)
    except _AVRO_FAILURES as err:
        raise CorruptLogBlockError(
            location.path, location.offset, f"delete block payload is not a HoodieDeleteRecordList: {err}"
        ) from err
    assert isinstance(decoded, dict)
    out = []
    for rec in decoded["deleteRecordList"]:
        ordering = rec["orderingVal"]
        if ordering is None:
            out.append(DeleteRecord(rec["recordKey"], rec["partitionPath"]))
        else:
            wrapper, value = ordering  # (record name, {"value": ...}) with return_record_name
            out.append(
                DeleteRecord(
                    rec["recordKey"], rec["partitionPath"], value["value"], wrapper.rsplit(".", 1)[-1]
                )
            )
    return tuple(out)


def encode_deletes(records: Sequence[DeleteRecord]) -> bytes:
    """`HoodieDeleteBlock.serializeV3`: int32 content version 3, int32 length, Avro
    HoodieDeleteRecordList. An ordering value goes in the wrapper `ordering_type` names."""
    items = []
    for rec in records:
        ordering: Any = None
        if rec.ordering_value is not None:
            ordering = (f"org.apache.hudi.avro.model.{rec.ordering_type}", {"value": rec.ordering_value})
        items.append(
            {"recordKey": rec.record_key, "partitionPath": rec.partition_path, "orderingVal": ordering}
        )
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _delete_schema(), {"deleteRecordList": items})
    payload = out.getvalue()
    return _INT.pack(BLOCK_CONTENT_VERSION) + _INT.pack(len(payload)) + payload


def _parse_schema(schema_json: str, location: BlockLocation) -> dict[str, Any]:
    try:
        schema = json.loads(schema_json)
    except json.JSONDecodeError as err:
        raise CorruptLogBlockError(
            location.path, location.offset, f"header SCHEMA is not JSON: {err}"
        ) from err
    if not isinstance(schema, dict):
        raise CorruptLogBlockError(location.path, location.offset, "header SCHEMA is not an Avro record")
    return schema


@cache
def _delete_schema() -> Any:
    text = resources.files("service.table.codecs").joinpath("schemas/HoodieDeleteRecordList.avsc").read_text()
    return fastavro.parse_schema(json.loads(text))
