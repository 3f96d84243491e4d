"""When a clean is due: Hudi's NUM_COMMITS trigger (`CleanPlanActionExecutor.needsCleaning`)."""

from __future__ import annotations

from service.config.cleaning import CleanConfig, CleaningTriggerStrategy
from service.errors import ConfigError
from service.table.timeline import Timeline
from strategies.cleaning.snapshot import LastClean


def commits_since_last_clean(timeline: Timeline, last_clean: LastClean | None) -> int:
    """Completed commits/deltacommits/replacecommits after the last clean's lastCompletedCommitTimestamp.

    Without a (readable, non-empty) completed clean every completed commit counts, as in Java.
    """
    completed = timeline.commits().completed()
    if last_clean is None or last_clean.empty:
        return len(completed)
    return len(completed.after(last_clean.last_completed_commit_timestamp))


def clean_due(timeline: Timeline, last_clean: LastClean | None, config: CleanConfig) -> bool:
    if config.trigger_strategy is not CleaningTriggerStrategy.NUM_COMMITS:
        raise ConfigError(f"unsupported cleaning trigger strategy {config.trigger_strategy}")
    return commits_since_last_clean(timeline, last_clean) >= config.max_commits
