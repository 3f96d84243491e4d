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

The daemon's per-table `clustering:` section (`ClusteringSchedule`) adds, beside the commit count:
- `min_interval_minutes`: no new plan sooner than that after the last clustering was planned
  (whatever else says it is due; an explicit MANUAL request is not held);
- `small_file_count_trigger` / `small_file_bytes_trigger`: due when one partition's small files
  reach that many files or bytes;
- `max_interval_hours`: due when that long passed since the last clustering (or, with none, since
  the oldest instant on the active timeline) and the planner would form a group.
The data triggers read small files (`small_files.SmallFiles`, which needs a file-system view): a
decision asks for them (`needs_small_files`) only when the timeline alone does not decide, and the
caller asks again with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from service.config.clustering import ClusteringConfig
from service.config.schedule import ClusteringSchedule
from service.table.instant import Action, Instant
from service.table.timeline import Timeline, parse_instant_time
from strategies.clustering.small_files import SmallFiles


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
    # WAIT on the timeline alone, but a data trigger may fire: ask again with the small files.
    needs_small_files: bool = False

    @property
    def due(self) -> bool:
        """Whether a new plan should be scheduled now."""
        return self.step is ClusteringStep.SCHEDULE


def is_clustering_instant(instant: Instant, plans: RequestedPlanReader) -> bool:
    """Java's `ClusteringUtils.isClusteringInstant`: a `clustering` instant (timeline layout 2 writes a
    pending clustering under that action), or a replacecommit whose requested plan says CLUSTER."""
    if instant.action is Action.CLUSTERING:
        return True
    return instant.action is Action.REPLACE_COMMIT and plans.is_clustering_plan(instant)


def pending_clustering_instants(timeline: Timeline, plans: RequestedPlanReader) -> list[Instant]:
    return [i for i in timeline.pending() if is_clustering_instant(i, plans)]


def last_clustering_instant(timeline: Timeline, plans: RequestedPlanReader) -> Instant | None:
    replaces = timeline.by_actions([Action.REPLACE_COMMIT]).instants
    return next((i for i in reversed(replaces) if is_clustering_instant(i, plans)), None)


def commits_since(timeline: Timeline, timestamp: str | None) -> int:
    return len(timeline.commits().completed().after(timestamp or "0"))


def clustering_due(
    timeline: Timeline,
    config: ClusteringConfig,
    mode: TriggerMode,
    plans: RequestedPlanReader,
    schedule: ClusteringSchedule | None = None,
    now: datetime | None = None,
    small_files: SmallFiles | None = None,
) -> TriggerDecision:
    """What to do next. With a `schedule`, `now` (aware, in the writers' time zone) is required."""
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

    def decide(step: ClusteringStep, reason: str, needs_small_files: bool = False) -> TriggerDecision:
        return TriggerDecision(step, reason, None, last_time, count, needs_small_files)

    if schedule is not None and now is None:
        raise ValueError("clustering_due: a schedule needs `now`")
    if schedule is not None and now is not None and mode is not TriggerMode.MANUAL and last_time:
        held = _min_interval_hold(schedule, last_time, now)
        if held is not None:
            return decide(ClusteringStep.WAIT, held)
    threshold = {
        TriggerMode.ASYNC: config.async_max_commits,
        TriggerMode.INLINE: config.inline_max_commits,
        TriggerMode.MANUAL: 0,
    }[mode]
    since = f"since the last clustering {last_time}" if last_time else "and no clustering yet"
    if count >= threshold:
        return decide(ClusteringStep.SCHEDULE, f"{count} completed commits {since} (threshold {threshold})")
    waiting = f"{count} completed commits {since}; waiting for {threshold} ({mode.value.lower()} max commits)"
    if schedule is None or now is None or not schedule.needs_small_files:
        return decide(ClusteringStep.WAIT, waiting)
    if small_files is None:
        return decide(ClusteringStep.WAIT, waiting, needs_small_files=True)
    fired = _data_trigger(timeline, config, schedule, now, small_files, last_time)
    if fired is not None:
        return decide(ClusteringStep.SCHEDULE, fired)
    return decide(ClusteringStep.WAIT, f"{waiting}; {_small_files_summary(small_files)}")


def _min_interval_hold(schedule: ClusteringSchedule, last_time: str, now: datetime) -> str | None:
    assert now.tzinfo is not None, "now must be aware"
    elapsed = now - parse_instant_time(last_time, now.tzinfo)
    if elapsed >= schedule.min_interval:
        return None
    return (
        f"the last clustering {last_time} was planned {elapsed.total_seconds() / 60:.1f} min ago; "
        f"clustering.min_interval_minutes={schedule.min_interval_minutes:g}"
    )


def _data_trigger(
    timeline: Timeline,
    config: ClusteringConfig,
    schedule: ClusteringSchedule,
    now: datetime,
    small: SmallFiles,
    last_time: str | None,
) -> str | None:
    """Why a data trigger fires, or None."""
    count_limit, bytes_limit = schedule.small_file_count_trigger, schedule.small_file_bytes_trigger
    for p in small.partitions:
        if count_limit is not None and p.count >= count_limit:
            return (
                f"partition {p.partition!r} has {p.count} small files "
                f"(clustering.small_file_count_trigger={count_limit})"
            )
        if bytes_limit is not None and p.total_bytes >= bytes_limit:
            return (
                f"partition {p.partition!r} has {p.total_bytes} bytes in small files "
                f"(clustering.small_file_bytes_trigger={bytes_limit})"
            )
    interval = schedule.max_interval
    if interval is None or not small.plannable(config):
        return None
    assert now.tzinfo is not None, "now must be aware"
    reference = last_time or (timeline.instants[0].timestamp if timeline.instants else None)
    if reference is None:
        return None
    elapsed = now - parse_instant_time(reference, now.tzinfo)
    if elapsed < interval:
        return None
    what = (
        f"the last clustering {last_time}"
        if last_time
        else f"the oldest instant {reference} (no clustering yet)"
    )
    return (
        f"{elapsed.total_seconds() / 3600:.1f} h since {what} and {small.count} small files are eligible "
        f"(clustering.max_interval_hours={schedule.max_interval_hours:g})"
    )


def _small_files_summary(small: SmallFiles) -> str:
    busiest = max(small.partitions, key=lambda p: p.count, default=None)
    if busiest is None:
        return "no small files"
    return (
        f"{small.count} small files ({small.total_bytes} bytes) in {len(small.partitions)} partitions, "
        f"at most {busiest.count} in {busiest.partition!r}"
    )
