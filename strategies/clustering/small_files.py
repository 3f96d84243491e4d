"""Small files per partition: what the data-driven clustering triggers and slot ordering read.

A small file is what the size-based planner would take (`size_based.eligible_slices`): the base file
of a latest slice below `hoodie.clustering.plan.strategy.small.file.limit`, not in a pending
clustering or compaction and without log files, in a partition the filter mode selects. Pure: a
function of the file-system view snapshot, the config and an injected `now`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from service.config.clustering import ClusteringConfig
from service.table.fs_view import FileSlice, FileSystemView
from service.table.timeline import parse_instant_time
from strategies.clustering.partition_filter import select_partitions
from strategies.clustering.size_based import (
    ClusteringSurvey,
    ViewSource,
    per_candidate_partition,
    survey_partitions,
)


@dataclass(frozen=True)
class PartitionSmallFiles:
    partition: str
    count: int
    total_bytes: int
    oldest_instant: str  # the base instant time of its oldest small file


@dataclass(frozen=True)
class SmallFiles:
    """Partitions holding small files (none listed when they hold none), in the planner's order."""

    partitions: tuple[PartitionSmallFiles, ...] = ()

    @property
    def count(self) -> int:
        return sum(p.count for p in self.partitions)

    @property
    def total_bytes(self) -> int:
        return sum(p.total_bytes for p in self.partitions)

    @property
    def oldest_instant(self) -> str | None:
        return min((p.oldest_instant for p in self.partitions), default=None)

    def oldest_age(self, now: datetime) -> timedelta:
        """How long the oldest small file has waited; `now` is in the writers' time zone."""
        oldest = self.oldest_instant
        if oldest is None or now.tzinfo is None:
            return timedelta(0)
        return max(now - parse_instant_time(oldest, now.tzinfo), timedelta(0))

    def plannable(self, config: ClusteringConfig) -> bool:
        """Whether the planner would form a group: two small files in one partition, or one when a
        one-slice group is kept (`ClusteringConfig.should_cluster_single_group`)."""
        least = 1 if config.should_cluster_single_group else 2
        return any(p.count >= least for p in self.partitions)


def small_files(
    source: ViewSource, config: ClusteringConfig, now: datetime, *, include_pending_clustering: bool = False
) -> SmallFiles:
    """The small files of the partitions the planner would look at (`now` in the writers' zone), in
    a view, its batches of partitions (`HudiTable.iter_views`) or their survey.

    `include_pending_clustering` also counts small files a pending clustering plan will rewrite
    (what executing it is worth), which the triggers leave out (they ask for a *new* plan); it reads
    views, not a survey.
    """
    if include_pending_clustering:
        if isinstance(source, ClusteringSurvey):
            raise ValueError("small files with pending clustering are read from views, not a survey")
        listed, by_partition = per_candidate_partition(
            source, config, lambda view, partition: _small_with_pending(view, partition, config)
        )
        chosen = [(p, by_partition.get(p, [])) for p in select_partitions(listed, config, now)]
    else:
        survey = survey_partitions(source, config)
        chosen = [(p, list(survey.of(p)[0])) for p in select_partitions(survey.listed, config, now)]
    found = []
    for partition, slices in chosen:
        if not slices:
            continue
        oldest = min(s.base_instant_time for s in slices)
        found.append(
            PartitionSmallFiles(partition, len(slices), sum(s.base_size_bytes for s in slices), oldest)
        )
    return SmallFiles(tuple(found))


def _small_with_pending(view: FileSystemView, partition: str, config: ClusteringConfig) -> list[FileSlice]:
    return [
        s
        for s in view.latest_file_slices(partition)
        if s.base_file is not None
        and not s.log_files
        and s.base_file.size_bytes < config.small_file_limit_bytes
        and not view.is_pending_compaction(s.file_group_id)
    ]
