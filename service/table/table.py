"""`HudiTable`: one table's storage, config and loaders for its timeline and file-system view."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from service.config.hoodie import TimelineTimezone
from service.errors import NeedsConfigurationError, TableServicesRefusedError, UnsupportedMergeError
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.fs_view import BaseFilesWritten, FileSystemView
from service.table.layout import METAFOLDER, TimelineLayout
from service.table.log_format.merge import MergeConfig
from service.table.lsm_history import LsmHistory
from service.table.mdt.files_listing import files_partition_served, list_partitions_via_mdt
from service.table.paths import PathGuard
from service.table.properties import TableConfig, TableServiceKind, TableType, load_table_config
from service.table.storage import FileStatus, Storage
from service.table.table_format import TableFormat
from service.table.timeline import WRITE_ACTIONS, Timeline, load_timeline
from service.table.timeline_facts import TimelineFactsReader


def refuse_unreproduced_merge(config: TableConfig, base_uri: str) -> None:
    """Clustering a merge-on-read table reads its slices merged (base + logs): a table whose payload
    class or record merger the merged read does not reproduce (`MergeConfig.from_table_properties`
    names it) is refused for clustering; cleaning and `status` serve it."""
    if config.table_type is not TableType.MERGE_ON_READ:
        return
    try:
        MergeConfig.from_table_properties(config.raw, config.name)
    except UnsupportedMergeError as exc:
        raise TableServicesRefusedError(
            f"table {config.name!r} at {base_uri} is MERGE_ON_READ ({config.table_type_source()}): "
            f"clustering reads its file slices merged and refuses it ({exc}); cleaning and `status` "
            "serve it",
            reason="merge",
        ) from exc


@dataclass
class HudiTable:
    storage: Storage
    config: TableConfig
    format: TableFormat
    storage_options: Mapping[str, str] = field(default_factory=dict)
    # Completed instants never change, so their decoded metadata is cached across reloads.
    facts_reader: TimelineFactsReader = field(init=False)
    # The latest timeline loaded: reused while `.hoodie` holds the same instant files (idle ticks).
    _timeline: Timeline | None = field(default=None, init=False, repr=False, compare=False)
    # The archived (LSM) timeline of layout 2, read for the completion times slicing needs.
    history: LsmHistory | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.facts_reader = TimelineFactsReader(self.storage, self.layout, self.path_guard)
        history_dir = self.layout.history_dir
        self.history = LsmHistory(self.storage, history_dir) if history_dir is not None else None

    @classmethod
    def open(
        cls, base_uri: str, storage_options: Mapping[str, str] | None = None, check_supported: bool = True
    ) -> HudiTable:
        """Open a table; refuses (UnsupportedTableError) tables the product cannot read. Whether a
        table service may touch it is `check_service_supported`'s to say (`status` reads every table)."""
        storage = Storage.for_base_uri(base_uri, storage_options)
        config = load_table_config(storage)
        table_format = TableFormat.for_table(config, storage.base_uri, strict=check_supported)
        if check_supported:
            config.check_readable(storage.base_uri)
        return cls(storage, config, table_format, dict(storage_options or {}))

    @property
    def layout(self) -> TimelineLayout:
        return self.format.layout

    def check_service_supported(self, service: TableServiceKind) -> None:
        """TableServicesRefusedError, with the reason and the way out, when `service` must not touch
        the table: its version is not served for it yet, the metadata table has partitions the service
        does not keep in sync, or (`TableConfig.check_service_supported`) its type or merge rules."""
        self.format.check_serves(service, self.config, self.base_uri)
        self.config.check_service_supported(service, self.base_uri)
        if service is TableServiceKind.CLUSTERING:
            refuse_unreproduced_merge(self.config, self.base_uri)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def base_uri(self) -> str:
        return self.storage.base_uri

    def path_guard(self, source: str) -> PathGuard:
        """The confinement rule for paths read from the stored file `source` (named in refusals)."""
        return PathGuard(self.storage.location, self.name, bool(self.config.partition_fields), source)

    def timeline_zone(
        self, local_zone: tzinfo | None, setting: str = "--timezone (the CLI) or daemon.timezone (the daemon)"
    ) -> tzinfo:
        """The zone instant times are written in: UTC, or the writers' zone for a LOCAL timeline.

        Java writers use their JVM's zone for LOCAL (`HoodieInstantTimeGenerator`); guessing it would
        misorder instants, so a LOCAL table without a known zone is refused until `setting` (the
        CLI's `--timezone`, the daemon's `daemon.timezone` or table entry `timezone`) names it.
        """
        if self.config.timeline_timezone is TimelineTimezone.UTC:
            return UTC
        if local_zone is None:
            raise NeedsConfigurationError(
                f"table {self.name!r} uses hoodie.table.timeline.timezone=LOCAL (instant times in its "
                f"writers' zone) and no zone is known: set {setting} to the writers' zone (IANA name)",
                setting=setting,
                reason="timezone",
            )
        return local_zone

    def load_timeline(self) -> Timeline:
        self._timeline = load_timeline(self.storage, self.layout, self._timeline)
        return self._timeline

    def recent_timeline(self) -> Timeline:
        """The timeline as last loaded (no listing), or a fresh one when none was loaded yet."""
        return self._timeline if self._timeline is not None else self.load_timeline()

    @property
    def lists_through_mdt(self) -> bool:
        """Whether listings come from the metadata table's `files` partition (see `list_partitions`)."""
        return self.format.lists_through_mdt and files_partition_served(self.config)

    def list_partitions(self, only: Iterable[str] | None = None) -> dict[str, list[FileStatus]]:
        """Partition path → data files directly in it, as Hudi's file-system view lists them.

        With the metadata table's `files` partition served, the listing is the MDT's
        (`HoodieBackedTableMetadata.getAllPartitionPaths` / `getAllFilesInPartition`): a few reads
        instead of a LIST per partition; it holds only files of completed instants. Otherwise storage
        is listed (`list_storage_partitions`). `only` restricts the listing to the given partitions
        (incremental cleaning).
        """
        if not self.lists_through_mdt:
            return self.list_storage_partitions(only)
        listing = list_partitions_via_mdt(self.storage)
        wanted = listing.keys() if only is None else [p for p in only if p in listing]
        return {
            partition: [
                FileStatus(posixpath.join(partition, name), size, False)
                for name, size in listing[partition].items()
            ]
            for partition in wanted
        }

    def list_storage_partitions(self, only: Iterable[str] | None = None) -> dict[str, list[FileStatus]]:
        """Partition path → files directly in it on storage, partitions discovered as Java's
        `FSUtils.getAllPartitionPaths` does: by partition metafiles. Files of pending and failed
        writes are listed too (rollback deletes them; the view sets them apart as uncommitted).

        `only` restricts the listing to the given partitions.
        """
        if only is not None:
            listing: dict[str, list[FileStatus]] = {}
            for partition in only:
                files = [f for f in self.storage.list_dir(partition) if not f.is_dir]
                if any(f.name.startswith(PARTITION_METAFILE_PREFIX) for f in files):
                    listing[partition] = files
            return listing
        by_dir: dict[str, list[FileStatus]] = {}
        for entry in self.storage.list_dir(""):
            if entry.is_dir:
                if entry.name.startswith(METAFOLDER):
                    continue
                for status in self.storage.walk_files(entry.path):
                    by_dir.setdefault(posixpath.dirname(status.path), []).append(status)
            else:
                by_dir.setdefault("", []).append(entry)
        return {
            directory: files
            for directory, files in by_dir.items()
            if any(f.name.startswith(PARTITION_METAFILE_PREFIX) for f in files)
        }

    def load_view(
        self,
        timeline: Timeline | None = None,
        partitions: Iterable[str] | None = None,
        *,
        from_storage: bool = False,
    ) -> FileSystemView:
        """The file-system view over `list_partitions` (`from_storage`: over the storage listing)."""
        timeline = timeline if timeline is not None else self.load_timeline()
        facts = self.facts_reader.read(timeline)
        lister = self.list_storage_partitions if from_storage else self.list_partitions
        listing = lister(partitions)
        return FileSystemView.build(
            timeline,
            listing,
            facts,
            self.config.base_file_extension,
            table=self.name,
            logs_by_completion_time=self.layout.slices_logs_by_completion_time,
            history=self.history,
            base_files_written=self._base_files_written(timeline),
        )

    def _base_files_written(self, timeline: Timeline) -> BaseFilesWritten:
        """Base files a completed instant's write stats name: read only for an instant whose file group
        holds two base files of it (`FileSystemView.build`), from its commit metadata (cached)."""
        completed = timeline.completed()

        def written(instant_time: str) -> frozenset[str] | None:
            instant = completed.find(instant_time)
            if instant is None or instant.action not in WRITE_ACTIONS:
                return None
            stats = self.facts_reader.commit_metadata(instant).write_stats
            return frozenset(stat.path for stat in stats if stat.path)

        return written
