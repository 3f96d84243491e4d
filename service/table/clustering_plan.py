"""A clustering plan as data, and the one decoder of a stored plan (`T.replacecommit.requested`).

Groups of file slices, the execution strategy and the group metrics, as `HoodieClusteringPlan`
holds them. `decode_clustering_plan` is the one place a stored plan (ours or Hudi's) becomes the
typed plan: every slice path is confined to the table there (`service.table.paths`), so the view's
pending-clustering facts, the cleaner, rollback and execution all read the same confined,
base-relative paths. The write side (typed plan to Avro) is `service/clustering/records.py`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from service.errors import CorruptTableError
from service.table import codecs
from service.table.data_files import parse_base_file, parse_log_file
from service.table.fs_view import FileGroupId, FileSlice
from service.table.paths import PathGuard

# Version of the plan records (`HoodieClusteringPlan.version` and its parts) Hudi 0.15 writes.
PLAN_VERSION = 1

# Field names of HoodieSliceInfo as refusals name them.
_PARTITION_FIELD = "inputGroups[].slices[].partitionPath"
_DATA_FILE_FIELD = "inputGroups[].slices[].dataFilePath"
_DELTA_FILES_FIELD = "inputGroups[].slices[].deltaFilePaths"
_FILE_ID_FIELD = "inputGroups[].slices[].fileId"


@dataclass(frozen=True)
class PlannedSlice:
    """One input file slice of a clustering group; paths are base-relative."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file_path: str
    base_file_size_bytes: int | None = None  # None when read back from a plan (plans carry no sizes)
    # Newest first, as Hudi's `ClusteringPlanStrategy.getFileSliceInfo` writes `deltaFilePaths`
    # (`FileSlice.getLogFiles()`); readers sort them (`HoodieLogFile.getLogFileComparator`).
    log_file_paths: tuple[str, ...] = ()
    log_files_size_bytes: int = 0  # 0 when read back from a plan

    @property
    def has_base_file(self) -> bool:
        return bool(self.base_file_path)

    @property
    def file_group_id(self) -> FileGroupId:
        return (self.partition_path, self.file_id)

    @classmethod
    def of(cls, file_slice: FileSlice) -> PlannedSlice:
        """A latest slice as the plan records it: a merge-on-read slice may be log-only (no base file)."""
        logs = sorted(file_slice.log_files, key=lambda lf: lf.order_key, reverse=True)
        base = file_slice.base_file
        return cls(
            partition_path=file_slice.partition_path,
            file_id=file_slice.file_id,
            base_instant_time=file_slice.base_instant_time,
            base_file_path=base.path if base is not None else "",
            base_file_size_bytes=base.size_bytes if base is not None else None,
            log_file_paths=tuple(lf.path for lf in logs),
            log_files_size_bytes=sum(lf.size_bytes for lf in logs),
        )


@dataclass(frozen=True)
class PlannedGroup:
    """Slices of one partition rewritten together into `num_output_file_groups` new file groups."""

    partition_path: str
    slices: tuple[PlannedSlice, ...]
    num_output_file_groups: int
    metrics: Mapping[str, float] = field(default_factory=dict)
    size_bytes: int | None = None  # the bytes the planner counted for the group (None when read back)

    @property
    def file_group_ids(self) -> tuple[FileGroupId, ...]:
        return tuple(s.file_group_id for s in self.slices)


@dataclass(frozen=True)
class PlannedClustering:
    """A whole clustering plan: its groups in plan order and the execution strategy Java records."""

    groups: tuple[PlannedGroup, ...]
    strategy_class: str
    strategy_params: Mapping[str, str] = field(default_factory=dict)
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    preserve_hoodie_metadata: bool = True
    # Partitions with candidates left out (`missingSchedulePartitions`, written on table versions 8/9).
    missing_partitions: tuple[str, ...] = ()

    @property
    def input_file_groups(self) -> frozenset[FileGroupId]:
        return frozenset(fg for g in self.groups for fg in g.file_group_ids)

    @property
    def partitions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.partition_path for g in self.groups))

    @property
    def input_bytes(self) -> int:
        return sum(s.base_file_size_bytes or 0 for g in self.groups for s in g.slices)

    @property
    def num_output_file_groups(self) -> int:
        return sum(g.num_output_file_groups for g in self.groups)


def decode_clustering_plan(
    requested: codecs.RequestedReplaceMetadata, guard: PathGuard, *, file_names_only: bool = False
) -> PlannedClustering:
    """A stored clustering plan (ours or Hudi's) as the typed plan; sizes it does not record are None.

    Each slice's `partitionPath` must be a partition path of the table, its files directly in that
    partition, and its `fileId` the file id of its base file: the commit writes
    `partitionToReplaceFileIds` from these fields, and rollback lists the partitions. The first
    field breaking the rule refuses the whole plan (PathOutsideTableError naming it).

    `file_names_only` is for readers of partitions, file ids and file names (the view's pending
    file groups, the cleaner, rollback), which Hudi reads the same way
    (`ClusteringUtils.getFileGroupsFromClusteringPlan` takes only partitionPath and fileId): a
    slice's files are then named by their file name in the slice's partition, so the plans of a
    table copied elsewhere (absolute paths of the old location) still name its file groups.
    Execution reads the files and decodes with full confinement.
    """
    plan = requested.clustering_plan
    if not requested.is_clustering or plan is None:
        raise CorruptTableError(
            f"{guard.source}: not a clustering plan (operationType {requested.operation_type!r})"
        )
    groups = []
    for index, group in enumerate(plan.input_groups or ()):
        slices = tuple(_planned_slice(info, guard, file_names_only) for info in group.slices or ())
        partitions = {s.partition_path for s in slices}
        if len(partitions) > 1:
            raise CorruptTableError(
                f"{guard.source}: clustering group {index} spans partitions {sorted(partitions)}"
            )
        groups.append(
            PlannedGroup(
                partition_path=partitions.pop() if partitions else "",
                slices=slices,
                num_output_file_groups=group.num_output_file_groups or 1,
                metrics=dict(group.metrics or {}),
            )
        )
    strategy = plan.strategy
    return PlannedClustering(
        groups=tuple(groups),
        strategy_class=(strategy.strategy_class_name or "") if strategy else "",
        strategy_params=dict((strategy.strategy_params or {}) if strategy else {}),
        extra_metadata=dict(plan.extra_metadata or {}),
        preserve_hoodie_metadata=bool(plan.preserve_hoodie_metadata),
    )


def _planned_slice(info: codecs.SliceInfo, guard: PathGuard, file_names_only: bool) -> PlannedSlice:
    partition = guard.partition(_PARTITION_FIELD, info.partition_path or "")
    file_id = info.file_id or ""

    def path(field: str, raw: str) -> str:
        if not file_names_only:
            return guard.file(field, raw, partition)
        return guard.relative_file(field, posixpath.join(partition, posixpath.basename(raw)), partition)

    log_paths = tuple(path(_DELTA_FILES_FIELD, p) for p in info.delta_file_paths or ())
    if not info.data_file_path and log_paths:
        # A merge-on-read slice of log files only: its base instant is the log files'.
        log = parse_log_file(partition, posixpath.basename(log_paths[0]))
        if log is None:
            raise CorruptTableError(
                f"{guard.source}: slice {file_id!r} names an unparsable log file {log_paths[0]!r}"
            )
        return PlannedSlice(partition, file_id, log.base_instant_time, "", None, log_paths)
    base_path = path(_DATA_FILE_FIELD, info.data_file_path or "")
    base = parse_base_file(partition, posixpath.basename(base_path))
    if base.file_id != file_id:
        raise guard.refuse(
            _FILE_ID_FIELD, file_id, f"it is not the file id of its dataFilePath {info.data_file_path!r}"
        )
    return PlannedSlice(partition, file_id, base.instant_time, base_path, None, log_paths)
