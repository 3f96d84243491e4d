"""When a clean is due: Hudi's NUM_COMMITS trigger (`CleanPlanActionExecutor.needsCleaning`), and the
daemon's `cleaning.max_interval_hours` (at least that often while something may have become eligible).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from service.config.cleaning import CleanConfig, CleaningPolicy, CleaningTriggerStrategy
from service.errors import ConfigError
from service.table.timeline import Timeline, parse_instant_time
from strategies.cleaning.snapshot import LastClean


def commits_since_last_clean(timeline: Timeline, last_clean: LastClean | None) -> int:
    """Completed commits/deltacommits/replacecommits after the last clean's lastCompletedCommitTimestamp.

    Without a (readable, non-empty) completed clean every completed commit counts, as in Java.
    """
    completed = timeline.commits().completed()
    if last_clean is None or last_clean.empty:
        return len(completed)
    return len(completed.after(last_clean.last_completed_commit_timestamp))


def clean_due(
    timeline: Timeline,
    last_clean: LastClean | None,
    config: CleanConfig,
    max_interval: timedelta | None = None,
    now: datetime | None = None,
) -> bool:
    """Hudi's trigger, or `max_interval` passed (`now`: aware, in the writers' time zone)."""
    if config.trigger_strategy is not CleaningTriggerStrategy.NUM_COMMITS:
        raise ConfigError(f"unsupported cleaning trigger strategy {config.trigger_strategy}")
    commits = commits_since_last_clean(timeline, last_clean)
    if commits >= config.max_commits:
        return True
    return max_interval is not None and interval_due(timeline, last_clean, config, max_interval, now, commits)


def interval_due(
    timeline: Timeline,
    last_clean: LastClean | None,
    config: CleanConfig,
    max_interval: timedelta,
    now: datetime | None,
    commits: int,
) -> bool:
    """`max_interval` passed since the last clean (or, with none, the oldest instant on the active
    timeline) and something may have become eligible: a commit since that clean, or, under
    KEEP_LATEST_BY_HOURS, time alone (its retention moves with the clock)."""
    if now is None or now.tzinfo is None:
        raise ValueError("clean_due: a max interval needs an aware `now`")
    if commits == 0 and config.policy is not CleaningPolicy.KEEP_LATEST_BY_HOURS:
        return False
    reference = last_clean.timestamp if last_clean is not None else None
    if reference is None:
        first = timeline.first
        reference = first.timestamp if first is not None else None
    if reference is None:
        return False
    return now - parse_instant_time(reference, now.tzinfo) >= max_interval
