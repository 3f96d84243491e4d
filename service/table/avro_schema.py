"""The Avro schema a Hudi base file carries in its `parquet.avro.schema` footer, and its Arrow side.

Two sources: the table's schema as Hudi wrote it (copied from an input file's footer or from commit
metadata, and embedded as is), or one derived from an Arrow schema the way Hudi's Spark writer
derives it from a DataFrame (`AvroConversionUtils.convertStructTypeToAvroSchema`):

- top-level record `<table>_record` in namespace `hoodie.<table>` (table name sanitised as Avro
  names require); the five meta fields first, each `["null","string"]` with `"doc":""`, default null;
- a nullable type T becomes `["null", T]` with `"default": null` on the field;
- nested records are named after their field, in namespace `<parent namespace>.<parent name>`;
  list elements and map values keep the field's name and the parent's namespace;
- decimals are `fixed` named `fixed` in namespace `<namespace>.<field>`, of the minimal size;
- timestamps `timestamp-micros` (or `-millis`), dates `date`, byte/short `int`.

JSON is compact with keys in the order Java's `Schema.toString()` writes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from service.errors import HudiTableServiceError

HOODIE_META_FIELDS: tuple[str, ...] = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
RECORD_KEY_FIELD = "_hoodie_record_key"
FILE_NAME_FIELD = "_hoodie_file_name"

_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_INVALID_FIRST_CHAR = re.compile(r"[^A-Za-z_]")

AvroSchema = dict[str, Any]


def meta_field(name: str) -> AvroSchema:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def record_name_and_namespace(table_name: str) -> tuple[str, str]:
    """`(<table>_record, hoodie.<table>)`, with characters Avro names forbid masked by `__`."""
    if not table_name:
        raise HudiTableServiceError("table name is empty; cannot name its Avro record")
    name = table_name
    if _INVALID_FIRST_CHAR.match(name[0]):
        name = _INVALID_FIRST_CHAR.sub("__", name, count=1)
    name = _INVALID_NAME_CHARS.sub("__", name)
    return f"{name}_record", f"hoodie.{name}"


# --------------------------------------------------------------------------- Arrow normalisation

# Arrow types Hudi's Avro schemas cannot hold (AvroConversionUtils has no mapping for them).
_NO_AVRO_EQUIVALENT = (
    pa.types.is_uint64,
    pa.types.is_null,
    pa.types.is_duration,
    pa.types.is_interval,
    pa.types.is_union,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)


def normalize_arrow_type(dtype: pa.DataType, path: str = "") -> pa.DataType:
    """The Arrow type a column is written as, so that its Parquet type is what Hudi's writer uses.

    Parquet-avro writes byte/short as plain INT32, has no unsigned, half-float or fixed binary
    types, and timestamps in millis or micros; pyarrow would otherwise annotate INT(8)/INT(16),
    write UINT types, FLOAT16, FIXED_LEN_BYTE_ARRAY or nanosecond timestamps.
    """
    if pa.types.is_dictionary(dtype):
        return normalize_arrow_type(dtype.value_type, path)
    if isinstance(dtype, pa.ExtensionType):
        return normalize_arrow_type(dtype.storage_type, path)
    if dtype in (pa.int8(), pa.int16(), pa.uint8(), pa.uint16()):
        return pa.int32()
    if dtype == pa.uint32():
        return pa.int64()
    if dtype == pa.float16():
        return pa.float32()
    if pa.types.is_timestamp(dtype):
        unit = {"s": "ms", "ns": "us"}.get(dtype.unit, dtype.unit)
        return pa.timestamp(unit, dtype.tz)
    if pa.types.is_time32(dtype):
        return pa.time32("ms")
    if pa.types.is_time64(dtype):
        return pa.time64("us")
    if pa.types.is_date64(dtype):
        return pa.date32()
    if pa.types.is_fixed_size_binary(dtype) and not pa.types.is_decimal(dtype):
        return pa.binary()
    if pa.types.is_binary_view(dtype):
        return pa.binary()
    if pa.types.is_string_view(dtype):
        return pa.string()
    if pa.types.is_struct(dtype):
        return pa.struct([_normalize_field(dtype.field(i), path) for i in range(dtype.num_fields)])
    if pa.types.is_map(dtype):
        if not (pa.types.is_string(dtype.key_type) or pa.types.is_large_string(dtype.key_type)):
            raise HudiTableServiceError(
                f"column {path!r}: Avro map keys must be strings, got {dtype.key_type}"
            )
        item = _normalize_field(dtype.item_field, path)
        return pa.map_(pa.string(), item)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        element = _normalize_field(dtype.value_field, path)
        return pa.large_list(element) if pa.types.is_large_list(dtype) else pa.list_(element)
    if any(has_no_avro_type(dtype) for has_no_avro_type in _NO_AVRO_EQUIVALENT):
        raise HudiTableServiceError(f"column {path!r}: Arrow type {dtype} has no Hudi/Avro equivalent")
    return dtype


def _normalize_field(field: pa.Field, parent: str) -> pa.Field:
    path = f"{parent}.{field.name}" if parent else field.name
    return pa.field(field.name, normalize_arrow_type(field.type, path), field.nullable)


def normalize_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """`normalize_arrow_type` for every column; schema-level metadata is dropped."""
    return pa.schema([_normalize_field(f, "") for f in schema])


# --------------------------------------------------------------------------- Arrow -> Avro
def arrow_to_avro_schema(schema: pa.Schema, table_name: str, *, all_nullable: bool = True) -> AvroSchema:
    """The Avro schema Hudi's Spark writer would use for a DataFrame of this Arrow schema.

    The meta fields come first (replacing the Arrow schema's own meta columns, if it has them).
    `all_nullable=True` makes every field, element and map value nullable, as a DataFrame read
    from files is; `False` follows the Arrow nullability flags instead (Spark's rule applied to
    the DataFrame's actual flags: it reproduces e.g. a `required` key column).
    """
    record_name, namespace = record_name_and_namespace(table_name)
    normalized = normalize_arrow_schema(schema)
    fields: list[AvroSchema] = [meta_field(name) for name in HOODIE_META_FIELDS]
    child_namespace = f"{namespace}.{record_name}"
    for field in normalized:
        if field.name in HOODIE_META_FIELDS:
            continue
        fields.append(_avro_field(field, child_namespace, namespace, all_nullable))
    return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}


def _avro_field(field: pa.Field, namespace: str, enclosing: str, all_nullable: bool) -> AvroSchema:
    _check_name(field.name, namespace)
    nullable = all_nullable or field.nullable
    avro_type = _avro_type(field.type, field.name, namespace, enclosing, all_nullable)
    if nullable:
        return {"name": field.name, "type": ["null", avro_type], "default": None}
    return {"name": field.name, "type": avro_type}


def _nullable(avro_type: Any, nullable: bool) -> Any:
    return ["null", avro_type] if nullable else avro_type


# Arrow types (after `normalize_arrow_type`) that are one Avro primitive, as Spark's
# `SchemaConverters.toAvroType` maps their Spark types.
_AVRO_PRIMITIVES: tuple[tuple[Callable[[pa.DataType], bool], str], ...] = (
    (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"),
    (pa.types.is_binary, "bytes"),
    (pa.types.is_large_binary, "bytes"),
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_int32, "int"),
    (pa.types.is_int64, "long"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
)


def _avro_type(dtype: pa.DataType, name: str, namespace: str, enclosing: str, all_nullable: bool) -> Any:
    """Avro type of an Arrow type; `name`/`namespace` are what Spark names a nested record or fixed."""
    for is_type, primitive in _AVRO_PRIMITIVES:
        if is_type(dtype):
            return primitive
    if pa.types.is_date32(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        unit = "millis" if dtype.unit == "ms" else "micros"
        kind = "timestamp" if dtype.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{kind}-{unit}"}
    if pa.types.is_time32(dtype):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(dtype):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_decimal(dtype):
        fixed_namespace = f"{namespace}.{name}"
        out: AvroSchema = {"type": "fixed", "name": "fixed"}
        if fixed_namespace != enclosing:
            out["namespace"] = fixed_namespace
        out.update(
            {
                "size": decimal_fixed_size(dtype.precision),
                "logicalType": "decimal",
                "precision": dtype.precision,
                "scale": dtype.scale,
            }
        )
        return out
    if pa.types.is_struct(dtype):
        record: AvroSchema = {"type": "record", "name": name}
        if namespace != enclosing:
            record["namespace"] = namespace
        child_namespace = f"{namespace}.{name}"
        record["fields"] = [
            _avro_field(child, child_namespace, namespace, all_nullable) for child in dtype.fields
        ]
        return record
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        element = dtype.value_field
        items = _avro_type(element.type, name, namespace, enclosing, all_nullable)
        return {"type": "array", "items": _nullable(items, all_nullable or element.nullable)}
    if pa.types.is_map(dtype):
        item = dtype.item_field
        values = _avro_type(item.type, name, namespace, enclosing, all_nullable)
        return {"type": "map", "values": _nullable(values, all_nullable or item.nullable)}
    raise HudiTableServiceError(f"field {namespace}.{name}: Arrow type {dtype} has no Avro equivalent")


def _check_name(name: str, namespace: str) -> None:
    if not _AVRO_NAME.fullmatch(name):
        raise HudiTableServiceError(f"field name {name!r} in {namespace} is not a valid Avro name")


def decimal_fixed_size(precision: int) -> int:
    """Fewest bytes whose two's complement holds every `precision`-digit unscaled value."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


# --------------------------------------------------------------------------- JSON handling
def avro_schema_to_json(schema: Mapping[str, Any]) -> str:
    """Compact JSON as Java's `Schema.toString()` writes it (insertion order of keys is kept)."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def parse_avro_schema(schema_json: str) -> AvroSchema:
    try:
        schema = json.loads(schema_json)
    except json.JSONDecodeError as exc:
        raise HudiTableServiceError(f"Avro schema is not valid JSON: {exc}") from exc
    is_record = isinstance(schema, dict) and schema.get("type") == "record"
    if not (is_record and isinstance(schema.get("fields"), list)):
        raise HudiTableServiceError(f"Avro schema is not a record schema: {schema_json[:200]}")
    return schema


def with_meta_fields(schema_json: str) -> str:
    """The schema with Hudi's five meta fields first: unchanged if it has them, else prepended.

    Commit metadata stores the table schema without meta fields; data files carry them
    (`HoodieAvroUtils.addMetadataFields`).
    """
    schema = parse_avro_schema(schema_json)
    names = [f.get("name") for f in schema["fields"]]
    if tuple(names[: len(HOODIE_META_FIELDS)]) == HOODIE_META_FIELDS:
        return schema_json
    if any(name in HOODIE_META_FIELDS for name in names):
        raise HudiTableServiceError(f"Avro schema has meta fields out of place: {names[:10]}")
    schema["fields"] = [meta_field(name) for name in HOODIE_META_FIELDS] + schema["fields"]
    return avro_schema_to_json(schema)


def top_level_nullability(schema: Mapping[str, Any]) -> dict[str, bool]:
    """Field name -> whether the field's Avro type is a union containing null."""
    out: dict[str, bool] = {}
    for field in schema["fields"]:
        ftype = field["type"]
        out[field["name"]] = ftype == "null" or (isinstance(ftype, list) and "null" in ftype)
    return out
