"""`.hoodie/hoodie.properties`: the table config, read and written as Hudi's HoodieTableConfig does."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
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
    UnsupportedMergeError,
    UnsupportedTableError,
)
from service.table.log_format.merge import MergeConfig
from service.table.storage import Storage

PROPERTIES_FILE = ".hoodie/hoodie.properties"
PROPERTIES_BACKUP = ".hoodie/hoodie.properties.backup"

SUPPORTED_TABLE_VERSION = 6


# MetadataPartitionType partition paths the service writes (service/table/mdt/commit.py).
_SYNCED_MDT_PARTITIONS = ("files", "column_stats", "bloom_filters")


class TableServiceKind(StrEnum):
    """The table services `TableConfig.check_service_supported` decides for."""

    CLUSTERING = "clustering"
    CLEANING = "cleaning"
    COMPACTION = "compaction"


class TableType(JavaEnum):
    """`hoodie.table.type`: Hudi's `HoodieTableType` constant names."""

    COPY_ON_WRITE = auto()
    MERGE_ON_READ = auto()


def table_checksum(database_name: str, table_name: str) -> int:
    """Hudi's checksum: CRC32 of `"<database>.<table>"` (UTF-8), as an unsigned decimal."""
    return zlib.crc32(f"{database_name}.{table_name}".encode())


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
        return _split(self.raw.get("hoodie.table.partition.fields"))

    @property
    def precombine_field(self) -> str | None:
        return self.raw.get("hoodie.table.precombine.field") or None

    @property
    def hive_style_partitioning(self) -> bool:
        return self.raw.get("hoodie.datasource.write.hive_style_partitioning", "false").lower() == "true"

    @property
    def base_file_extension(self) -> str:
        return "." + self.raw.get("hoodie.table.base.file.format", "PARQUET").lower()

    @property
    def key_generator_class(self) -> str | None:
        """`hoodie.table.keygenerator.class` as written; None when the table does not record it."""
        return self.raw.get("hoodie.table.keygenerator.class") or None

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
        return self.raw.get("hoodie.archivelog.folder", "archived")

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
        return cls(raw)

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

    def check_supported(self, base_uri: str) -> None:
        """Refuse tables the product must not touch, with the reason and the way out."""
        if self.version != SUPPORTED_TABLE_VERSION:
            planned = " (table versions 8 and 9 are planned)" if self.version in (8, 9) else ""
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has hoodie.table.version={self.version}; "
                f"only version {SUPPORTED_TABLE_VERSION} (Hudi 0.14/0.15) is supported{planned}"
            )
        if self.timeline_layout_version != 1:
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has hoodie.timeline.layout.version="
                f"{self.timeline_layout_version}; table version 6 requires layout version 1"
            )
        if self.metadata_partitions_inflight:
            parts = ",".join(self.metadata_partitions_inflight)
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has metadata table partitions still initialising "
                f"(hoodie.table.metadata.partitions.inflight={parts}): an async indexer or a writer is "
                "building them. Retry once a Hudi writer has finished them (the key is empty again)."
            )
        # The service keeps the MDT `files`, `column_stats` and `bloom_filters` partitions in sync
        # (service/table/mdt/commit.py, index_sync.py); other partitions need records it does not produce.
        others = [p for p in self.metadata_partitions if p not in _SYNCED_MDT_PARTITIONS]
        if others:
            raise UnsupportedTableError(
                f"table {self.name!r} at {base_uri} has the metadata table partition(s) {','.join(others)} "
                f"(hoodie.table.metadata.partitions={','.join(self.metadata_partitions)}); this service "
                f"keeps only {', '.join(_SYNCED_MDT_PARTITIONS)} in sync, so its clustering or clean would "
                f"leave {','.join(others)} stale. Drop them: run a Hudi writer once with that index disabled "
                "(e.g. hoodie.metadata.record.index.enable=false; HoodieTable.deleteMetadataIndexIfNecessary "
                "deletes a disabled index's partition), or disable the metadata table with "
                "hoodie.metadata.enable=false."
            )

    def check_service_supported(self, service: TableServiceKind, base_uri: str) -> None:
        """Refuse a table service on a table whose layout it does not handle (`status` reads every
        table). Compaction serves merge-on-read tables only (copy-on-write has no log files).
        Clustering serves both table types; on merge-on-read it reads slices merged (base + logs),
        so it refuses a table whose payload class or record merger the merged read does not
        reproduce (`MergeConfig.from_table_properties` names it). Cleaning deletes whole file
        slices and reads no records, so it serves every table.
        """
        if service is TableServiceKind.COMPACTION and self.table_type is not TableType.MERGE_ON_READ:
            # Java refuses too: `ScheduleCompactionActionExecutor.execute` checks the table type.
            raise TableServicesRefusedError(
                f"table {self.name!r} at {base_uri} is {self.table_type.value} (hoodie.table.type): "
                "compaction merges log files into base files, and only MERGE_ON_READ tables have them"
            )
        if service is TableServiceKind.CLUSTERING and self.table_type is TableType.MERGE_ON_READ:
            try:
                MergeConfig.from_table_properties(self.raw, self.name)
            except UnsupportedMergeError as exc:
                raise TableServicesRefusedError(
                    f"table {self.name!r} at {base_uri} is MERGE_ON_READ (hoodie.table.type): clustering "
                    f"reads its file slices merged and refuses it ({exc}); cleaning and `status` serve it"
                ) from exc


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
