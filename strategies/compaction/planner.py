"""Which file slices a compaction plan takes: Hudi 0.15's `HoodieCompactionPlanGenerator` with its
`CompactionStrategy` (default `LogFileSizeBasedCompactionStrategy`).

Candidates (`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`): the latest slice of every
live file group (`getLatestFileSlices`: replaced groups excluded) that has at least one log file
(`filterFileSlice`), unless its group is in a pending compaction or a pending clustering plan (a
pending log compaction does not exclude it: `filterLogCompactionOperations()` is false for
compaction). Each becomes an operation with its base file name, its log file names in
`HoodieLogFile.getLogFileComparator` order (oldest first) and the strategy's `captureMetrics`
(`FileSliceMetricUtils.addFileSliceCommonMetrics`), which Java's executor requires.

Strategies (`orderAndFilter`):
- `LogFileSizeBasedCompactionStrategy`: drop operations whose `TOTAL_LOG_FILES_SIZE` is below
  `hoodie.compaction.logfile.size.threshold`, sort by it, largest first (a stable sort), then bound.
- `BoundedIOCompactionStrategy`: take operations in order until `hoodie.compaction.target.io` MB of
  `TOTAL_IO_MB` are used up; the operation that crosses the bound is taken.
- `UnBoundedCompactionStrategy`: every candidate.

Order before the strategy is Java's: partitions (sorted here; Java's partition listing order only
matters for ties), then the file-system view's file group order (`java_view_order`).

Timeline layout 2 (Hudi 1.x, table versions 8 and 9): a slice's log files count only when their
deltacommit completed strictly before the compaction instant (`BaseHoodieCompactionPlanGenerator`:
`isCompletedBefore(compactionInstant, log.deltaCommitTime)`); later ones belong to the slice the
compaction opens. The plan also names `missingSchedulePartitions`: the partitions of operations the
strategy dropped (`LogFileSizeBasedCompactionStrategy.orderAndFilter` and its bounded-IO parent, with
incremental table services on, Hudi 1.x's default), so that Hudi's incremental scheduler, which
otherwise looks only at partitions written since the last compaction, still reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from service.config.compaction import CompactionConfig, CompactionStrategyKind
from service.table.data_files import LogFile
from service.table.fs_view import FileGroupId, FileSlice, FileSystemView, views_of
from strategies.clustering.model import (
    MIB,
    TOTAL_IO_MB,
    TOTAL_IO_READ_MB,
    TOTAL_IO_WRITE_MB,
    TOTAL_LOG_FILES,
    TOTAL_LOG_FILES_SIZE,
)
from strategies.clustering.size_based import java_view_order


@dataclass(frozen=True)
class PlannedOperation:
    """One `HoodieCompactionOperation`: a file slice to merge into a new base file."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file_name: str | None  # None: a log-only slice
    log_file_names: tuple[str, ...]  # LogFileComparator order, oldest first
    metrics: Mapping[str, float]
    base_file_size_bytes: int = 0
    log_file_sizes: tuple[int, ...] = ()

    @property
    def file_group_id(self) -> FileGroupId:
        return (self.partition_path, self.file_id)

    @property
    def total_log_bytes(self) -> int:
        return int(self.metrics[TOTAL_LOG_FILES_SIZE])

    @property
    def total_io_mb(self) -> int:
        return int(self.metrics[TOTAL_IO_MB])


@dataclass(frozen=True)
class PlannedCompaction:
    operations: tuple[PlannedOperation, ...]
    # Partitions of candidates the strategy left out (`HoodieCompactionPlan.missingSchedulePartitions`).
    missing_partitions: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompactionPlanOutcome:
    """The plan (None when nothing is to be compacted) and why, with the counts behind it."""

    plan: PlannedCompaction | None
    reason: str
    candidates: int = 0
    excluded_pending: tuple[FileGroupId, ...] = field(default=())


def capture_metrics(file_slice: FileSlice, parquet_max_file_size_bytes: int) -> dict[str, float]:
    """`CompactionStrategy.captureMetrics` (`FileSliceMetricUtils.addFileSliceCommonMetrics` for one
    slice): read = base + logs, write = base or `hoodie.parquet.max.file.size`, in whole MiB each
    (`FSUtils.getSizeInMB`, long division); log bytes and count as they are."""
    log_bytes = sum(lf.size_bytes for lf in file_slice.log_files if lf.size_bytes >= 0)
    base_bytes = file_slice.base_size_bytes
    read_mb = (base_bytes + log_bytes) // MIB
    write_mb = (base_bytes if base_bytes > 0 else parquet_max_file_size_bytes) // MIB
    return {
        TOTAL_IO_READ_MB: float(read_mb),
        TOTAL_IO_WRITE_MB: float(write_mb),
        TOTAL_IO_MB: float(read_mb + write_mb),
        TOTAL_LOG_FILES_SIZE: float(log_bytes),
        TOTAL_LOG_FILES: float(len(file_slice.log_files)),
    }


def pending_file_groups(view: FileSystemView) -> frozenset[FileGroupId]:
    """File groups no new compaction may take: in a pending compaction or clustering plan."""
    return frozenset(view.facts.pending_compaction) | frozenset(view.facts.pending_clustering)


def candidate_operations(
    view: FileSystemView, parquet_max_file_size_bytes: int, logs_completed_before: str | None = None
) -> tuple[list[PlannedOperation], list[FileGroupId]]:
    """Every eligible slice as an operation, in Java's order; and the groups excluded as pending.
    `logs_completed_before` (layout 2): the compaction instant, before which a log's deltacommit must
    have completed for the log to be compacted."""
    pending = pending_file_groups(view)
    operations: list[PlannedOperation] = []
    excluded: list[FileGroupId] = []
    completed_before = _completed_before(view, logs_completed_before)
    for partition in sorted({fg.partition_path for fg in view.live_file_groups}):
        slices = (completed_before(s) for s in view.latest_file_slices(partition))
        latest = {s.file_id: s for s in slices if s.log_files}
        for file_id in java_view_order(view, partition):
            file_slice = latest.get(file_id)
            if file_slice is None:
                continue
            if file_slice.file_group_id in pending:
                excluded.append(file_slice.file_group_id)
                continue
            operations.append(_operation(file_slice, parquet_max_file_size_bytes))
    return operations, excluded


def _completed_before(view: FileSystemView, instant_time: str | None) -> Callable[[FileSlice], FileSlice]:
    if instant_time is None:
        return lambda file_slice: file_slice
    done = {i.timestamp: i.completion_time or i.timestamp for i in view.timeline.completed()}
    first = view.timeline.first
    start = first.timestamp if first is not None else None

    def keep(log: LogFile) -> bool:
        completion = done.get(log.base_instant_time)
        if completion is None:  # archived: completed before the active timeline's first instant
            return start is not None and log.base_instant_time < start
        return completion < instant_time

    def filtered(file_slice: FileSlice) -> FileSlice:
        logs = tuple(lf for lf in file_slice.log_files if keep(lf))
        return file_slice if len(logs) == len(file_slice.log_files) else replace(file_slice, log_files=logs)

    return filtered


def _operation(file_slice: FileSlice, parquet_max_file_size_bytes: int) -> PlannedOperation:
    base = file_slice.base_file
    return PlannedOperation(
        partition_path=file_slice.partition_path,
        file_id=file_slice.file_id,
        base_instant_time=file_slice.base_instant_time,
        base_file_name=base.file_name if base is not None else None,
        log_file_names=tuple(lf.file_name for lf in file_slice.log_files),
        metrics=capture_metrics(file_slice, parquet_max_file_size_bytes),
        base_file_size_bytes=file_slice.base_size_bytes,
        log_file_sizes=tuple(lf.size_bytes for lf in file_slice.log_files),
    )


def bounded_io(operations: Sequence[PlannedOperation], target_io_mb: int) -> list[PlannedOperation]:
    """`BoundedIOCompactionStrategy.orderAndFilter`: in order, until the IO budget is used up; the
    operation that uses it up is taken too."""
    chosen: list[PlannedOperation] = []
    remaining = target_io_mb
    for op in operations:
        remaining -= op.total_io_mb
        chosen.append(op)
        if remaining <= 0:
            break
    return chosen


def order_and_filter(
    operations: Sequence[PlannedOperation], config: CompactionConfig
) -> tuple[list[PlannedOperation], list[str]]:
    """The operations the strategy takes, in its order, and the partitions of those it dropped (each
    once, in the order they were dropped: below the log-size threshold first, then past the IO bound)."""
    kind = config.require_strategy()
    if kind is CompactionStrategyKind.UNBOUNDED:
        return list(operations), []
    dropped: list[PlannedOperation] = []
    kept = list(operations)
    if kind is CompactionStrategyKind.LOG_FILE_SIZE_BASED:
        threshold = config.log_file_size_threshold_bytes
        dropped = [op for op in operations if op.metrics[TOTAL_LOG_FILES_SIZE] < threshold]
        kept = [op for op in operations if op.metrics[TOTAL_LOG_FILES_SIZE] >= threshold]
        # `sorted(this)` compares `TOTAL_LOG_FILES_SIZE.longValue()`, largest first; Java's sort is stable.
        kept.sort(key=lambda op: -op.total_log_bytes)
    chosen = bounded_io(kept, config.target_io_mb)
    dropped += kept[len(chosen) :]
    return chosen, list(dict.fromkeys(op.partition_path for op in dropped))


def plan_compaction(
    views: FileSystemView | Iterable[FileSystemView],
    config: CompactionConfig,
    parquet_max_file_size_bytes: int,
    logs_completed_before: str | None = None,
) -> CompactionPlanOutcome:
    """The plan Hudi's scheduler writes for this view, or None with the reason nothing is planned.
    `views`: the view, or its batches of disjoint partitions (`HudiTable.iter_views`, read once: one
    batch is held at a time, and the candidates found). `logs_completed_before`: the compaction
    instant on layout 2 (see `candidate_operations`)."""
    candidates: list[PlannedOperation] = []
    excluded: list[FileGroupId] = []
    for view in views_of(views):
        found, pending = candidate_operations(view, parquet_max_file_size_bytes, logs_completed_before)
        candidates += found
        excluded += pending
    # Each batch in partition order; a stable sort by partition puts the batches in the table's.
    candidates.sort(key=lambda op: op.partition_path)
    excluded.sort(key=lambda fg_id: fg_id[0])
    if not candidates:
        why = "no file slice with log files"
        if excluded:
            why += f" outside pending compaction or clustering plans ({len(excluded)} file groups pending)"
        return CompactionPlanOutcome(None, why, 0, tuple(excluded))
    chosen, missing = order_and_filter(candidates, config)
    if not chosen:
        reason = (
            f"{len(candidates)} file slices with log files, none selected by {config.strategy_class} "
            f"(hoodie.compaction.logfile.size.threshold={config.log_file_size_threshold_bytes})"
        )
        return CompactionPlanOutcome(None, reason, len(candidates), tuple(excluded))
    reason = (
        f"{len(chosen)} of {len(candidates)} file slices with log files selected by {config.strategy_class}"
    )
    plan = PlannedCompaction(tuple(chosen), tuple(missing))
    return CompactionPlanOutcome(plan, reason, len(candidates), tuple(excluded))
