"""File-system view: file groups and file slices of committed data, as Hudi's Java view builds them.

Pure: `FileSystemView.build` takes a timeline, a listing of partitions and the facts read from the
timeline's metadata (replaced file groups, pending clustering/compaction, savepointed files) and
returns an immutable view. Loading those inputs is `service.table.table`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TypeVar

from service.errors import CorruptTableError
from service.table.data_files import (
    PARTITION_METAFILE_PREFIX,
    BaseFile,
    LogFile,
    parse_base_file,
    parse_log_file,
)
from service.table.slicing import (
    CompletionTimeHistory,
    CompletionTimes,
    history_lookups,
    slice_log_files_by_completion,
)
from service.table.storage import FileStatus
from service.table.timeline import Timeline

FileGroupId = tuple[str, str]  # (partition_path, file_id)
_T = TypeVar("_T")
# Instant time -> base-relative paths of the base files its commit's write stats name; None when the
# instant's commit metadata is not on the active timeline (see `FileSystemView.build`).
BaseFilesWritten = Callable[[str], frozenset[str] | None]


@dataclass(frozen=True)
class FileSlice:
    """One version of a file group: a base file (COW) and/or log files (MOR) sharing a base instant."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...] = ()

    @property
    def file_group_id(self) -> FileGroupId:
        return (self.partition_path, self.file_id)

    @property
    def base_size_bytes(self) -> int:
        return self.base_file.size_bytes if self.base_file else 0

    @property
    def total_size_bytes(self) -> int:
        return self.base_size_bytes + sum(lf.size_bytes for lf in self.log_files)

    @property
    def file_names(self) -> tuple[str, ...]:
        names = tuple(lf.file_name for lf in self.log_files)
        return ((self.base_file.file_name,) if self.base_file else ()) + names

    @property
    def paths(self) -> tuple[str, ...]:
        """Base-relative paths of every file of the slice."""
        log_paths = tuple(lf.path for lf in self.log_files)
        return ((self.base_file.path,) if self.base_file else ()) + log_paths


@dataclass(frozen=True)
class FileGroup:
    """Committed slices of one file group, newest first; `replaced_by` names the replacecommit.

    `slices` is what Java's `HoodieFileGroup.getAllFileSlices` returns (the cleaner's view): with a
    pending compaction `C` it holds slice `C` (logs appended since `C` was scheduled, and any base
    file the compactor already wrote) above the frozen input slice.
    """

    partition_path: str
    file_id: str
    slices: tuple[FileSlice, ...]
    replaced_by: str | None = None
    # Instant of the pending compaction whose plan holds this group (not a log compaction).
    pending_compaction_instant: str | None = None

    @property
    def file_group_id(self) -> FileGroupId:
        return (self.partition_path, self.file_id)

    @property
    def latest_slice(self) -> FileSlice | None:
        """Java's `getLatestFileSlices` slice: the newest committed one, without a base file the
        pending compaction `C` wrote (`filterBaseFileAfterPendingCompaction`: `C` is not complete,
        so its slice is the logs appended since it was scheduled, possibly none)."""
        if not self.slices:
            return None
        latest = self.slices[0]
        if latest.base_instant_time == self.pending_compaction_instant and latest.base_file is not None:
            return replace(latest, base_file=None)
        return latest

    @property
    def snapshot_slices(self) -> tuple[FileSlice, ...]:
        """The slices a snapshot reader merges (`getLatestMergedFileSlicesBeforeOrOn`): the latest,
        and while compaction `C` is pending, the frozen slice before it (base `B` + logs of `B`)."""
        latest = self.latest_slice
        if latest is None:
            return ()
        if latest.base_instant_time == self.pending_compaction_instant and len(self.slices) > 1:
            return (latest, self.slices[1])
        return (latest,)

    @property
    def is_replaced(self) -> bool:
        return self.replaced_by is not None


@dataclass(frozen=True)
class TimelineFacts:
    """What the view needs from timeline metadata, already decoded."""

    # (partition, fileId) -> timestamp of the completed replacecommit that replaced it (latest wins).
    replaced: Mapping[FileGroupId, str] = field(default_factory=dict)
    # (partition, fileId) -> timestamp of the pending clustering plan that holds it.
    pending_clustering: Mapping[FileGroupId, str] = field(default_factory=dict)
    # (partition, fileId) -> (compaction instant, base instant of the slice it compacts).
    pending_compaction: Mapping[FileGroupId, tuple[str, str]] = field(default_factory=dict)
    # savepoint timestamp -> names of the files it pins (savepointDataFile).
    savepointed_files: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The same for pending log compactions (`logcompaction`): they protect slices as compactions do
    # but open no new slice (Java keeps them in `fgIdToPendingLogCompaction`, apart).
    pending_log_compaction: Mapping[FileGroupId, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class FileSystemView:
    timeline: Timeline
    partitions: tuple[str, ...]
    file_groups: Mapping[FileGroupId, FileGroup]
    facts: TimelineFacts
    # Files present on storage that belong to no committed slice: files of pending or failed writes,
    # and leftovers of a completed write (a base file of its instant that its write stats do not name).
    uncommitted_files: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        timeline: Timeline,
        listing: Mapping[str, Iterable[FileStatus]],
        facts: TimelineFacts,
        base_file_extension: str = ".parquet",
        *,
        table: str = "",
        logs_by_completion_time: bool = False,
        history: CompletionTimeHistory | None = None,
        base_files_written: BaseFilesWritten | None = None,
    ) -> FileSystemView:
        """Group listed files into file groups of committed slices, as Java's
        `AbstractTableFileSystemView.buildFileGroups` with `addPendingCompactionFileSlice`.

        `listing` maps each partition path to the files directly in it. A slice is keyed by its base
        instant: a base file's instant or a log file's base instant, so a slice may hold logs only.
        A slice is committed (`HoodieFileGroup.isFileSliceCommitted`) when its base instant is a
        completed commit/deltacommit/replacecommit, is a pending compaction (its log files are
        readable), or predates the active timeline (its commit was archived). Log files are not
        filtered by the commit state of their blocks: blocks of failed or rolled-back deltacommits
        are skipped by the log scanner, and the files go with their slice (cleaned with it).
        A group in a pending compaction plan `C` gets slice `C` even before any file carries `C`
        (`HoodieFileGroup.addNewFileSliceAtInstant`): writers append to it from then on.

        `logs_by_completion_time` (timeline layout 2): a log file's name holds the deltacommit that
        wrote it; it counts once that deltacommit completed and joins a slice by its completion time
        (`service.table.slicing`). `history`: where the completion times of archived deltacommits are
        read, once per build and only for those a later slice makes them matter for.

        Two base files of one instant in one file group (a retried task's leftover that the writer's
        marker reconciliation, `HoodieTable.reconcileAgainstMarkers`, did not delete): the one the
        instant's write stats name (`base_files_written`) is the slice's, the other a leftover set
        apart with the uncommitted files, so no service reads it. Java's listing keeps whichever it
        adds last (`HoodieFileGroup.addBaseFile`), which can be the leftover, an older version of the
        group's records; the metadata table lists only the committed one. When the write stats cannot
        say (no commit metadata on the active timeline, or they name neither or both), the view is
        refused (CorruptTableError naming the files): guessing could lose an update.
        """
        visible = timeline.commits_and_compaction()
        first_active = next(
            (i.timestamp for i in visible if not facts.savepointed_files.get(i.timestamp)), None
        )
        pending_compactions = {i.timestamp for i in visible.pending() if i.action.value == "compaction"}

        def committed(instant_time: str) -> bool:
            if timeline.is_completed_commit(instant_time) or instant_time in pending_compactions:
                return True
            return first_active is None or instant_time < first_active

        slices: dict[FileGroupId, dict[str, tuple[BaseFile | None, list[LogFile]]]] = {}
        uncommitted: list[str] = []
        times = CompletionTimes.of(timeline) if logs_by_completion_time else None
        logs_to_place: dict[FileGroupId, list[LogFile]] = {}
        for partition, statuses in listing.items():
            for status in statuses:
                if status.is_dir or status.name.startswith(PARTITION_METAFILE_PREFIX):
                    continue
                if status.name.endswith(base_file_extension) and not status.name.startswith("."):
                    base = parse_base_file(partition, status.name, status.size)
                    if not committed(base.instant_time):
                        uncommitted.append(base.path)
                        continue
                    bucket = slices.setdefault((partition, base.file_id), {})
                    previous = bucket.get(base.instant_time)
                    if previous is not None and previous[0] is not None:
                        base, leftover = _the_written_one(
                            table,
                            base,
                            previous[0],
                            base.instant_time in pending_compactions,
                            base_files_written,
                        )
                        uncommitted.append(leftover.path)
                    bucket[base.instant_time] = (base, previous[1] if previous else [])
                    continue
                log = parse_log_file(partition, status.name, status.size)
                if log is None:
                    continue  # not a Hudi data file (e.g. a checksum file); Java ignores it too
                if times is not None:
                    written_by = log.base_instant_time
                    if written_by in times.by_instant or times.is_archived(written_by):
                        logs_to_place.setdefault((partition, log.file_id), []).append(log)
                    else:
                        uncommitted.append(log.path)
                    continue
                if not committed(log.base_instant_time):
                    uncommitted.append(log.path)
                    continue
                bucket = slices.setdefault((partition, log.file_id), {})
                bucket.setdefault(log.base_instant_time, (None, []))[1].append(log)

        if times is not None:
            bases: dict[FileGroupId, set[str]] = {}
            for fg_id in logs_to_place:
                compaction = facts.pending_compaction.get(fg_id)
                pending = {compaction[0]} if compaction is not None else set()
                bases[fg_id] = set(slices.get(fg_id, {})) | pending
            if history is not None:
                wanted: set[str] = set()
                for fg_id, group_logs in logs_to_place.items():
                    wanted |= history_lookups(bases[fg_id], group_logs, times)
                times = times.with_history(history, wanted)
            for fg_id, group_logs in logs_to_place.items():
                by_instant = slices.setdefault(fg_id, {})
                placed = slice_log_files_by_completion(table, bases[fg_id], group_logs, times)
                for instant, logs in placed.items():
                    by_instant.setdefault(instant, (None, []))[1].extend(logs)

        groups: dict[FileGroupId, FileGroup] = {}
        for fg_id, by_instant in slices.items():
            compaction = facts.pending_compaction.get(fg_id)
            if compaction is not None:
                by_instant.setdefault(compaction[0], (None, []))
            # Logs in `HoodieLogFile.getLogFileComparator` order (version, then write token), oldest
            # first: the order readers merge them in (Java's `FileSlice.getLogFiles` is its reverse).
            ordered = tuple(
                FileSlice(fg_id[0], fg_id[1], instant, base, _in_merge_order(logs))
                for instant, (base, logs) in sorted(by_instant.items(), reverse=True)
            )
            groups[fg_id] = FileGroup(
                fg_id[0],
                fg_id[1],
                ordered,
                facts.replaced.get(fg_id),
                compaction[0] if compaction is not None else None,
            )
        return cls(timeline, tuple(sorted(listing)), groups, facts, tuple(sorted(uncommitted)))

    # ------------------------------------------------------------ queries
    @cached_property
    def live_file_groups(self) -> tuple[FileGroup, ...]:
        """File groups readers see: not replaced, with at least one committed slice."""
        groups = self.file_groups
        return tuple(
            fg
            for fg in (groups[k] for k in sorted(groups))  # sorted by key alone: no (key, group) tuples
            if not fg.is_replaced and fg.latest_slice is not None
        )

    @cached_property
    def replaced_file_groups(self) -> tuple[FileGroup, ...]:
        groups = self.file_groups
        # Chosen before sorted: a view has few replaced groups among many.
        return tuple(groups[k] for k in sorted(k for k, fg in groups.items() if fg.is_replaced))

    def latest_file_slices(self, partition_path: str | None = None) -> list[FileSlice]:
        groups = self.live_file_groups if partition_path is None else self._live_in.get(partition_path, ())
        return [fg.latest_slice for fg in groups if fg.latest_slice is not None]

    def file_groups_in(self, partition_path: str) -> list[FileGroup]:
        return list(self._groups_in.get(partition_path, ()))

    def uncommitted_files_in(self, partition_path: str) -> tuple[str, ...]:
        """The view's `uncommitted_files` directly in the partition."""
        return self._uncommitted_in.get(partition_path, ())

    # Per-partition indexes, built once: planners ask partition by partition, and a scan of the
    # whole view per partition made planning quadratic in the partitions of a view.
    @cached_property
    def _live_in(self) -> Mapping[str, tuple[FileGroup, ...]]:
        return _by_partition(self.live_file_groups, lambda fg: fg.partition_path)

    @cached_property
    def _groups_in(self) -> Mapping[str, tuple[FileGroup, ...]]:
        return _by_partition(self.file_groups.values(), lambda fg: fg.partition_path)

    @cached_property
    def _uncommitted_in(self) -> Mapping[str, tuple[str, ...]]:
        return _by_partition(self.uncommitted_files, lambda path: path.rpartition("/")[0])

    def is_pending_clustering(self, fg_id: FileGroupId) -> bool:
        return fg_id in self.facts.pending_clustering

    def is_pending_compaction(self, fg_id: FileGroupId) -> bool:
        """In a pending compaction or log compaction plan."""
        return fg_id in self.facts.pending_compaction or fg_id in self.facts.pending_log_compaction

    @cached_property
    def savepointed_file_names(self) -> frozenset[str]:
        return (
            frozenset().union(*self.facts.savepointed_files.values())
            if self.facts.savepointed_files
            else frozenset()
        )


def _in_merge_order(logs: list[LogFile]) -> tuple[LogFile, ...]:
    """Logs in `HoodieLogFile.getLogFileComparator` order; most slices have none or one (a hundred
    thousand sorts of nothing were a tenth of a view's build)."""
    return tuple(logs) if len(logs) < 2 else tuple(sorted(logs, key=lambda lf: lf.order_key))


def _the_written_one(
    table: str,
    one: BaseFile,
    other: BaseFile,
    pending_compaction: bool,
    base_files_written: BaseFilesWritten | None,
) -> tuple[BaseFile, BaseFile]:
    """(the slice's base file, the leftover) of two base files of one instant in one file group.

    A pending compaction's base files are read by no one until it commits (`FileGroup.latest_slice`
    drops them) and its execution rewrites them: the smaller name is kept, deterministically.
    """
    if pending_compaction:
        ordered = sorted((one, other), key=lambda b: b.file_name)
        return ordered[0], ordered[1]
    instant = one.instant_time
    written = base_files_written(instant) if base_files_written is not None else None
    if written is not None:
        named = [b for b in (one, other) if b.path in written]
        if len(named) == 1:
            return named[0], other if named[0] is one else one
        says = "name neither" if not named else "name both"
    else:
        says = "are not on the active timeline"
    raise CorruptTableError(
        f"table {table!r}: file group {(one.partition_path, one.file_id)} has two base files of instant "
        f"{instant}, {one.path} and {other.path}, and the instant's commit write stats {says}: which one "
        "is the committed file slice is unknown, and reading the other could lose an update; remove the "
        "one its writer did not commit"
    )


def _by_partition(items: Iterable[_T], partition_of: Callable[[_T], str]) -> dict[str, tuple[_T, ...]]:
    """`items` grouped by partition, each group in `items`' order."""
    out: dict[str, list[_T]] = {}
    for item in items:
        out.setdefault(partition_of(item), []).append(item)
    return {partition: tuple(group) for partition, group in out.items()}


def views_of(source: FileSystemView | Iterable[FileSystemView]) -> Iterable[FileSystemView]:
    """One view, or the views of disjoint batches of partitions `HudiTable.iter_views` yields: what a
    planner taking either reads, a view at a time."""
    return (source,) if isinstance(source, FileSystemView) else source
