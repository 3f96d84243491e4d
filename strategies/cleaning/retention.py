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
from strategies.cleaning.snapshot import LastClean

RETENTION_ACTIONS = frozenset(
    {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING, Action.COMPACTION}
)


def earliest_commit_to_retain(
    timeline: Timeline, config: CleanConfig, now: datetime, zone: tzinfo, previous: str = ""
) -> Instant | None:
    """The policy's earliest commit to retain (`_by_policy`), capped by Hudi 1.2's
    `hoodie.clean.max.commits.to.clean` (`CleanerUtils.capCommitsToClean`): with `previous` (the last
    completed clean's earliest commit to retain, "" when none) and a cap N, when more than N
    completed instants lie at or after `previous` and before the policy's choice, the (N+1)-th of
    them is retained instead; the next clean goes on from there. Never on the first clean."""
    chosen = _by_policy(timeline, config, now, zone)
    cap = config.max_commits_to_clean
    capped_policies = (CleaningPolicy.KEEP_LATEST_COMMITS, CleaningPolicy.KEEP_LATEST_BY_HOURS)
    if chosen is None or cap is None or not previous or config.policy not in capped_policies:
        return chosen
    completed = timeline.by_actions(RETENTION_ACTIONS).completed().instants
    eligible = [i for i in completed if previous <= i.timestamp < chosen.timestamp]
    return eligible[cap] if len(eligible) > cap else chosen


def previous_retained(last_clean: LastClean | None) -> str:
    """The last completed clean's earliest commit to retain, the cap's `previous` ("" when none)."""
    return last_clean.earliest_commit_to_retain if last_clean is not None and not last_clean.empty else ""


def _by_policy(timeline: Timeline, config: CleanConfig, now: datetime, zone: tzinfo) -> Instant | None:
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
