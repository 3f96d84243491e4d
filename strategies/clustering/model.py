"""A clustering plan as data, and its on-disk form (`T.replacecommit.requested`, Avro).

`PlannedClustering.to_requested_metadata` writes what Java's `ClusteringPlanActionExecutor` writes:
operationType `CLUSTER`, `{}` extra metadata, version 1 everywhere, `preserveHoodieMetadata` true,
qualified base file paths, `[]` delta files and `""` bootstrap path for copy-on-write slices, and
the group metrics of `FileSliceMetricUtils`. `from_requested_metadata` reads any clustering plan
back, Hudi's included (sizes it does not record are None).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from service.errors import CorruptTableError
from service.table import codecs
from service.table.data_files import parse_base_file, parse_log_file
from service.table.fs_view import FileGroupId, FileSlice
from service.table.paths import Refused, check_in_partition, check_relative_path

PLAN_VERSION = 1
MIB = 1024 * 1024

# FileSliceMetricUtils keys.
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


class PathQualifier(Protocol):
    """Turns base-relative paths into the qualified URIs plans hold, and back (`Storage` does both)."""

    def qualify(self, rel: str) -> str: ...

    def relativize(self, uri_or_path: str) -> str: ...


@dataclass(frozen=True)
class PlannedSlice:
    """One input file slice of a clustering group; paths are base-relative."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file_path: str
    base_file_size_bytes: int | None = None  # None when read back from a plan (plans carry no sizes)
    log_file_paths: tuple[str, ...] = ()

    @property
    def file_group_id(self) -> FileGroupId:
        return (self.partition_path, self.file_id)

    @classmethod
    def of(cls, file_slice: FileSlice) -> PlannedSlice:
        if file_slice.base_file is None:
            raise ValueError(f"file slice {file_slice.file_group_id} has no base file")
        return cls(
            partition_path=file_slice.partition_path,
            file_id=file_slice.file_id,
            base_instant_time=file_slice.base_instant_time,
            base_file_path=file_slice.base_file.path,
            base_file_size_bytes=file_slice.base_file.size_bytes,
            log_file_paths=tuple(lf.path for lf in file_slice.log_files),
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

    def to_requested_metadata(self, paths: PathQualifier) -> codecs.RequestedReplaceMetadata:
        groups = tuple(
            codecs.ClusteringGroup(
                slices=tuple(_slice_info(s, paths) for s in g.slices),
                metrics=dict(g.metrics),
                num_output_file_groups=g.num_output_file_groups,
                extra_metadata=None,
                version=PLAN_VERSION,
            )
            for g in self.groups
        )
        plan = codecs.ClusteringPlan(
            input_groups=groups,
            strategy=codecs.ClusteringStrategy(
                strategy_class_name=self.strategy_class,
                strategy_params=dict(self.strategy_params),
                version=PLAN_VERSION,
            ),
            extra_metadata=dict(self.extra_metadata),
            version=PLAN_VERSION,
            preserve_hoodie_metadata=self.preserve_hoodie_metadata,
        )
        return codecs.RequestedReplaceMetadata(
            operation_type=codecs.CLUSTER_OPERATION,
            clustering_plan=plan,
            extra_metadata={},
            version=PLAN_VERSION,
        )

    @classmethod
    def from_requested_metadata(
        cls, requested: codecs.RequestedReplaceMetadata, paths: PathQualifier, source: str
    ) -> PlannedClustering:
        """Read a clustering plan (ours or Hudi's); CorruptTableError names `source` if it is not one."""
        plan = requested.clustering_plan
        if not requested.is_clustering or plan is None:
            raise CorruptTableError(
                f"{source}: not a clustering plan (operationType {requested.operation_type!r})"
            )
        groups = []
        for index, group in enumerate(plan.input_groups or ()):
            slices = tuple(_planned_slice(info, paths, source) for info in group.slices or ())
            partitions = {s.partition_path for s in slices}
            if len(partitions) != 1:
                raise CorruptTableError(
                    f"{source}: clustering group {index} spans partitions {sorted(partitions)}"
                )
            groups.append(
                PlannedGroup(
                    partition_path=partitions.pop(),
                    slices=slices,
                    num_output_file_groups=group.num_output_file_groups or 1,
                    metrics=dict(group.metrics or {}),
                )
            )
        strategy = plan.strategy
        return cls(
            groups=tuple(groups),
            strategy_class=(strategy.strategy_class_name or "") if strategy else "",
            strategy_params=dict((strategy.strategy_params or {}) if strategy else {}),
            extra_metadata=dict(plan.extra_metadata or {}),
            preserve_hoodie_metadata=bool(plan.preserve_hoodie_metadata),
        )


def group_metrics(slices: Sequence[PlannedSlice], parquet_max_file_size_bytes: int) -> dict[str, float]:
    """`FileSliceMetricUtils.addFileSliceCommonMetrics`: MB are whole mebibytes (Java's long division)."""
    log_files = sum(len(s.log_file_paths) for s in slices)
    base_bytes = sum(s.base_file_size_bytes or 0 for s in slices)
    # Log sizes are not tracked per slice here; the planner only takes slices without log files.
    read_mb = base_bytes // MIB
    write_bytes = sum(
        s.base_file_size_bytes if s.base_file_size_bytes else parquet_max_file_size_bytes for s in slices
    )
    write_mb = write_bytes // MIB
    return {
        TOTAL_IO_READ_MB: float(read_mb),
        TOTAL_IO_WRITE_MB: float(write_mb),
        TOTAL_IO_MB: float(read_mb + write_mb),
        TOTAL_LOG_FILES_SIZE: 0.0,
        TOTAL_LOG_FILES: float(log_files),
    }


def _slice_info(s: PlannedSlice, paths: PathQualifier) -> codecs.SliceInfo:
    return codecs.SliceInfo(
        data_file_path=paths.qualify(s.base_file_path) if s.base_file_path else "",
        delta_file_paths=tuple(paths.qualify(p) for p in s.log_file_paths),
        file_id=s.file_id,
        partition_path=s.partition_path,
        bootstrap_file_path="",
        version=PLAN_VERSION,
    )


def _planned_slice(info: codecs.SliceInfo, paths: PathQualifier, source: str) -> PlannedSlice:
    partition = info.partition_path or ""
    file_id = info.file_id or ""
    # `relativize` applies the confinement rule of `service.table.paths` to each path; a file must
    # also lie directly in the slice's partition, itself a base-relative path inside the table.
    if partition and isinstance(refused := check_relative_path(partition), Refused):
        raise CorruptTableError(f"{source}: slice partitionPath {partition!r} refused: {refused.reason}")
    base_path = paths.relativize(info.data_file_path) if info.data_file_path else ""
    log_paths = tuple(paths.relativize(p) for p in info.delta_file_paths or ())
    for path in (base_path, *log_paths) if base_path else log_paths:
        if (outside := check_in_partition(path, partition)) is not None:
            raise CorruptTableError(f"{source}: slice file {path!r} refused: {outside.reason}")
    if base_path:
        base = parse_base_file(posixpath.dirname(base_path), posixpath.basename(base_path))
        base_instant = base.instant_time
    elif log_paths:
        log = parse_log_file(posixpath.dirname(log_paths[0]), posixpath.basename(log_paths[0]))
        if log is None:
            raise CorruptTableError(
                f"{source}: slice {file_id!r} names an unparsable log file {log_paths[0]!r}"
            )
        base_instant = log.base_instant_time
    else:
        raise CorruptTableError(f"{source}: slice {file_id!r} in partition {partition!r} has no files")
    return PlannedSlice(partition, file_id, base_instant, base_path, None, log_paths)
