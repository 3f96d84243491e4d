"""`HudiTable`: one table's storage, config and loaders for its timeline and file-system view."""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from service.config.hoodie import TimelineTimezone
from service.errors import NeedsConfigurationError, TableServicesRefusedError, UnsupportedMergeError
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.fs_view import BaseFilesWritten, FileSystemView, TimelineFacts
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

# Files per view of `HudiTable.iter_views`: about 70 MB of view objects (measured on the cleaning
# benchmark's table), whatever the table's size.
VIEW_BATCH_FILES = 100_000


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
        """Partition path → data files directly in it, as Hudi's file-system view lists them
        (`iter_listings`, whole)."""
        return dict(self.iter_listings(only))

    def iter_listings(
        self, only: Iterable[str] | None = None, *, from_storage: bool = False
    ) -> Iterator[tuple[str, list[FileStatus]]]:
        """(partition path, data files directly in it), a partition at a time, as Hudi's file-system
        view lists them, so a planner working partition by partition holds one batch of the table
        (`iter_views`). From storage, what is not yet yielded is not listed yet; the metadata table's
        listing is decoded whole (names and sizes) and each partition dropped from it once yielded.

        With the metadata table's `files` partition served (and not `from_storage`), the listing is
        the MDT's (`HoodieBackedTableMetadata.getAllPartitionPaths` / `getAllFilesInPartition`): a
        few reads instead of a LIST per partition; it holds only files of completed instants. Otherwise
        storage is listed (`iter_storage_listings`). `only` restricts the listing to the given
        partitions (incremental cleaning).
        """
        if from_storage or not self.lists_through_mdt:
            yield from self.iter_storage_listings(only)
            return
        listing = list_partitions_via_mdt(self.storage)
        wanted = list(listing) if only is None else [p for p in only if p in listing]
        for partition in wanted:
            # Dropped from the decoded listing once yielded: the statuses replace it.
            names = listing.pop(partition)
            yield (
                partition,
                [FileStatus(posixpath.join(partition, name), size, False) for name, size in names.items()],
            )

    def list_storage_partitions(self, only: Iterable[str] | None = None) -> dict[str, list[FileStatus]]:
        """Partition path → files directly in it on storage (`iter_storage_listings`, whole)."""
        return dict(self.iter_storage_listings(only))

    def iter_storage_listings(
        self, only: Iterable[str] | None = None
    ) -> Iterator[tuple[str, list[FileStatus]]]:
        """(partition path, files directly in it on storage), partitions discovered as Java's
        `FSUtils.getAllPartitionPaths` does: by partition metafiles. Files of pending and failed
        writes are listed too (rollback deletes them; the view sets them apart as uncommitted).

        `only` restricts the listing to the given partitions (a LIST each). Without it, each folder at
        the top of the table is walked recursively (the requests of one recursive listing) and its
        partitions yielded before the next is walked: memory holds one top-level folder's files.
        """
        if only is not None:
            for partition in only:
                files = [f for f in self.storage.list_dir(partition) if not f.is_dir]
                if any(f.name.startswith(PARTITION_METAFILE_PREFIX) for f in files):
                    yield partition, files
            return
        top: list[FileStatus] = []
        for entry in self.storage.list_dir(""):
            if not entry.is_dir:
                top.append(entry)
                continue
            if entry.name.startswith(METAFOLDER):
                continue
            by_dir: dict[str, list[FileStatus]] = {}
            for status in self.storage.walk_files(entry.path):
                by_dir.setdefault(posixpath.dirname(status.path), []).append(status)
            for directory, files in by_dir.items():
                if any(f.name.startswith(PARTITION_METAFILE_PREFIX) for f in files):
                    yield directory, files
        if any(f.name.startswith(PARTITION_METAFILE_PREFIX) for f in top):
            yield "", top

    def load_view(
        self,
        timeline: Timeline | None = None,
        partitions: Iterable[str] | None = None,
        *,
        from_storage: bool = False,
    ) -> FileSystemView:
        """The file-system view over `iter_listings` (`from_storage`: over the storage listing), whole:
        `iter_views` in one batch."""
        views = self.iter_views(timeline, partitions, from_storage=from_storage, batch_files=sys.maxsize)
        return next(views)

    def iter_views(
        self,
        timeline: Timeline | None = None,
        partitions: Iterable[str] | None = None,
        *,
        from_storage: bool = False,
        batch_files: int | None = None,
        facts: TimelineFacts | None = None,
    ) -> Iterator[FileSystemView]:
        """The file-system view, as views of disjoint batches of whole partitions of about
        `batch_files` files each (default `VIEW_BATCH_FILES`; a partition is never split), at least
        one (maybe empty): a planner that works partition by partition holds one batch, not the table.
        `facts`: the timeline's facts when the caller read them already (read here otherwise)."""
        batch_files = batch_files if batch_files is not None else VIEW_BATCH_FILES
        timeline = timeline if timeline is not None else self.load_timeline()
        facts = facts if facts is not None else self.facts_reader.read(timeline)
        written = self._base_files_written(timeline)
        batch: dict[str, list[FileStatus]] = {}
        files = 0
        yielded = False
        for partition, statuses in self.iter_listings(partitions, from_storage=from_storage):
            batch[partition] = statuses
            files += len(statuses)
            if files >= batch_files:
                yield self._build_view(timeline, facts, batch, written)
                yielded = True
                batch, files = {}, 0
        if batch or not yielded:
            yield self._build_view(timeline, facts, batch, written)

    def _build_view(
        self,
        timeline: Timeline,
        facts: TimelineFacts,
        listing: Mapping[str, list[FileStatus]],
        written: BaseFilesWritten,
    ) -> FileSystemView:
        return FileSystemView.build(
            timeline,
            listing,
            facts,
            self.config.base_file_extension,
            table=self.name,
            logs_by_completion_time=self.layout.slices_logs_by_completion_time,
            history=self.history,
            base_files_written=written,
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
