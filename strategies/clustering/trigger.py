"""When to schedule clustering: Hudi 0.15's `ClusteringPlanActionExecutor.createClusteringPlan` check,
plus the product's rule that a pending plan is executed before a new one is scheduled.

- At most one pending clustering plan per table: while one is pending (requested or inflight) the
  next step is to execute it, never to schedule another (Java writers would refuse a file group in
  two plans, and an older plan may be Hudi's own).
- Otherwise clustering is due when the completed commits (commit, deltacommit, replacecommit)
  after the last clustering number at least `async.max.commits` (ASYNC) or `inline.max.commits`
  (INLINE); MANUAL (a one-off `cluster --mode schedule`, like HoodieClusteringJob with neither
  inline nor async clustering configured) skips the count. The last clustering is, as Java's
  `getLastClusteringInstant`, the newest replacecommit in any state whose `.requested` plan has
  operationType `CLUSTER`; with no pending plan that is the last completed clustering.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from service.config.clustering import ClusteringConfig
from service.table.instant import Action, Instant
from service.table.timeline import Timeline


class RequestedPlanReader(Protocol):
    """Reads an instant's `.requested` file (`TimelineFactsReader` is one, with caching)."""

    def is_clustering_plan(self, instant: Instant) -> bool:
        """Whether the `.requested` file exists and its operationType is `CLUSTER`."""
        ...


class TriggerMode(StrEnum):
    ASYNC = "ASYNC"  # the daemon: hoodie.clustering.async.max.commits
    INLINE = "INLINE"  # hoodie.clustering.inline.max.commits
    MANUAL = "MANUAL"  # an explicit request: no commit count


class ClusteringStep(StrEnum):
    SCHEDULE = "SCHEDULE"
    EXECUTE_PENDING = "EXECUTE_PENDING"
    WAIT = "WAIT"


@dataclass(frozen=True)
class TriggerDecision:
    step: ClusteringStep
    reason: str
    pending_instant: str | None = None  # the plan to execute first (the oldest pending one)
    last_clustering_instant: str | None = None
    commits_since_last_clustering: int = 0

    @property
    def due(self) -> bool:
        """Whether a new plan should be scheduled now."""
        return self.step is ClusteringStep.SCHEDULE


def is_clustering_instant(instant: Instant, plans: RequestedPlanReader) -> bool:
    """Java's `ClusteringUtils.isClusteringInstant`: a replacecommit whose requested plan says CLUSTER."""
    return instant.action is Action.REPLACE_COMMIT and plans.is_clustering_plan(instant)


def pending_clustering_instants(timeline: Timeline, plans: RequestedPlanReader) -> list[Instant]:
    return [i for i in timeline.pending() if is_clustering_instant(i, plans)]


def last_clustering_instant(timeline: Timeline, plans: RequestedPlanReader) -> Instant | None:
    replaces = timeline.by_actions([Action.REPLACE_COMMIT]).instants
    return next((i for i in reversed(replaces) if is_clustering_instant(i, plans)), None)


def commits_since(timeline: Timeline, timestamp: str | None) -> int:
    return len(timeline.commits().completed().after(timestamp or "0"))


def clustering_due(
    timeline: Timeline, config: ClusteringConfig, mode: TriggerMode, plans: RequestedPlanReader
) -> TriggerDecision:
    pending = pending_clustering_instants(timeline, plans)
    last = last_clustering_instant(timeline, plans)
    last_time = last.timestamp if last else None
    count = commits_since(timeline, last_time)
    if pending:
        oldest = pending[0]
        return TriggerDecision(
            ClusteringStep.EXECUTE_PENDING,
            f"clustering {oldest.timestamp} is pending ({oldest.state.name.lower()}); "
            "it is executed before a new plan is scheduled",
            oldest.timestamp,
            last_time,
            count,
        )
    threshold = {
        TriggerMode.ASYNC: config.async_max_commits,
        TriggerMode.INLINE: config.inline_max_commits,
        TriggerMode.MANUAL: 0,
    }[mode]
    since = f"since the last clustering {last_time}" if last_time else "and no clustering yet"
    if count < threshold:
        return TriggerDecision(
            ClusteringStep.WAIT,
            f"{count} completed commits {since}; waiting for {threshold} ({mode.value.lower()} max commits)",
            None,
            last_time,
            count,
        )
    return TriggerDecision(
        ClusteringStep.SCHEDULE,
        f"{count} completed commits {since} (threshold {threshold})",
        None,
        last_time,
        count,
    )
