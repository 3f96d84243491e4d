"""Compaction strategies: when a compaction is due and which file slices it takes, as Hudi 0.15 decides.

Pure: the trigger takes the timeline and the table's `CompactionConfig`; the planner takes a
file-system view snapshot. Nothing here writes to storage or locks.
"""

from __future__ import annotations

from strategies.compaction.planner import (
    CompactionPlanOutcome,
    PlannedCompaction,
    PlannedOperation,
    bounded_io,
    candidate_operations,
    capture_metrics,
    order_and_filter,
    pending_file_groups,
    plan_compaction,
)
from strategies.compaction.trigger import (
    CompactionTriggerDecision,
    DeltaCommitsSince,
    compaction_due,
    delta_commits_since_last_compaction,
    delta_commits_since_last_compaction_request,
)

__all__ = [
    "CompactionPlanOutcome",
    "CompactionTriggerDecision",
    "DeltaCommitsSince",
    "PlannedCompaction",
    "PlannedOperation",
    "bounded_io",
    "candidate_operations",
    "capture_metrics",
    "compaction_due",
    "delta_commits_since_last_compaction",
    "delta_commits_since_last_compaction_request",
    "order_and_filter",
    "pending_file_groups",
    "plan_compaction",
]
