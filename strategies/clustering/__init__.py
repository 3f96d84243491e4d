"""Clustering plan strategies: which file slices a clustering rewrites, decided as Hudi 0.15 decides.

Pure: planners take a file-system view snapshot (with its timeline and facts), the table's
`ClusteringConfig` and an injected `now`, and return a typed plan or None with a reason; the trigger
takes the timeline, a reader of `.requested` plans and, for the daemon's data triggers, the small
files per partition (`small_files`). Nothing here writes to storage, locks or reads the clock.
"""

from __future__ import annotations

from strategies.clustering.java_order import java_hash_set_order, java_string_hash
from strategies.clustering.model import group_metrics
from strategies.clustering.partition_filter import (
    candidate_partitions,
    day_rolling,
    filter_partitions,
    recent_days,
    regex_matched,
    select_partitions,
    selected_range,
)
from strategies.clustering.size_based import (
    DEFAULT_PARQUET_MAX_FILE_SIZE_BYTES,
    EligibilityCounts,
    PlanOutcome,
    build_groups,
    eligible_slices,
    java_view_order,
    output_file_groups,
    plan_clustering,
    within_budget,
)
from strategies.clustering.small_files import PartitionSmallFiles, SmallFiles, small_files
from strategies.clustering.trigger import (
    ClusteringStep,
    RequestedPlanReader,
    TriggerDecision,
    TriggerMode,
    clustering_due,
    commits_since,
    is_clustering_instant,
    last_clustering_instant,
    pending_clustering_instants,
)

__all__ = [
    "DEFAULT_PARQUET_MAX_FILE_SIZE_BYTES",
    "ClusteringStep",
    "EligibilityCounts",
    "PartitionSmallFiles",
    "PlanOutcome",
    "RequestedPlanReader",
    "SmallFiles",
    "TriggerDecision",
    "TriggerMode",
    "build_groups",
    "candidate_partitions",
    "clustering_due",
    "commits_since",
    "day_rolling",
    "eligible_slices",
    "filter_partitions",
    "group_metrics",
    "is_clustering_instant",
    "java_hash_set_order",
    "java_string_hash",
    "java_view_order",
    "last_clustering_instant",
    "output_file_groups",
    "pending_clustering_instants",
    "plan_clustering",
    "recent_days",
    "regex_matched",
    "select_partitions",
    "selected_range",
    "small_files",
    "within_budget",
]
