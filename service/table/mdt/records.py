"""`HoodieMetadataRecord`s of the MDT `files` partition: decode, and merge as `HoodieMetadataPayload` does.

Values in HFiles (base files and log data blocks) are Avro binary records in the writer schema
Hudi stores beside them (the log block's SCHEMA header, the HFile's `schema` file-info entry): our
`schemas/HoodieMetadataRecord.avsc` with the five `_hoodie_*` meta fields prepended. We read them
with fastavro against our schema as reader schema, which drops the meta fields. Hudi blanks the `key`
field in HFile values (`HoodieHFileDataBlock` / `HoodieAvroHFileWriter` truncate it) and restores
it from the cell's row key (`HoodieAvroHFileReader`); so do we.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import fastavro

from service.errors import CorruptTableError
from service.table.codecs.avro_file import schema_json, schema_text

RECORD_TYPE_PARTITION_LIST = 1  # HoodieMetadataPayload.METADATA_TYPE_PARTITION_LIST
RECORD_TYPE_FILE_LIST = 2  # HoodieMetadataPayload.METADATA_TYPE_FILE_LIST
ALL_PARTITIONS_KEY = "__all_partitions__"  # HoodieTableMetadata.RECORDKEY_PARTITION_LIST
NON_PARTITIONED_NAME = "."  # HoodieTableMetadata.NON_PARTITIONED_NAME: the key of partition ""


@dataclass(frozen=True)
class FileInfo:
    """HoodieMetadataFileInfo: a file's size (0 for partitions and tombstones) and its deletion flag."""

    size: int
    is_deleted: bool


@dataclass(frozen=True)
class FilesRecord:
    """A type-1 (partition list) or type-2 (files of one partition) record."""

    key: str
    type: int
    entries: Mapping[str, FileInfo]

    def merged_with(self, newer: FilesRecord, source: str) -> FilesRecord:
        """`newer.preCombine(self)`: HoodieMetadataPayload.combineFileSystemMetadata.

        A newer tombstone removes an older live entry (and is dropped); a tombstone meeting a
        tombstone, or nothing, is kept (the base file may still hold the entry: merging runs over
        the logs first, then against the base file). A newer live entry wins with the larger size.
        """
        if newer.type != self.type:
            raise CorruptTableError(
                f"{source}: MDT record {self.key!r} changes type from {self.type} to {newer.type}"
            )
        combined = dict(self.entries)
        for name, info in newer.entries.items():
            old = combined.get(name)
            if old is None:
                combined[name] = info
            elif info.is_deleted:
                if old.is_deleted:
                    combined[name] = info
                else:
                    del combined[name]
            else:
                combined[name] = FileInfo(max(info.size, old.size), False)
        return FilesRecord(self.key, self.type, combined)

    def live(self) -> dict[str, int]:
        """What `HoodieMetadataPayload.getFileList` / `getFilenames` return: the non-deleted entries."""
        return {name: info.size for name, info in self.entries.items() if not info.is_deleted}


@cache
def reader_schema() -> Any:
    """The newest `HoodieMetadataRecord` (Hudi 1.1's) without meta fields: it reads 0.15's, 1.0's and
    1.1's records alike, a field the writer's schema lacks taking its default (`isTightBound` false,
    `valueType` null)."""
    newest = schema_json("HoodieMetadataRecordWithMetaFields-1.1")
    fields = [f for f in newest["fields"] if not str(f["name"]).startswith("_hoodie_")]
    return fastavro.parse_schema({**newest, "fields": fields}, named_schemas={})


@lru_cache(maxsize=16)
def parsed_writer_schema(text: str) -> Any:
    return fastavro.parse_schema(json.loads(text), named_schemas={})


def read_metadata_record(
    row_key: str, value: bytes, writer_schema: str, where: str, *, record_names: bool = False
) -> dict[str, Any]:
    """The HoodieMetadataRecord of one log-block or HFile entry, checked to carry `row_key`
    (a record without a key takes the entry's); CorruptTableError starts with `where`.
    `record_names`: union branches of records come as (name, value), to tell wrappers apart."""
    try:
        record = fastavro.schemaless_reader(
            io.BytesIO(value),
            parsed_writer_schema(writer_schema),
            reader_schema(),
            return_record_name=record_names,
        )
    except Exception as e:  # fastavro raises many kinds (ValueError, EOFError, SchemaResolutionError, ...)
        raise CorruptTableError(f"{where}: not a readable HoodieMetadataRecord: {e}") from e
    if not isinstance(record, dict):
        raise CorruptTableError(f"{where}: not a HoodieMetadataRecord")
    key = record.get("key") or row_key
    if key != row_key:
        raise CorruptTableError(f"{where}: record says key {key!r}")
    return record


def decode_files_record(row_key: str, value: bytes, writer_schema: str, source: str) -> FilesRecord:
    """One record of the `files` partition; raises CorruptTableError naming `source` and the key."""
    where = f"{source}: MDT record {row_key!r}"
    record = read_metadata_record(row_key, value, writer_schema, where)
    key = row_key  # read_metadata_record checked the record agrees
    kind = record.get("type")
    if kind not in (RECORD_TYPE_PARTITION_LIST, RECORD_TYPE_FILE_LIST):
        raise CorruptTableError(f"{where}: type {kind} does not belong in the files partition")
    if (kind == RECORD_TYPE_PARTITION_LIST) != (key == ALL_PARTITIONS_KEY):
        raise CorruptTableError(f"{where}: type {kind} with this key")
    entries: dict[str, FileInfo] = {}
    for name, info in (record.get("filesystemMetadata") or {}).items():
        size, deleted = int(info["size"]), bool(info["isDeleted"])
        # HoodieMetadataPayload.validatePayload: a live file entry must have a positive size.
        if kind == RECORD_TYPE_FILE_LIST and not deleted and size <= 0:
            raise CorruptTableError(f"{where}: file {name!r} listed with size {size}")
        entries[name] = FileInfo(size, deleted)
    return FilesRecord(key, kind, entries)


ON_DISK_SCHEMA = "HoodieMetadataRecordWithMetaFields"
_META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@cache
def log_block_schema_text(schema_name: str = ON_DISK_SCHEMA) -> str:
    """The SCHEMA header and HFile `schema` entry of MDT log blocks, exactly as the table's Hudi writes
    it: `HoodieAvroUtils.addMetadataFields(HoodieMetadataRecord.getClassSchema()).toString()`
    (`HoodieAppendHandle` puts the schema with meta fields in every block header). `schema_name` is
    the version's (`MdtFormat.record_schema`): 0.15.0's by default, 1.0.2's and 1.1.1's beside it."""
    return schema_text(schema_name).strip()


@cache
def commit_schema_text(schema_name: str = ON_DISK_SCHEMA) -> str:
    """`HoodieMetadataRecord.getClassSchema().toString()`: the MDT write config's schema, which the
    MDT deltacommit's extraMetadata `schema` carries (HoodieMetadataWriteUtils.createMetadataWriteConfig)."""
    schema = json.loads(log_block_schema_text(schema_name))
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in _META_FIELDS]
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def encode_files_record(record: FilesRecord, schema_name: str = ON_DISK_SCHEMA) -> bytes:
    """The Avro value of one `files` record in an HFile cell: meta fields null (the MDT does not populate
    them), `key` blanked as `HoodieAvroHFileWriter`/`HoodieHFileDataBlock` truncate it (the cell's row
    carries it). Fields of newer schemas (1.x's secondary index) are null, their default."""
    value = {
        **{name: None for name in _META_FIELDS},
        "key": "",
        "type": record.type,
        "filesystemMetadata": {
            name: {"size": info.size, "isDeleted": info.is_deleted} for name, info in record.entries.items()
        },
        "BloomFilterMetadata": None,
        "ColumnStatsMetadata": None,
        "recordIndexMetadata": None,
    }
    return encode_metadata_record(value, schema_name)


def encode_metadata_record(value: dict[str, Any], schema_name: str) -> bytes:
    """Avro binary of one HoodieMetadataRecord in the version's block schema; fields `value` leaves
    out (those newer schemas added, all nullable) are written null."""
    schema = parsed_writer_schema(log_block_schema_text(schema_name))
    full = {f["name"]: value.get(f["name"]) for f in schema["fields"]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, full)
    return out.getvalue()


def partition_of_key(key: str) -> str:
    """The data table's relative partition path of an MDT partition key (`.` is the table root)."""
    return "" if key == NON_PARTITIONED_NAME else key
