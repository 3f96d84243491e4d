"""A clustering plan as data: groups of file slices, the execution strategy, the group metrics.

Its on-disk form (`T.replacecommit.requested`, Avro) is converted in `service/clustering/records.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from service.table.fs_view import FileGroupId, FileSlice

PLAN_VERSION = 1
MIB = 1024 * 1024

# FileSliceMetricUtils keys.
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


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
