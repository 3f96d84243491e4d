"""The earliest commit to retain (ECTR), as Hudi's `CleanerUtils.getEarliestCommitToRetain` (0.15, 1.x).

The ECTR is chosen over `getCommitsAndCompactionTimeline()`: commit, deltacommit, replacecommit and
compaction instants in every state, and on timeline layout 2 the `clustering` action a pending
clustering is written under (1.x's `BaseTimelineV2` adds it; log compaction is in neither).
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from service.config.cleaning import CleanConfig, CleaningPolicy
from service.table.instant import Action, Instant
from service.table.timeline import Timeline, format_instant_time

RETENTION_ACTIONS = frozenset(
    {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING, Action.COMPACTION}
)


def earliest_commit_to_retain(
    timeline: Timeline, config: CleanConfig, now: datetime, zone: tzinfo
) -> Instant | None:
    """The completed instant from which every file version is kept; None when there is none.

    - KEEP_LATEST_COMMITS (N retained): with more than N completed instants, the (count - N)-th
      (0-based); if an instant is pending before it, the last completed instant before the first
      pending one instead (a pending clustering or compaction holds cleaning back).
    - KEEP_LATEST_BY_HOURS (H retained): the first completed instant at or after `now - H hours`,
      formatted in the timeline's zone. Hudi does not hold this one back for pending instants.
    - KEEP_LATEST_FILE_VERSIONS: none.
    """
    commits = timeline.by_actions(RETENTION_ACTIONS)
    completed = commits.completed().instants
    if config.policy is CleaningPolicy.KEEP_LATEST_COMMITS:
        retained = config.commits_retained
        if len(completed) <= retained:
            return None
        candidate = completed[len(completed) - retained]
        first_pending = commits.pending().first
        if first_pending is None or candidate.sort_key() <= first_pending.sort_key():
            return candidate
        before = [i for i in completed if i.timestamp < first_pending.timestamp]
        return before[-1] if before else None
    if config.policy is CleaningPolicy.KEEP_LATEST_BY_HOURS:
        # Java subtracts on the instant time-line (ZonedDateTime.minusHours), then formats in the zone.
        cutoff = format_instant_time((now - timedelta(hours=config.hours_retained)).astimezone(zone))
        return next((i for i in completed if i.timestamp >= cutoff), None)
    return None
