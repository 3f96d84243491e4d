"""Size-based clustering plan strategy: Hudi 0.15's `SparkSizeBasedClusteringPlanStrategy`.

Per partition (in the order `partition_filter.select_partitions` gives):

1. Eligible slices: the latest slice of every live file group that is not in a pending clustering,
   compaction or log compaction plan, whose base file is smaller than
   `hoodie.clustering.plan.strategy.small.file.limit` (`SparkSizeBasedClusteringPlanStrategy.
   getFileSlicesEligibleForClustering`). Log files do not matter: a merge-on-read slice with log
   files is eligible by its base file's size, a log-only slice (base size 0) always. They come in
   Java's file-group order (`java_order`).
2. Sorted by base file size, largest first (a stable sort with Java's comparator, which subtracts
   the sizes and truncates the difference to an `int`).
3. Filled greedily: a group is closed when adding the next slice would take it over
   `max.bytes.per.group`; the slice then starts the next group. Once a partition has
   `max.num.groups` closed groups it stops (the slice that triggered the cut is dropped).
4. The last open group is kept if it has two or more slices, or if single-group clustering is
   enabled or sort columns are set (`HoodieWriteConfig.shouldClusteringSingleGroup`).
5. `numOutputFileGroups = ceil(groupBytes / target.file.max.bytes)`.

Across partitions the groups are concatenated in partition order and cut at `max.num.groups`, so
earlier partitions take the budget first. The recent-days and selected-partitions strategy classes
are this strategy with their filter mode (`ClusteringConfig.partition_filter_mode` already says so).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TypeVar

from service.config.clustering import ClusteringConfig
from service.table.clustering_plan import PlannedClustering, PlannedGroup, PlannedSlice
from service.table.fs_view import FileSlice, FileSystemView, views_of
from strategies.clustering.java_order import java_hash_set_order
from strategies.clustering.model import group_metrics
from strategies.clustering.partition_filter import candidate_partitions, select_partitions

DEFAULT_PARQUET_MAX_FILE_SIZE_BYTES = 125_829_120  # hoodie.parquet.max.file.size


@dataclass
class EligibilityCounts:
    """Why latest slices were or were not taken, for the reason logged when nothing is planned."""

    partitions: int = 0
    latest_slices: int = 0
    eligible: int = 0
    pending_clustering: int = 0
    pending_compaction: int = 0
    with_log_files: int = 0  # of the eligible ones
    not_small: int = 0

    def add(self, other: EligibilityCounts) -> None:
        """Count `other`'s slices too (a partition surveyed apart)."""
        for counted in fields(self):
            setattr(self, counted.name, getattr(self, counted.name) + getattr(other, counted.name))

    def describe(self) -> str:
        return (
            f"{self.latest_slices} latest file slices in {self.partitions} partitions: "
            f"{self.eligible} eligible, {self.not_small} at or above the small file limit, "
            f"{self.pending_clustering} in pending clustering, {self.pending_compaction} in pending "
            f"compaction; {self.with_log_files} of the eligible with log files"
        )


@dataclass(frozen=True)
class PlanOutcome:
    """A plan, or None with the reason nothing was planned."""

    plan: PlannedClustering | None
    reason: str
    partitions: tuple[str, ...] = ()
    counts: EligibilityCounts = field(default_factory=EligibilityCounts)


def eligible_slices(
    view: FileSystemView, partition: str, config: ClusteringConfig, counts: EligibilityCounts | None = None
) -> list[FileSlice]:
    """Eligible latest slices of one partition, in the order Java's view yields them."""
    counts = counts if counts is not None else EligibilityCounts()
    counts.partitions += 1
    by_file_id: dict[str, FileSlice] = {}  # the eligible ones
    for file_slice in view.latest_file_slices(partition):
        counts.latest_slices += 1
        fg_id = file_slice.file_group_id
        if view.is_pending_clustering(fg_id):
            counts.pending_clustering += 1
        elif view.is_pending_compaction(fg_id):
            counts.pending_compaction += 1
        elif file_slice.base_size_bytes >= config.small_file_limit_bytes:
            counts.not_small += 1
        else:
            counts.eligible += 1
            counts.with_log_files += bool(file_slice.log_files)
            by_file_id[file_slice.file_id] = file_slice
    rank = {file_id: i for i, file_id in enumerate(java_view_order(view, partition))}
    return sorted(by_file_id.values(), key=lambda s: rank[s.file_id])


def java_view_order(view: FileSystemView, partition: str) -> list[str]:
    """Every file id with a base file in the partition's listing, in Java's view order (`java_order`).

    Java groups *all* listed base files (replaced, uncommitted and older ones too) before it filters,
    so they all count for the hash set's size. Listing order is taken as HDFS and object stores
    return it: by file name, which starts with `<fileId>_`.
    """
    file_ids = {fg.file_id for fg in view.file_groups_in(partition)}
    for path in view.uncommitted_files_in(partition):
        name = path.rpartition("/")[2]
        if not name.startswith("."):
            file_ids.add(name.split("_", 1)[0])
    return java_hash_set_order(sorted(file_ids, key=lambda file_id: f"{file_id}_"))


@dataclass(frozen=True)
class ClusteringSurvey:
    """What the planner reads of a table, gathered a batch of partitions at a time
    (`survey_partitions`): every listed partition, and for each the partition regex or explicit list
    admits, its eligible slices (in Java's view order) and their counts. It holds the small files'
    slices, never a view of the whole table."""

    listed: tuple[str, ...]  # sorted, as one view's `partitions`
    eligible: Mapping[str, tuple[tuple[FileSlice, ...], EligibilityCounts]]

    def of(self, partition: str) -> tuple[tuple[FileSlice, ...], EligibilityCounts]:
        """A partition's eligible slices and counts; a partition not listed has none (Java lists it
        as empty)."""
        return self.eligible.get(partition) or ((), EligibilityCounts(partitions=1))


ViewSource = FileSystemView | Iterable[FileSystemView] | ClusteringSurvey
_T = TypeVar("_T")


def per_candidate_partition(
    views: FileSystemView | Iterable[FileSystemView],
    config: ClusteringConfig,
    of: Callable[[FileSystemView, str], _T],
) -> tuple[tuple[str, ...], dict[str, _T]]:
    """Every listed partition (sorted, as one view's `partitions`), and `of(view, partition)` for each
    the partition regex or explicit list admits, a view (or batch) at a time."""
    listed: list[str] = []
    found: dict[str, _T] = {}
    for view in views_of(views):
        listed += view.partitions
        present = frozenset(view.partitions)
        for partition in candidate_partitions(view.partitions, config):
            if partition in present:
                found[partition] = of(view, partition)
    return tuple(sorted(listed)), found


def survey_partitions(source: ViewSource, config: ClusteringConfig) -> ClusteringSurvey:
    """The survey of a view or of its batches (each read once, in turn)."""
    if isinstance(source, ClusteringSurvey):
        return source

    def eligible(view: FileSystemView, partition: str) -> tuple[tuple[FileSlice, ...], EligibilityCounts]:
        counts = EligibilityCounts()
        return tuple(eligible_slices(view, partition, config, counts)), counts

    return ClusteringSurvey(*per_candidate_partition(source, config, eligible))


def _size(s: FileSlice, parquet_max_file_size_bytes: int) -> int:
    return s.base_file.size_bytes if s.base_file is not None else parquet_max_file_size_bytes


def _java_int(value: int) -> int:
    """A Java `(int)` cast of a long."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def output_file_groups(group_bytes: int, target_file_max_bytes: int) -> int:
    """`(int) Math.ceil(groupSize / (double) targetFileSize)`."""
    return math.ceil(group_bytes / float(target_file_max_bytes))


def build_groups(
    partition: str,
    slices: Sequence[FileSlice],
    config: ClusteringConfig,
    parquet_max_file_size_bytes: int = DEFAULT_PARQUET_MAX_FILE_SIZE_BYTES,
) -> list[PlannedGroup]:
    """`PartitionAwareClusteringPlanStrategy.buildClusteringGroupsForPartition` for one partition."""
    return _build_groups(partition, slices, config, parquet_max_file_size_bytes)[0]


def _build_groups(
    partition: str,
    slices: Sequence[FileSlice],
    config: ClusteringConfig,
    parquet_max_file_size_bytes: int,
) -> tuple[list[PlannedGroup], bool]:
    """The groups and whether the partition was only partly scheduled (the `max.num.groups` cut
    stopped it before its last slices: Hudi 1.x's `partialScheduled`)."""

    def size(s: FileSlice) -> int:
        return _size(s, parquet_max_file_size_bytes)

    def largest_first(a: FileSlice, b: FileSlice) -> int:
        return _java_int(size(b) - size(a))

    ordered = sorted(slices, key=functools.cmp_to_key(largest_first))
    closed: list[tuple[list[FileSlice], int]] = []
    current: list[FileSlice] = []
    current_bytes = 0
    partial = False
    for s in ordered:
        s_bytes = size(s)
        if current_bytes + s_bytes > config.max_bytes_per_group and current:
            closed.append((current, current_bytes))
            current, current_bytes = [], 0
            if len(closed) >= config.max_num_groups:
                partial = True
                break
        current.append(s)
        current_bytes += s_bytes
    single_group_allowed = config.single_group_clustering_enabled or bool(config.sort_columns_value)
    if current and (len(current) > 1 or single_group_allowed):
        closed.append((current, current_bytes))
    groups = []
    for members, group_bytes in closed:
        planned = tuple(PlannedSlice.of(s) for s in members)
        groups.append(
            PlannedGroup(
                partition_path=partition,
                slices=planned,
                num_output_file_groups=output_file_groups(group_bytes, config.target_file_max_bytes),
                metrics=group_metrics(planned, parquet_max_file_size_bytes),
                size_bytes=group_bytes,
            )
        )
    return groups, partial


def within_budget(groups: Sequence[PlannedGroup], max_bytes: int | None) -> list[PlannedGroup]:
    """The groups, in plan order, up to the first that would take the total over `max_bytes`.

    The product's per-run budget (`clustering.max_bytes_per_run`), applied after Hudi's
    `max.num.groups` cut: whole groups only, so a plan never rewrites more than the budget; the
    groups left out are planned by a later run. None: no budget.
    """
    if max_bytes is None:
        return list(groups)
    kept: list[PlannedGroup] = []
    total = 0
    for group in groups:
        size = _planned_bytes(group)
        if total + size > max_bytes:
            break
        kept.append(group)
        total += size
    return kept


def _planned_bytes(group: PlannedGroup) -> int:
    if group.size_bytes is not None:
        return group.size_bytes
    return sum(s.base_file_size_bytes or 0 for s in group.slices)


def plan_clustering(
    source: ViewSource,
    config: ClusteringConfig,
    now: datetime,
    parquet_max_file_size_bytes: int = DEFAULT_PARQUET_MAX_FILE_SIZE_BYTES,
    max_bytes_per_run: int | None = None,
) -> PlanOutcome:
    """A clustering plan for the snapshot `source` (a view, its batches of partitions, or their
    survey), or None and why.

    `now` is in the writers' time zone (DAY_ROLLING picks partitions by its hour);
    `max_bytes_per_run` caps the bytes the plan rewrites (`within_budget`).
    """
    survey = survey_partitions(source, config)
    partitions = select_partitions(survey.listed, config, now)
    if not partitions:
        return PlanOutcome(
            None,
            f"no partition selected (filter mode {config.partition_filter_mode.value}, "
            f"{len(survey.listed)} partitions listed)",
        )
    counts = EligibilityCounts()
    groups: list[PlannedGroup] = []
    # Hudi 1.x's `missingSchedulePartitions` (incremental table services, its default): partitions
    # whose candidates this plan does not all take, so that its incremental scheduler comes back.
    missing: list[str] = []
    for partition in partitions:
        slices, partition_counts = survey.of(partition)
        counts.add(partition_counts)
        built, partial = _build_groups(partition, slices, config, parquet_max_file_size_bytes)
        if partial or len(built) > config.max_num_groups:
            missing.append(partition)
        groups.extend(built[: config.max_num_groups])
    missing.extend(g.partition_path for g in groups[config.max_num_groups :])
    groups = groups[: config.max_num_groups]
    if not groups:
        lone = (
            "; a partition's lone eligible slice makes no group unless single-group clustering is "
            "enabled or sort columns are set"
            if counts.eligible
            else ""
        )
        reason = f"no data available to cluster: {counts.describe()}{lone}"
        return PlanOutcome(None, reason, tuple(partitions), counts)
    budgeted = within_budget(groups, max_bytes_per_run)
    if not budgeted:
        reason = (
            f"the first planned group ({_planned_bytes(groups[0])} bytes in {groups[0].partition_path!r}) "
            f"exceeds clustering.max_bytes_per_run={max_bytes_per_run}; raise it to at least "
            f"hoodie.clustering.plan.strategy.max.bytes.per.group={config.max_bytes_per_group}"
        )
        return PlanOutcome(None, reason, tuple(partitions), counts)
    deferred = len(groups) - len(budgeted)
    missing.extend(g.partition_path for g in groups[len(budgeted) :])
    groups = budgeted
    plan = PlannedClustering(
        groups=tuple(groups),
        strategy_class=config.execution_strategy_class,
        strategy_params=dict(config.strategy_params),
        missing_partitions=tuple(dict.fromkeys(missing)),
    )
    reason = (
        f"{len(groups)} groups, {sum(len(g.slices) for g in groups)} file slices, "
        f"{plan.input_bytes} bytes -> {plan.num_output_file_groups} file groups"
    )
    if deferred:
        reason += (
            f"; {deferred} more groups left for a later run "
            f"(clustering.max_bytes_per_run={max_bytes_per_run})"
        )
    return PlanOutcome(plan, reason, tuple(partitions), counts)
