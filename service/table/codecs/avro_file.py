"""Avro timeline files: one record in an Object Container File, as `TimelineMetadataUtils` writes them.

Java writes codec null and embeds the full writer schema; its reader resolves that schema against
its compiled one. We do the same with our own 0.14.1 schemas (`schemas/*.avsc`) as reader schema,
so files from newer Hudi versions that carry extra optional fields still decode.
"""

from __future__ import annotations

import io
import json
from functools import cache
from importlib import resources
from typing import Annotated, Any, ClassVar, Self, TypeVar

import annotated_types
import fastavro
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from service.errors import CorruptTableError

NAMESPACE = "org.apache.hudi.avro.model"

Int32 = Annotated[int, annotated_types.Interval(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, annotated_types.Interval(ge=-(2**63), le=2**63 - 1)]


# Hudi's stored records (Avro and JSON alike): camelCase field names on disk, snake_case attributes here;
# frozen, and an unknown field is an error.
HUDI_RECORD_CONFIG = ConfigDict(
    frozen=True,
    extra="forbid",
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    serialize_by_alias=True,
)


class AvroModel(BaseModel):
    """A Hudi Avro record: snake_case attributes, Avro field names (camelCase) as aliases.

    Attribute order is the Avro field order. Defaults are the Avro schema's, except where a
    subclass says Java always writes something else.
    """

    model_config = HUDI_RECORD_CONFIG


class AvroRootModel(AvroModel):
    """A record stored as a whole timeline file; `AVRO_NAME` names its schema file."""

    AVRO_NAME: ClassVar[str]

    @classmethod
    def from_empty_file(cls, source: str) -> Self:
        """What a 0-byte file means; for most records it is corruption."""
        raise CorruptTableError(f"{source}: empty file, expected an Avro {cls.AVRO_NAME}")


R = TypeVar("R", bound=AvroRootModel)


@cache
def _schema_text(avro_name: str) -> str:
    return resources.files(__package__).joinpath("schemas", f"{avro_name}.avsc").read_text("utf-8")


def schema_text(avro_name: str) -> str:
    """The stored schema file of `<avro_name>` verbatim (for schemas whose exact text goes to disk)."""
    return _schema_text(avro_name)


def schema_json(avro_name: str) -> dict[str, Any]:
    """Our schema for the record `org.apache.hudi.avro.model.<avro_name>`, as (a fresh copy of) JSON."""
    loaded: dict[str, Any] = json.loads(_schema_text(avro_name))
    return loaded


@cache
def _parsed_schema(avro_name: str) -> Any:
    # Each file is self-contained; a private registry keeps a type named in two files
    # (HoodieInstantInfo) from clashing.
    return fastavro.parse_schema(schema_json(avro_name), named_schemas={})


def encode_avro(model: AvroRootModel, schema_name: str | None = None) -> bytes:
    """One-record Avro container file, codec null, our full schema embedded; `schema_name` picks an
    older schema file of the record (`HoodieCompactionPlan-0.15`) whose fields a table version's Hudi
    writes, the fields it lacks left out."""
    record = _plain(model.model_dump(by_alias=True))
    buf = io.BytesIO()
    try:
        fastavro.writer(buf, _parsed_schema(schema_name or model.AVRO_NAME), [record], codec="null")
    except (ValueError, TypeError) as e:
        raise ValueError(f"cannot encode {model.AVRO_NAME}: {e}") from e
    return buf.getvalue()


def _plain(value: Any) -> Any:
    # fastavro reads a tuple inside a union as (branch name, value): hand it lists.
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def decode_avro(model_type: type[R], data: bytes, source: str) -> R:
    """The first record of `data`, resolved against our schema; CorruptTableError names `source`."""
    if not data:
        return model_type.from_empty_file(source)
    try:
        reader = fastavro.reader(io.BytesIO(data), reader_schema=_parsed_schema(model_type.AVRO_NAME))
        record = next(iter(reader), None)
    except Exception as e:  # fastavro raises many kinds (ValueError, EOFError, SchemaResolutionError, ...)
        raise CorruptTableError(f"{source}: not a readable Avro {model_type.AVRO_NAME} file: {e}") from e
    if record is None:
        raise CorruptTableError(f"{source}: Avro file holds no {model_type.AVRO_NAME} record")
    try:
        return model_type.model_validate(record)
    except ValidationError as e:
        raise CorruptTableError(f"{source}: invalid {model_type.AVRO_NAME}: {e}") from e
