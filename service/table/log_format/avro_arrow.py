"""Arrow types for the Avro schema a log data block carries (the inverse of `service.table.avro_schema`).

The Arrow side matches what pyarrow reads from a Hudi base file that parquet-avro wrote with the
same schema: `timestamp-micros` is UTC-adjusted (`timestamp[us, tz=UTC]`), `decimal` is decimal128,
a `["null", T]` union is a nullable T. Unions of two or more non-null types have no Arrow equivalent
in Hudi's files and are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from service.errors import UnsupportedTableError

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def avro_record_to_arrow_schema(schema: Mapping[str, Any]) -> pa.Schema:
    """Arrow schema of a top-level Avro record (fields in Avro order)."""
    if schema.get("type") != "record":
        raise UnsupportedTableError(f"log block schema is a {schema.get('type')!r}, not an Avro record")
    named: dict[str, pa.DataType] = {}
    return pa.schema([_field(f, str(schema.get("namespace") or ""), named) for f in schema["fields"]])


def _field(field: Mapping[str, Any], namespace: str, named: dict[str, pa.DataType]) -> pa.Field:
    dtype, nullable = _type(field["type"], namespace, named)
    return pa.field(field["name"], dtype, nullable=nullable)


def _type(avro: Any, namespace: str, named: dict[str, pa.DataType]) -> tuple[pa.DataType, bool]:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise UnsupportedTableError(f"Avro union {avro!r} has no Arrow equivalent in a Hudi table")
        return _type(branches[0], namespace, named)[0], len(branches) != len(avro)
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro], False
        full = avro if "." in avro or not namespace else f"{namespace}.{avro}"
        if full in named or avro in named:
            return named.get(full, named.get(avro)), False
        raise UnsupportedTableError(f"Avro type {avro!r} is not defined before its use")
    kind = avro["type"]
    logical = avro.get("logicalType")
    if kind == "record":
        ns = str(avro.get("namespace") or namespace)
        struct = pa.struct([_field(f, ns, named) for f in avro["fields"]])
        _register(avro, ns, struct, named)
        return struct, False
    if kind == "enum":
        _register(avro, str(avro.get("namespace") or namespace), pa.string(), named)
        return pa.string(), False
    if kind == "fixed":
        ns = str(avro.get("namespace") or namespace)
        dtype = pa.decimal128(avro["precision"], avro.get("scale", 0)) if logical == "decimal" else None
        dtype = dtype or pa.binary(int(avro["size"]))
        _register(avro, ns, dtype, named)
        return dtype, False
    if kind == "array":
        item, item_nullable = _type(avro["items"], namespace, named)
        return pa.list_(pa.field("element", item, nullable=item_nullable)), False
    if kind == "map":
        value, value_nullable = _type(avro["values"], namespace, named)
        return pa.map_(pa.string(), pa.field("value", value, nullable=value_nullable)), False
    if logical == "decimal" and kind == "bytes":
        return pa.decimal128(avro["precision"], avro.get("scale", 0)), False
    if logical == "date" and kind == "int":
        return pa.date32(), False
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms"), False
    if logical == "time-micros" and kind == "long":
        return pa.time64("us"), False
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return pa.timestamp("ms" if logical.endswith("millis") else "us", tz="UTC"), False
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return pa.timestamp("ms" if logical.endswith("millis") else "us"), False
    return _type(kind, namespace, named)


def _register(
    avro: Mapping[str, Any], namespace: str, dtype: pa.DataType, named: dict[str, pa.DataType]
) -> None:
    name = str(avro["name"])
    named[name if "." in name or not namespace else f"{namespace}.{name}"] = dtype
    named[name.rsplit(".", 1)[-1]] = dtype
