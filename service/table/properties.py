"""`.hoodie/hoodie.properties`: the table config, read and written as Hudi's HoodieTableConfig does."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum, auto

from service.config import java_properties
from service.config.hoodie import TimelineTimezone
from service.config.values import JavaEnum
from service.errors import (
    CorruptTableError,
    NotAHudiTableError,
    TableServicesRefusedError,
    UnsupportedTableError,
)
from service.table.storage import Storage

PROPERTIES_FILE = ".hoodie/hoodie.properties"
PROPERTIES_BACKUP = ".hoodie/hoodie.properties.backup"

# `hoodie.table.keygenerator.type` (Hudi 1.0's `KeyGeneratorType`) -> the class it stands for; 1.x
# tables record the type, not the class (`HoodieTableConfig.getKeyGeneratorClassName`).
_KEYGEN_PACKAGE = "org.apache.hudi.keygen."
_KEY_GENERATOR_TYPES = {
    "SIMPLE": "SimpleKeyGenerator",
    "SIMPLE_AVRO": "SimpleAvroKeyGenerator",
    "COMPLEX": "ComplexKeyGenerator",
    "COMPLEX_AVRO": "ComplexAvroKeyGenerator",
    "TIMESTAMP": "TimestampBasedKeyGenerator",
    "TIMESTAMP_AVRO": "TimestampBasedAvroKeyGenerator",
    "CUSTOM": "CustomKeyGenerator",
    "CUSTOM_AVRO": "CustomAvroKeyGenerator",
    "NON_PARTITION": "NonpartitionedKeyGenerator",
    "NON_PARTITION_AVRO": "NonpartitionedAvroKeyGenerator",
    "GLOBAL_DELETE": "GlobalDeleteKeyGenerator",
    "GLOBAL_DELETE_AVRO": "GlobalAvroDeleteKeyGenerator",
    "AUTO_RECORD": "AutoRecordGenKeyGenerator",
}
# `hoodie.table.format` (Hudi 1.1's pluggable table format): only Hudi's own is read.
NATIVE_TABLE_FORMAT = "native"
# `hoodie.record.merge.mode` values (Hudi 1.0's `RecordMergeMode`); Hudi cannot load a table with another.
_MERGE_MODES = ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM")
# Base file formats whose files the service reads and writes (`HoodieFileFormat`).
_SERVED_BASE_FILE_FORMATS = ("PARQUET", "HFILE", "ORC")


# MetadataPartitionType partition paths the service writes (service/table/mdt/commit.py).


class TableServiceKind(StrEnum):
    """The table services `TableConfig.check_service_supported` decides for."""

    CLUSTERING = "clustering"
    CLEANING = "cleaning"
    COMPACTION = "compaction"
    ARCHIVAL = "archival"


class TableType(JavaEnum):
    """`hoodie.table.type`: Hudi's `HoodieTableType` constant names."""

    COPY_ON_WRITE = auto()
    MERGE_ON_READ = auto()


def table_checksum(database_name: str, table_name: str) -> int:
    """Hudi's checksum: CRC32 of `"<database>.<table>"` (UTF-8), as an unsigned decimal."""
    return zlib.crc32(f"{database_name}.{table_name}".encode())


def _folder_inside(value: str, *, allow_empty: bool = False) -> str:
    """`value` if it names a folder inside the one it is relative to (ValueError otherwise): no
    absolute path, scheme, `.`/`..` or empty segment."""
    if value == "" and allow_empty:
        return value
    segments = value.split("/")
    if value.startswith("/") or "\\" in value or ":" in value or any(s in ("", ".", "..") for s in segments):
        raise ValueError(f"{value!r} is not a folder inside the table's .hoodie")
    return value


@dataclass(frozen=True)
class TableConfig:
    """Typed view over `hoodie.properties`; `raw` keeps every key for round-tripping."""

    raw: Mapping[str, str] = field(repr=False)

    # -- required / identity
    @property
    def name(self) -> str:
        return self.raw["hoodie.table.name"]

    @property
    def database_name(self) -> str:
        return self.raw.get("hoodie.database.name", "")

    @property
    def table_type(self) -> TableType:
        return TableType(self.raw.get("hoodie.table.type", "COPY_ON_WRITE"))

    @property
    def version(self) -> int:
        return int(self.raw.get("hoodie.table.version", "0"))

    @property
    def timeline_layout_version(self) -> int:
        return int(self.raw.get("hoodie.timeline.layout.version", "1"))

    @property
    def timeline_timezone(self) -> TimelineTimezone:
        return TimelineTimezone(self.raw.get("hoodie.table.timeline.timezone", "LOCAL").upper())

    # -- keys and partitioning
    @property
    def record_key_fields(self) -> list[str]:
        return _split(self.raw.get("hoodie.table.recordkey.fields"))

    @property
    def partition_fields(self) -> list[str]:
        """Partition field names; 1.x writes the custom key generator's as `field:TYPE`, whose type
        is cut off as `BaseKeyGenerator.CUSTOM_KEY_GENERATOR_SPLIT_REGEX` does."""
        return [f.split(":", 1)[0] for f in _split(self.raw.get("hoodie.table.partition.fields"))]

    @property
    def precombine_field(self) -> str | None:
        """The first ordering field: `hoodie.table.ordering.fields` (Hudi 1.1, which drops
        `hoodie.table.precombine.field` on upgrade), else `hoodie.table.precombine.field`."""
        fields = self.ordering_fields
        return fields[0] if fields else None

    @property
    def ordering_fields(self) -> list[str]:
        """`HoodieTableConfig.getOrderingFields`: `ordering.fields`, falling back to `precombine.field`."""
        return _split(
            self.raw.get("hoodie.table.ordering.fields") or self.raw.get("hoodie.table.precombine.field")
        )

    @property
    def hive_style_partitioning(self) -> bool:
        return self.raw.get("hoodie.datasource.write.hive_style_partitioning", "false").lower() == "true"

    @property
    def base_file_extension(self) -> str:
        return "." + self.base_file_format.lower()

    @property
    def key_generator_class(self) -> str | None:
        """`hoodie.table.keygenerator.class`, else the class `hoodie.table.keygenerator.type` names
        (1.x tables record only the type); None when the table records neither."""
        name = self.raw.get("hoodie.table.keygenerator.class")
        if name:
            return name
        kind = (self.raw.get("hoodie.table.keygenerator.type") or "").strip().upper()
        if not kind:
            return None
        simple = _KEY_GENERATOR_TYPES.get(kind)
        # An unknown type keeps its name, so the key generator's refusal names what the table says.
        return _KEYGEN_PACKAGE + simple if simple is not None else f"hoodie.table.keygenerator.type={kind}"

    @property
    def populate_meta_fields(self) -> bool:
        return self.raw.get("hoodie.populate.meta.fields", "true").lower() == "true"

    @property
    def metadata_partitions(self) -> list[str]:
        return _split(self.raw.get("hoodie.table.metadata.partitions"))

    @property
    def metadata_partitions_inflight(self) -> list[str]:
        return _split(self.raw.get("hoodie.table.metadata.partitions.inflight"))

    @property
    def archive_folder(self) -> str:
        """`hoodie.archivelog.folder`: where layout 1 archives, under `.hoodie` ("": `.hoodie` itself)."""
        return _folder_inside(self.raw.get("hoodie.archivelog.folder", "archived"), allow_empty=True)

    @property
    def timeline_path(self) -> str:
        """`hoodie.timeline.path` (layout 2): the timeline folder under `.hoodie`."""
        return _folder_inside(self.raw.get("hoodie.timeline.path") or "timeline")

    @property
    def index_definitions_path(self) -> str | None:
        """`hoodie.table.index.defs.path` (1.x): the index definition file (`.hoodie/.index_defs/`)."""
        return self.raw.get("hoodie.table.index.defs.path") or None

    @property
    def timeline_history_path(self) -> str:
        """`hoodie.timeline.history.path` (layout 2): the archived (LSM) timeline, in the timeline folder."""
        return _folder_inside(self.raw.get("hoodie.timeline.history.path") or "history")

    @property
    def table_format(self) -> str:
        return self.raw.get("hoodie.table.format") or NATIVE_TABLE_FORMAT

    @property
    def base_file_format(self) -> str:
        return self.raw.get("hoodie.table.base.file.format", "PARQUET").upper()

    @property
    def checksum_valid(self) -> bool:
        try:
            stored = int(self.raw["hoodie.table.checksum"])
        except (KeyError, ValueError):
            return False
        return stored == table_checksum(self.database_name, self.name)

    # -- load / store
    @classmethod
    def from_text(cls, text: str, source: str) -> TableConfig:
        raw = java_properties.loads(text)
        if "hoodie.table.name" not in raw:
            raise CorruptTableError(f"{source}: missing required key hoodie.table.name")
        config = cls(raw)
        # The typed keys are parsed here, where the file is known, not at first use.
        for key, parse in (
            ("hoodie.table.version", lambda c: c.version),
            ("hoodie.timeline.layout.version", lambda c: c.timeline_layout_version),
            ("hoodie.table.type", lambda c: c.table_type),
            ("hoodie.table.timeline.timezone", lambda c: c.timeline_timezone),
            # Folders the service lists, reads and writes instants in: inside `.hoodie`, or a stored
            # value could send its writes (archived instants, plans) anywhere.
            ("hoodie.timeline.path", lambda c: c.timeline_path),
            ("hoodie.timeline.history.path", lambda c: c.timeline_history_path),
            ("hoodie.archivelog.folder", lambda c: c.archive_folder),
        ):
            try:
                parse(config)
            except ValueError:
                raise CorruptTableError(
                    f"{source}: {key}={raw.get(key)!r} is not a value Hudi writes"
                ) from None
        return config

    def to_text(self, now: datetime | None = None) -> str:
        props = dict(self.raw)
        props["hoodie.table.checksum"] = str(table_checksum(self.database_name, self.name))
        return java_properties.dumps(props, comment=f"Updated at {(now or _utcnow()).isoformat()}", now=now)

    def with_updates(self, updates: Mapping[str, str | None]) -> TableConfig:
        raw = dict(self.raw)
        for key, value in updates.items():
            if value is None:
                raw.pop(key, None)
            else:
                raw[key] = value
        return TableConfig(raw)

    def check_readable(self, base_uri: str) -> None:
        """Refuse tables whose files the service cannot read at all (the version is
        `TableFormat.for_table`'s to check)."""
        if self.table_format != NATIVE_TABLE_FORMAT:
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri}: {PROPERTIES_FILE} has hoodie.table.format="
                f"{self.table_format}: only Hudi's own format ({NATIVE_TABLE_FORMAT}) is read, not a "
                "pluggable table format"
            )
        mode = self.raw.get("hoodie.record.merge.mode")
        if mode is not None and mode.strip().upper() not in _MERGE_MODES:
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri}: {PROPERTIES_FILE} has hoodie.record.merge.mode={mode}, "
                f"which is none of Hudi's merge modes ({', '.join(_MERGE_MODES)})"
            )
        if self.base_file_format not in _SERVED_BASE_FILE_FORMATS:
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri}: {PROPERTIES_FILE} has hoodie.table.base.file.format="
                f"{self.base_file_format}; the service reads "
                f"{', '.join(_SERVED_BASE_FILE_FORMATS)} base files only"
            )

    def check_supported(self, base_uri: str, synced_partitions: Sequence[str]) -> None:
        """Refuse tables the product must not touch, with the reason and the way out.
        `synced_partitions`: the MDT partitions the service keeps in sync on the table's version
        (`TableFormat.mdt.partitions`)."""
        self.check_readable(base_uri)
        if self.metadata_partitions_inflight:
            parts = ",".join(self.metadata_partitions_inflight)
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has metadata table partitions still initialising "
                f"({PROPERTIES_FILE}: hoodie.table.metadata.partitions.inflight={parts}): an async "
                "indexer or a writer is building them. Retry once a Hudi writer has finished them (the "
                "key is empty again)."
            )
        # Other partitions need records the service does not produce (service/table/mdt/commit.py).
        others = [p for p in self.metadata_partitions if p not in synced_partitions]
        if others:
            listed = ",".join(self.metadata_partitions)
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has the metadata table partition(s) {','.join(others)} "
                f"({PROPERTIES_FILE}: hoodie.table.metadata.partitions={listed}); this service keeps "
                f"only {', '.join(synced_partitions)} in sync, so its clustering or clean would "
                f"leave {','.join(others)} stale. Drop them: `DROP INDEX` for an expression index, or run "
                "a Hudi writer once with that index disabled (HoodieTable.deleteMetadataIndexIfNecessary "
                "deletes a disabled index's partition), or disable the metadata table with "
                "hoodie.metadata.enable=false."
            )

    def table_type_source(self) -> str:
        """Where the table type comes from, for a refusal: a damaged key reads as the default."""
        if "hoodie.table.type" in self.raw:
            return f"hoodie.table.type in {PROPERTIES_FILE}"
        return f"{PROPERTIES_FILE} sets no hoodie.table.type, and Hudi's default is COPY_ON_WRITE"

    def check_service_supported(self, service: TableServiceKind, base_uri: str) -> None:
        """Refuse a table service on a table whose layout it does not handle (`status` reads every
        table). Compaction serves merge-on-read tables only (copy-on-write has no log files).
        Clustering serves both table types (on merge-on-read the table's merge rules decide too:
        `service.table.table.refuse_unreproduced_merge`). Cleaning deletes whole file slices and
        reads no records, so it serves every table.
        """
        if service is TableServiceKind.COMPACTION and self.table_type is not TableType.MERGE_ON_READ:
            # Java refuses too: `ScheduleCompactionActionExecutor.execute` checks the table type.
            raise TableServicesRefusedError(
                f"table {self.name!r} at {base_uri} is {self.table_type.value} "
                f"({self.table_type_source()}): compaction merges log files into base files, "
                "and only MERGE_ON_READ tables have them",
                reason="table_type",
            )


def load_table_config(storage: Storage) -> TableConfig:
    """Read `hoodie.properties` (falling back to the backup, as Java does) and verify its checksum."""
    for rel in (PROPERTIES_FILE, PROPERTIES_BACKUP):
        try:
            data = storage.read_bytes(rel)
        except FileNotFoundError:
            continue
        try:
            text = data.decode("latin-1")
        except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes every byte
            raise CorruptTableError(f"{storage.qualify(rel)}: not a properties file") from exc
        config = TableConfig.from_text(text, storage.qualify(rel))
        if not config.checksum_valid:
            raise CorruptTableError(
                f"{storage.qualify(rel)}: hoodie.table.checksum does not match "
                f"{config.database_name}.{config.name} (expected "
                f"{table_checksum(config.database_name, config.name)}); Hudi would refuse this table too"
            )
        return config
    raise NotAHudiTableError(f"{storage.base_uri} is not a Hudi table: no {PROPERTIES_FILE}")


def store_table_config(storage: Storage, config: TableConfig) -> None:
    """Update protocol of HoodieTableConfig.modify: backup, delete, write, verify, drop backup."""
    if not storage.exists(PROPERTIES_FILE) and storage.exists(PROPERTIES_BACKUP):
        storage.write_bytes(PROPERTIES_FILE, storage.read_bytes(PROPERTIES_BACKUP))
    current = storage.read_bytes(PROPERTIES_FILE) if storage.exists(PROPERTIES_FILE) else None
    if current is not None:
        storage.write_bytes(PROPERTIES_BACKUP, current)
        storage.delete_file(PROPERTIES_FILE)
    storage.write_bytes(PROPERTIES_FILE, config.to_text().encode("latin-1"))
    load_table_config(storage)
    storage.delete_file(PROPERTIES_BACKUP)


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _utcnow() -> datetime:
    return datetime.now(UTC)
