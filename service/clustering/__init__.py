"""Clustering: schedule a plan, execute its groups on Spark, commit as a replacecommit, roll back."""

from service.clustering.orchestrator import (
    ClusteringResult,
    ScheduleOutcome,
    execute_clustering,
    schedule_clustering,
)
from service.clustering.purge import purge_pending_clustering

__all__ = [
    "ClusteringResult",
    "ScheduleOutcome",
    "execute_clustering",
    "purge_pending_clustering",
    "schedule_clustering",
]
