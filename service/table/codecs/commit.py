"""Commit metadata: HoodieCommitMetadata (`T.commit`, `T.deltacommit`, inflight workload profiles)
and HoodieReplaceCommitMetadata (`T.replacecommit`), with their HoodieWriteStat entries.

Timeline layout 1 stores them as JSON (`CommitMetadataSerDeV1`); layout 2 as a one-record Avro
container of `org.apache.hudi.avro.model.HoodieCommitMetadata` / `HoodieReplaceCommitMetadata`
(`CommitMetadataSerDeV2`), whose fields carry the JSON names, so both decode through one reader.

Writing follows Jackson's field order and pretty printing; reading is as lenient as Hudi's mapper
(unknown fields ignored, missing or null longs read as 0, an empty file is an empty metadata), except
that `operationType` must be a WriteOperationType name, as Jackson insists.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from operator import itemgetter
from typing import Any, TypeVar

import fastavro
from pydantic import BaseModel, JsonValue, ValidationError

from service.errors import CorruptTableError
from service.table.codecs import jackson_json
from service.table.codecs.avro_file import HUDI_RECORD_CONFIG, Int64, schema_json
from service.table.codecs.json_stream import JsonStream, JsonStreamError

NULL_COMMIT = "null"  # HoodieWriteStat.NULL_COMMIT: `prevCommit` of a new file group
SCHEMA_KEY = "schema"  # extraMetadata key holding the writer's Avro schema


class WriteOperationType(StrEnum):
    """Hudi's WriteOperationType; the JSON holds the enum name."""

    INSERT = "INSERT"
    INSERT_PREPPED = "INSERT_PREPPED"
    UPSERT = "UPSERT"
    UPSERT_PREPPED = "UPSERT_PREPPED"
    BULK_INSERT = "BULK_INSERT"
    BULK_INSERT_PREPPED = "BULK_INSERT_PREPPED"
    DELETE = "DELETE"
    DELETE_PREPPED = "DELETE_PREPPED"
    BOOTSTRAP = "BOOTSTRAP"
    INSERT_OVERWRITE = "INSERT_OVERWRITE"
    CLUSTER = "CLUSTER"
    DELETE_PARTITION = "DELETE_PARTITION"
    INSERT_OVERWRITE_TABLE = "INSERT_OVERWRITE_TABLE"
    COMPACT = "COMPACT"
    INDEX = "INDEX"
    ALTER_SCHEMA = "ALTER_SCHEMA"
    LOG_COMPACT = "LOG_COMPACT"
    UNKNOWN = "UNKNOWN"


class _JsonModel(BaseModel):
    model_config = HUDI_RECORD_CONFIG


class RuntimeStats(_JsonModel):
    """HoodieWriteStat.RuntimeStats, in milliseconds."""

    total_scan_time: Int64 = 0
    total_upsert_time: Int64 = 0
    total_create_time: Int64 = 0


class WriteStat(_JsonModel):
    """HoodieWriteStat, attributes in Jackson's output order.

    `other_fields` keeps fields of subclasses (HoodieDeltaWriteStat's `logVersion`, `logFiles`, ...)
    verbatim and in order; they are written after the base fields, where Jackson puts them.
    """

    file_id: str | None = None
    path: str | None = None  # relative to the table base path
    cdc_stats: Mapping[str, Int64 | None] | None = None
    prev_commit: str | None = NULL_COMMIT
    num_writes: Int64 = 0
    num_deletes: Int64 = 0
    num_update_writes: Int64 = 0
    num_inserts: Int64 = 0
    total_write_bytes: Int64 = 0
    total_write_errors: Int64 = 0
    temp_path: str | None = None
    partition_path: str | None = None
    total_log_records: Int64 = 0
    total_log_files_compacted: Int64 = 0
    total_log_size_compacted: Int64 = 0
    total_updated_records_compacted: Int64 = 0
    total_log_blocks: Int64 = 0
    total_corrupt_log_block: Int64 = 0
    total_rollback_blocks: Int64 = 0
    file_size_in_bytes: Int64 = 0
    min_event_time: Int64 | None = None
    max_event_time: Int64 | None = None
    runtime_stats: RuntimeStats | None = None
    other_fields: Mapping[str, JsonValue] = {}


class CommitMetadata(_JsonModel):
    """HoodieCommitMetadata. Partition keys are relative partition paths ("" when non-partitioned)."""

    partition_to_write_stats: Mapping[str, tuple[WriteStat, ...]] = {}
    compacted: bool = False
    extra_metadata: Mapping[str, str | None] = {}
    operation_type: WriteOperationType = WriteOperationType.UNKNOWN

    @property
    def write_stats(self) -> tuple[WriteStat, ...]:
        return tuple(stat for stats in self.partition_to_write_stats.values() for stat in stats)

    @property
    def table_schema(self) -> str | None:
        """The writer's Avro schema (extraMetadata "schema"), None when absent or empty."""
        return self.extra_metadata.get(SCHEMA_KEY) or None

    def written_file_groups(self) -> frozenset[tuple[str, str]]:
        """(partition, fileId) of every write stat."""
        stats = self.partition_to_write_stats
        return frozenset(_pairs((p, s.file_id) for p, in_partition in stats.items() for s in in_partition))

    def touched_file_groups(self) -> frozenset[tuple[str, str]]:
        """(partition, fileId) this commit wrote or replaced: what conflict detection compares."""
        return self.written_file_groups()


class ReplaceCommitMetadata(CommitMetadata):
    """HoodieReplaceCommitMetadata: a commit that also replaces whole file groups."""

    partition_to_replace_file_ids: Mapping[str, tuple[str, ...]] = {}

    def replaced_file_groups(self) -> frozenset[tuple[str, str]]:
        return frozenset(_pairs((p, f) for p, ids in self.partition_to_replace_file_ids.items() for f in ids))

    def touched_file_groups(self) -> frozenset[tuple[str, str]]:
        return self.written_file_groups() | self.replaced_file_groups()


M = TypeVar("M", bound=CommitMetadata)


def _pairs(items: Iterator[tuple[str, str | None]]) -> Iterator[tuple[str, str]]:
    return ((p, f) for p, f in items if f is not None)


# -- encode


def encode_commit(metadata: CommitMetadata, *, avro: bool = False) -> bytes:
    """UTF-8 JSON as `HoodieCommitMetadata.toJsonString()` writes it, or with `avro` the one-record
    Avro container layout 2 stores (`CommitMetadataSerDeV2.serialize`)."""
    if avro:
        return _encode_commit_avro(metadata)
    tree: dict[str, Any] = {
        "partitionToWriteStats": {
            partition: [_stat_tree(stat) for stat in stats]
            for partition, stats in metadata.partition_to_write_stats.items()
        },
        "compacted": metadata.compacted,
        "extraMetadata": dict(metadata.extra_metadata),
        "operationType": metadata.operation_type.value,
    }
    if isinstance(metadata, ReplaceCommitMetadata):
        replaced = metadata.partition_to_replace_file_ids
        tree["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in replaced.items()}
    return jackson_json.dumps_pretty(tree).encode("utf-8")


def _encode_commit_avro(metadata: CommitMetadata) -> bytes:
    """`CommitMetadataSerDeV2.serialize`: `HoodieCommitMetadata.toAvro` (every HoodieWriteStat field the
    Avro record has, taken by its JSON name; the rest null), one record, codec null. Replace metadata
    is `HoodieReplaceCommitMetadata` (the same fields and `partitionToReplaceFileIds`), the schema each
    file's header carries as Hudi 1.0.2 and 1.1.1 write it (both write the same)."""
    replace = isinstance(metadata, ReplaceCommitMetadata)
    name = "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"
    stat_fields = [f["name"] for f in _avro_stat_fields(name)]
    record = {
        "partitionToWriteStats": {
            partition: [_avro_stat(_stat_tree(stat), stat_fields) for stat in stats]
            for partition, stats in metadata.partition_to_write_stats.items()
        },
        "compacted": metadata.compacted,
        "extraMetadata": dict(metadata.extra_metadata),
        "version": None,  # Hudi 1.x leaves it unset (seen on its deltacommits and replacecommits)
        "operationType": metadata.operation_type.value,
    }
    if isinstance(metadata, ReplaceCommitMetadata):
        record["partitionToReplaceFileIds"] = {
            partition: list(file_ids)
            for partition, file_ids in metadata.partition_to_replace_file_ids.items()
        }
    buf = io.BytesIO()
    fastavro.writer(buf, _avro_commit_schema(name), [record], codec="null")
    return buf.getvalue()


def _avro_stat(tree: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    out = {name: tree.get(name) for name in fields}
    runtime = out.get("runtimeStats")
    if isinstance(runtime, dict):
        names = ("totalScanTime", "totalCreateTime", "totalUpsertTime")
        out["runtimeStats"] = {k: runtime.get(k) for k in names}
    return out


@cache
def _avro_commit_schema(name: str) -> Any:
    return fastavro.parse_schema(schema_json(name), named_schemas={})


@cache
def _avro_stat_fields(name: str) -> list[dict[str, Any]]:
    stats = schema_json(name)["fields"][0]["type"][1]["values"]["items"]
    fields: list[dict[str, Any]] = stats["fields"]
    return fields


def _stat_tree(stat: WriteStat) -> dict[str, Any]:
    tree = stat.model_dump(mode="json", exclude={"other_fields"})
    tree.update(stat.other_fields)
    return tree


# -- decode


_STAT_FIELDS = {
    info.serialization_alias: name for name, info in WriteStat.model_fields.items() if name != "other_fields"
}
_STAT_STRINGS = {"fileId", "path", "prevCommit", "tempPath", "partitionPath"}
_STAT_BOXED_LONGS = {"minEventTime", "maxEventTime"}


def decode_commit(model_type: type[M], data: bytes, source: str, *, avro: bool = False) -> M:
    """Parse commit metadata (JSON, or with `avro` layout 2's Avro container); an empty file gives an
    empty metadata, as in Java."""
    if not data:
        return model_type()
    reader = _Reader(source)
    obj = _parse_root(data, source, avro)
    written = reader.as_object(obj.get("partitionToWriteStats"), "partitionToWriteStats")
    fields: dict[str, Any] = {
        "partition_to_write_stats": {
            partition: tuple(reader.as_stat(s, partition) for s in reader.as_array(stats, partition))
            for partition, stats in written.items()
        },
        **_decode_commit_fields(reader, obj, issubclass(model_type, ReplaceCommitMetadata)),
    }
    try:
        return model_type(**fields)
    except ValidationError as e:
        raise CorruptTableError(f"{source}: invalid commit metadata: {e}") from e


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """What the timeline readers and the clean planner use of a commit's metadata, without its write
    stats: building 100,000 WriteStat models costs seconds where this costs the JSON parse. The daemon
    keeps one per completed commit of every table, so it holds no per-instance `__dict__`."""

    partitions_written: tuple[str, ...] = ()  # partitionToWriteStats keys, in file order
    partition_to_replace_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: Mapping[str, str | None] = field(default_factory=dict)
    operation_type: WriteOperationType = WriteOperationType.UNKNOWN

    @classmethod
    def of(cls, metadata: CommitMetadata) -> CommitSummary:
        replaced: Mapping[str, tuple[str, ...]] = {}
        if isinstance(metadata, ReplaceCommitMetadata):
            replaced = metadata.partition_to_replace_file_ids
        return cls(
            partitions_written=tuple(metadata.partition_to_write_stats),
            partition_to_replace_file_ids=dict(replaced),
            compacted=metadata.compacted,
            extra_metadata=dict(metadata.extra_metadata),
            operation_type=metadata.operation_type,
        )

    @property
    def table_schema(self) -> str | None:
        return self.extra_metadata.get(SCHEMA_KEY) or None

    def sharing(self, last: CommitSummary | None, partitions_written: tuple[str, ...]) -> CommitSummary:
        """This summary holding `partitions_written` (equal to its own) and `last`'s mappings where
        they are equal to its own: the daemon keeps a summary of every completed commit of every
        table, most of them alike but for their instant."""
        shared: dict[str, Any] = {}
        if partitions_written is not self.partitions_written:
            shared["partitions_written"] = partitions_written
        if last is not None:
            for name in ("partition_to_replace_file_ids", "extra_metadata"):
                ours, theirs = getattr(self, name), getattr(last, name)
                if ours is not theirs and ours == theirs:
                    shared[name] = theirs
        return dataclasses.replace(self, **shared) if shared else self

    def value_key(self) -> tuple[object, ...]:
        """The whole summary in a hashable form: equal summaries have equal keys."""
        return (
            self.partitions_written,
            tuple(sorted(self.partition_to_replace_file_ids.items())),
            self.compacted,
            tuple(sorted(self.extra_metadata.items(), key=lambda item: item[0])),
            self.operation_type,
        )

    def partitions(self) -> frozenset[str]:
        """Partitions written or replaced in."""
        return frozenset(self.partitions_written) | frozenset(self.partition_to_replace_file_ids)

    def replaced_file_groups(self) -> frozenset[tuple[str, str]]:
        ids = self.partition_to_replace_file_ids
        return frozenset((p, f) for p, in_partition in ids.items() for f in in_partition)


def decode_commit_summary(
    data: bytes | Iterable[bytes], source: str, replace: bool, *, avro: bool = False
) -> CommitSummary:
    """`CommitSummary.of(decode_commit(...))` without building write stats, from the file's bytes in
    chunks: every stat is checked as `decode_commit` checks it, so the same files fail, with the same
    error (an Avro file's stats are checked by their writer schema: see `_stats_projection`).

    `data`: the file's bytes, or its chunks as read. Memory stays that of one write stat, not of the
    file: JSON is read a stat at a time (`JsonStream`); an Avro file (compact: tens of bytes per stat)
    is read whole, its stats skipped."""
    parts = iter((data,) if isinstance(data, bytes) else data)
    first = next((chunk for chunk in parts if chunk), None)
    if first is None:
        return CommitSummary()  # an empty file is an empty metadata, as in Java
    reader = _Reader(source)
    rest = itertools.chain((first,), parts)
    if avro:
        obj = _parse_avro_root(b"".join(rest), source, stats=False)
    else:
        obj = _stream_json_root(rest, source, reader)
    written = reader.as_object(obj.get("partitionToWriteStats"), "partitionToWriteStats")
    for partition, stats in written.items():
        for stat in reader.as_array(stats, partition):
            _check_stat(reader, stat, partition)
    fields = _decode_commit_fields(reader, obj, replace)
    return CommitSummary(
        partitions_written=tuple(sys.intern(p) for p in written),
        partition_to_replace_file_ids=fields.get("partition_to_replace_file_ids", {}),
        compacted=fields["compacted"],
        extra_metadata=fields["extra_metadata"],
        operation_type=fields["operation_type"],
    )


def _check_stat(reader: _Reader, stat: object, partition: str) -> None:
    if not _plain_stat(stat):
        reader.as_stat(stat, partition)  # the full check: raises, or accepts a coercible value


def _stream_json_root(chunks: Iterator[bytes], source: str, reader: _Reader) -> dict[str, Any]:
    """The root object with every write stat checked as it is read and left out: each partition of
    `partitionToWriteStats` holds an empty array once its stats passed (values that are not arrays are
    kept, for the caller to refuse as `decode_commit` does)."""
    stream = JsonStream(chunks)
    try:
        if stream.peek() != "{":
            root = stream.value()  # not an object: refused below, as json.loads' result would be
            stream.end()
            return reader.as_object(root, "root")
        obj: dict[str, Any] = {}
        for key in stream.members():
            if key != "partitionToWriteStats" or stream.peek() != "{":
                obj[key] = stream.value()
                continue
            written: dict[str, Any] = {}
            for partition in stream.members():
                if stream.peek() != "[":
                    written[partition] = stream.value()
                    continue
                for _ in stream.elements():
                    _check_stat(reader, stream.value(), partition)
                written[partition] = []  # a repeated key: the last wins, where json.loads puts it
            obj[key] = written
        stream.end()
    except JsonStreamError as e:  # not JSON, or not UTF-8
        raise CorruptTableError(f"{source}: not JSON commit metadata: {e}") from e
    return obj


# `org.apache.hudi.avro.model` records layout 2 stores commit metadata as.
_AVRO_COMMIT_RECORDS = frozenset(
    {
        "org.apache.hudi.avro.model.HoodieCommitMetadata",
        "org.apache.hudi.avro.model.HoodieReplaceCommitMetadata",
    }
)


def _parse_root(data: bytes, source: str, avro: bool) -> dict[str, Any]:
    if avro:
        return _parse_avro_root(data, source)
    try:
        root = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptTableError(f"{source}: not JSON commit metadata: {e}") from e
    return _Reader(source).as_object(root, "root")


def _parse_avro_root(data: bytes, source: str, *, stats: bool = True) -> dict[str, Any]:
    """The one record of an Avro container file (`TimelineMetadataUtils.deserializeAvroMetadata`).
    Hudi 1.x throws on JSON here (`CommitMetadataSerDeV2`), and so do we, naming the file. Without
    `stats`, each write stat is read as an empty record when its writer schema lets no stat fail the
    check (`_stats_projection`): skipped, not built."""
    if not stats:
        projection = _stats_projection(data)
        if projection is not None:
            try:
                return _avro_record(data, source, projection)
            except CorruptTableError:
                pass  # the whole read below fails the file with the error `decode_commit` gives
    return _avro_record(data, source, None)


def _avro_record(data: bytes, source: str, reader_schema: dict[str, Any] | None) -> dict[str, Any]:
    try:
        reader = fastavro.reader(io.BytesIO(data), reader_schema=reader_schema)
        name = reader.writer_schema.get("name") if isinstance(reader.writer_schema, dict) else None
        records = list(reader)
    except Exception as e:  # fastavro raises many kinds (ValueError, EOFError, SchemaResolutionError, ...)
        raise CorruptTableError(
            f"{source}: not an Avro commit metadata file (timeline layout 2 stores commit metadata as "
            f"Avro; Hudi 1.x refuses JSON here): {e}"
        ) from e
    if name not in _AVRO_COMMIT_RECORDS:
        raise CorruptTableError(f"{source}: Avro record {name!r} is not Hudi's commit metadata")
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CorruptTableError(
            f"{source}: an Avro commit metadata file holds one record, found {len(records)}"
        )
    return records[0]


# Avro types whose values `_Reader` takes as they are: a long field's, a string field's.
_AVRO_LONGS = frozenset({"null", "int", "long"})
_AVRO_STRINGS = _AVRO_LONGS | {"string", "boolean"}


def _stats_projection(data: bytes) -> dict[str, Any] | None:
    """The file's writer schema with `HoodieWriteStat` holding no field, when every field the check
    reads has a type whose every value passes it (`_plain_stat`: strings as strings, longs as 64-bit
    ints, the nested objects' longs too; a logical type would decode to something else): then no stat
    of the file can fail, and fastavro skips each stat's bytes instead of building a dict of 30 fields.
    None for any other schema (the stats are then built and checked one by one). Stat strings are not
    decoded when skipped: bytes that are not UTF-8 pass, as Java's Avro decoder (which replaces them)
    reads them."""
    try:
        header = fastavro.block_reader(io.BytesIO(data)).metadata
        writer = json.loads(header["avro.schema"])
        projection = copy.deepcopy(writer)
        stat = _stat_record(projection)
    except Exception:  # not a container, no schema, another shape: the whole read says what is wrong
        return None
    if stat is None or not all(_plain_stat_field(f) for f in stat.get("fields", ())):
        return None
    stat["fields"] = []
    return projection


def _stat_record(root: dict[str, Any]) -> dict[str, Any] | None:
    """The write stat record of `partitionToWriteStats: union{null, map<array<record>>}`."""
    field_types = {f["name"]: f["type"] for f in root["fields"]}
    for branch in _branches(field_types.get("partitionToWriteStats")):
        if isinstance(branch, dict) and branch.get("type") == "map":
            values = branch["values"]
            if isinstance(values, dict) and values.get("type") == "array":
                items = values["items"]
                if isinstance(items, dict) and items.get("type") == "record":
                    return items
    return None


def _branches(avro_type: Any) -> list[Any]:
    return avro_type if isinstance(avro_type, list) else [avro_type]


def _primitive(branch: Any) -> str | None:
    """A type's name (`"long"` or `{"type": "long"}`), None for a logical type or a union."""
    if isinstance(branch, str):
        return branch
    if isinstance(branch, dict) and "logicalType" not in branch and isinstance(branch.get("type"), str):
        kind: str = branch["type"]
        return kind
    return None


def _plain_stat_field(avro_field: dict[str, Any]) -> bool:
    key = avro_field["name"]
    branches = _branches(avro_field["type"])
    if key not in _STAT_FIELDS:
        return True  # kept verbatim in other_fields
    if key in _STAT_STRINGS:
        return all(_primitive(b) in _AVRO_STRINGS for b in branches)
    if key == "cdcStats":
        return all(
            _primitive(b) == "null"
            or (isinstance(b, dict) and b.get("type") == "map" and _longs(b["values"]))
            for b in branches
        )
    if key == "runtimeStats":
        return all(
            _primitive(b) == "null"
            or (
                isinstance(b, dict)
                and b.get("type") == "record"
                and all(_longs(f["type"]) for f in b["fields"] if f["name"] in _RUNTIME_STAT_NAMES)
            )
            for b in branches
        )
    return _longs(avro_field["type"])


def _longs(avro_type: Any) -> bool:
    return all(_primitive(b) in _AVRO_LONGS for b in _branches(avro_type))


def _shared(value: str | None) -> str | None:
    """`sys.intern` of an `extraMetadata` value that may be null: one copy per process of what every
    commit repeats, the table's schema above all (kilobytes, in every commit Hudi's writers complete;
    keys and partition paths are interned where they are read). The daemon caches a summary of each
    completed commit of each table; without this, a thousand idle tables held a copy of their schema
    per commit."""
    return None if value is None else sys.intern(value)


def _decode_commit_fields(reader: _Reader, obj: dict[str, Any], replace: bool) -> dict[str, Any]:
    """Everything but the write stats, checked in `decode_commit`'s order."""
    fields: dict[str, Any] = {
        "compacted": reader.as_boolean(obj.get("compacted"), "compacted"),
        "extra_metadata": {
            sys.intern(k): _shared(reader.as_string(v, f"extraMetadata.{k}"))
            for k, v in reader.as_object(obj.get("extraMetadata"), "extraMetadata").items()
        },
        "operation_type": reader.as_operation_type(obj.get("operationType")),
    }
    if replace:
        replaced = reader.as_object(obj.get("partitionToReplaceFileIds"), "partitionToReplaceFileIds")
        fields["partition_to_replace_file_ids"] = {
            p: tuple(reader.as_file_id(f, p) for f in reader.as_array(ids, p)) for p, ids in replaced.items()
        }
    return fields


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# JSON name -> attribute, resolved once (RuntimeStats.model_fields is rebuilt on every access).
_RUNTIME_STAT_NAMES = {info.serialization_alias: name for name, info in RuntimeStats.model_fields.items()}


class _Reader:
    """Jackson-like lenient conversions; every failure names the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, value: object, expected: str) -> CorruptTableError:
        return CorruptTableError(f"{self.source}: {where} should be {expected}, found {value!r:.100}")

    def as_object(self, value: object, where: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(where, value, "an object")
        return value

    def as_array(self, value: object, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, value, "an array")
        return value

    def as_string(self, value: object, where: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, bool | int):
            return json.dumps(value)  # Jackson coerces scalars to text
        raise self.fail(where, value, "a string")

    def as_file_id(self, value: object, partition: str) -> str:
        if isinstance(value, str):
            return value
        raise self.fail(f"partitionToReplaceFileIds.{partition}", value, "a file id string")

    def as_boolean(self, value: object, where: str) -> bool:
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        raise self.fail(where, value, "a boolean")

    def as_long(self, value: object, where: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool):
            raise self.fail(where, value, "a number")
        if isinstance(value, int):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            number = int(value)  # Jackson coerces numeric strings
        else:
            raise self.fail(where, value, "a number")
        if not _LONG_MIN <= number <= _LONG_MAX:
            raise self.fail(where, value, "a 64-bit long")
        return number

    def as_operation_type(self, value: object) -> WriteOperationType:
        if value is None:
            return WriteOperationType.UNKNOWN
        if isinstance(value, str) and value in WriteOperationType.__members__:
            return WriteOperationType[value]
        raise self.fail("operationType", value, "a WriteOperationType name")

    def as_stat(self, value: object, partition: str) -> WriteStat:
        where = f"partitionToWriteStats.{partition}"
        raw = self.as_object(value, where)
        fields: dict[str, Any] = {"prev_commit": None}
        other: dict[str, Any] = {}
        for key, item in raw.items():
            name = _STAT_FIELDS.get(key)
            if name is None:
                other[key] = item
            elif key in _STAT_STRINGS:
                fields[name] = self.as_string(item, f"{where}.{key}")
            elif key in _STAT_BOXED_LONGS:
                fields[name] = self.as_long(item, f"{where}.{key}")
            elif key == "cdcStats":
                cdc = self.as_object(item, f"{where}.{key}")
                fields[name] = (
                    None
                    if item is None
                    else {k: self.as_long(v, f"{where}.{key}.{k}") for k, v in cdc.items()}
                )
            elif key == "runtimeStats":
                fields[name] = None if item is None else self.as_runtime_stats(item, f"{where}.{key}")
            else:
                fields[name] = self.as_long(item, f"{where}.{key}") or 0
        # Every field was checked and coerced above; pydantic validating it all again cost ~20 us
        # per stat, which dominated cold planning over large timelines.
        return WriteStat.model_construct(**fields, other_fields=other)

    def as_runtime_stats(self, value: object, where: str) -> RuntimeStats:
        raw = self.as_object(value, where)
        names = _RUNTIME_STAT_NAMES
        values: dict[str, Any] = {
            names[k]: self.as_long(v, f"{where}.{k}") or 0 for k, v in raw.items() if k in names
        }
        return RuntimeStats.model_construct(**values)


# -- the write stat check of `decode_commit_summary`
#
# A stat is "plain" when `_Reader.as_stat` would accept it without coercing anything: strings are
# strings (or null, or scalars Jackson turns into text), longs are 64-bit ints or null, nested objects
# hold such longs. Rather than checking 23 fields one by one in Python for each of 100,000 stats, the
# verdict is computed once per shape (the stat's keys and value types, built at C speed) and what stays
# per stat (about 1.5 us) is the range check of its ints and the few values of nested objects. Anything else
# goes through `as_stat` itself, so no stat is accepted here that `decode_commit` would reject.

_NONE_TYPE = type(None)
_STRING_TYPES = frozenset({str, _NONE_TYPE, bool, int})
_NESTED_LONGS = {"cdcStats", "runtimeStats"}


@dataclass(frozen=True)
class _StatShape:
    ints: Callable[[dict[str, Any]], tuple[Any, ...]] | None  # the int values to range-check
    nested: tuple[str, ...]  # keys of nested objects of longs


_SHAPE_CACHE_LIMIT = 1024
_shapes: dict[tuple[tuple[str, ...], tuple[type, ...]], _StatShape | None] = {}


def _plain_stat(stat: object) -> bool:
    if type(stat) is not dict:
        return False
    shape = _shape((tuple(stat), tuple(map(type, stat.values()))))
    if shape is None:
        return False
    if shape.ints is not None:
        ints = shape.ints(stat)
        if min(ints) < _LONG_MIN or max(ints) > _LONG_MAX:
            return False
    return _plain_nested(stat, shape)


def _plain_nested(stat: dict[str, Any], shape: _StatShape) -> bool:
    for name in shape.nested:
        nested: dict[str, Any] = stat[name]
        values = nested.values() if name == "cdcStats" else _known_runtime_stats(nested)
        if not _plain_longs(values):
            return False
    return True


def _shape(signature: tuple[tuple[str, ...], tuple[type, ...]]) -> _StatShape | None:
    try:
        return _shapes[signature]
    except KeyError:
        shape = _shape_of(*signature)
        if len(_shapes) >= _SHAPE_CACHE_LIMIT:
            _shapes.clear()
        _shapes[signature] = shape
        return shape


def _shape_of(keys: tuple[str, ...], types: tuple[type, ...]) -> _StatShape | None:
    ints: list[str] = []
    nested: list[str] = []
    for key, kind in zip(keys, types, strict=True):
        if key not in _STAT_FIELDS:
            continue  # kept verbatim in other_fields
        if key in _STAT_STRINGS:
            if kind not in _STRING_TYPES:
                return None
        elif key in _NESTED_LONGS:
            if kind is dict:
                nested.append(key)
            elif kind is not _NONE_TYPE:
                return None
        elif kind is int:
            ints.append(key)
        elif kind is not _NONE_TYPE:
            return None
    # itemgetter of one key returns the bare value: ask for it twice to always get a tuple
    getter = itemgetter(*ints) if len(ints) > 1 else itemgetter(ints[0], ints[0]) if ints else None
    return _StatShape(getter, tuple(nested))


def _known_runtime_stats(raw: dict[str, Any]) -> Iterator[Any]:
    return (v for k, v in raw.items() if k in _RUNTIME_STAT_NAMES)


def _plain_longs(values: Iterable[Any]) -> bool:
    return all(v is None or (type(v) is int and _LONG_MIN <= v <= _LONG_MAX) for v in values)
