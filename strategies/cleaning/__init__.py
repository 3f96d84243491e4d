"""Cleaning policies: which old file versions a clean deletes, decided exactly as Hudi 0.15's cleaner.

Pure: every function takes a loaded timeline, file-system view and decoded timeline facts
(`CleanSnapshot`), the table's `CleanConfig` and an injected `now`; none touches storage or locks.
"""

from __future__ import annotations

from service.config.cleaning import DEFAULT_MAX_DELETE_FRACTION
from strategies.cleaning.partitions import PartitionScope, partitions_to_scan
from strategies.cleaning.plan import CleanPlan, CleanTarget
from strategies.cleaning.planner import CleanPlanning, plan_clean
from strategies.cleaning.retention import RETENTION_ACTIONS, earliest_commit_to_retain
from strategies.cleaning.safety import (
    VolumeCount,
    count_volume,
    file_sizes,
    latest_snapshot_paths,
    live_file_sizes,
    plan_digest,
    refuse_latest_snapshot_targets,
    suspect_replaced_groups,
    volume_refusal,
)
from strategies.cleaning.snapshot import CleanSnapshot, LastClean
from strategies.cleaning.trigger import clean_due, commits_since_last_clean

__all__ = [
    "DEFAULT_MAX_DELETE_FRACTION",
    "RETENTION_ACTIONS",
    "CleanPlan",
    "CleanPlanning",
    "CleanSnapshot",
    "CleanTarget",
    "LastClean",
    "PartitionScope",
    "VolumeCount",
    "clean_due",
    "commits_since_last_clean",
    "count_volume",
    "earliest_commit_to_retain",
    "file_sizes",
    "latest_snapshot_paths",
    "live_file_sizes",
    "partitions_to_scan",
    "plan_clean",
    "plan_digest",
    "refuse_latest_snapshot_targets",
    "suspect_replaced_groups",
    "volume_refusal",
]
