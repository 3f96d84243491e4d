"""When compaction is due: Hudi 0.15's `ScheduleCompactionActionExecutor.needCompact`.

The count is `CompactionUtils.getDeltaCommitsSinceLatestCompaction`: deltacommit instants in any
state (requested, inflight, completed) after the last completed `commit` or `replacecommit` (Java's
`getCommitTimeline`: on a merge-on-read table a compaction, a clustering or an insert overwrite),
measured from that instant; with none, every deltacommit, measured from the first one. With no
deltacommit at all nothing is due, whatever the strategy. `NUM_COMMITS_AFTER_LAST_REQUEST` counts
after the newest pending compaction instead, when there is one
(`getDeltaCommitsSinceLatestCompactionRequest`). Elapsed time is between the instant being scheduled
and that reference instant, in whole seconds of each (`parsedToSeconds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import tzinfo

from service.config.compaction import CompactionConfig, CompactionTriggerStrategy
from service.table.instant import Action
from service.table.timeline import Timeline, parse_instant_time

_COMMIT_TIMELINE = (Action.COMMIT, Action.REPLACE_COMMIT)


@dataclass(frozen=True)
class DeltaCommitsSince:
    """Deltacommits counted by the trigger, and the instant they are counted from."""

    count: int
    reference_instant: str
    reference_is_compaction: bool  # False: the first deltacommit (no completed commit yet)


@dataclass(frozen=True)
class CompactionTriggerDecision:
    due: bool
    reason: str
    delta_commits: int = 0
    reference_instant: str | None = None
    elapsed_seconds: int | None = None


def delta_commits_since_last_compaction(timeline: Timeline) -> DeltaCommitsSince | None:
    """`CompactionUtils.getDeltaCommitsSinceLatestCompaction`; None without any deltacommit to count
    from (no completed commit and no deltacommit)."""
    last = timeline.by_actions(_COMMIT_TIMELINE).completed().last
    return _since(timeline, last.timestamp if last is not None else None)


def delta_commits_since_last_compaction_request(timeline: Timeline) -> DeltaCommitsSince | None:
    """`CompactionUtils.getDeltaCommitsSinceLatestCompactionRequest`: from the newest pending
    compaction when there is one, else as `delta_commits_since_last_compaction`."""
    pending = timeline.by_actions([Action.COMPACTION]).pending().last
    if pending is not None:
        return _since(timeline, pending.timestamp)
    return delta_commits_since_last_compaction(timeline)


def _since(timeline: Timeline, reference: str | None) -> DeltaCommitsSince | None:
    deltas = timeline.by_actions([Action.DELTA_COMMIT])
    if reference is not None:
        return DeltaCommitsSince(len(deltas.after(reference)), reference, True)
    first = deltas.first
    if first is None:
        return None
    return DeltaCommitsSince(len(deltas), first.timestamp, False)


def _epoch_seconds(instant_time: str, zone: tzinfo) -> int:
    # Java: `parseDateFromInstantTimeSafely(time).getTime() / 1000`, each instant truncated to its second.
    return math.floor(parse_instant_time(instant_time, zone).timestamp())


def compaction_due(
    timeline: Timeline, config: CompactionConfig, instant_time: str, zone: tzinfo
) -> CompactionTriggerDecision:
    """Whether scheduling compaction at `instant_time` is due under `config.trigger_strategy`."""
    strategy = config.trigger_strategy
    if strategy is CompactionTriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST:
        since = delta_commits_since_last_compaction_request(timeline)
    else:
        since = delta_commits_since_last_compaction(timeline)
    if since is None:
        return CompactionTriggerDecision(False, "no deltacommit on the timeline: nothing to compact")
    elapsed = _epoch_seconds(instant_time, zone) - _epoch_seconds(since.reference_instant, zone)
    by_count = since.count >= config.max_delta_commits
    by_time = elapsed >= config.max_delta_seconds
    due = {
        CompactionTriggerStrategy.NUM_COMMITS: by_count,
        CompactionTriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: by_count,
        CompactionTriggerStrategy.TIME_ELAPSED: by_time,
        CompactionTriggerStrategy.NUM_OR_TIME: by_count or by_time,
        CompactionTriggerStrategy.NUM_AND_TIME: by_count and by_time,
    }[strategy]
    what = "the last compaction" if since.reference_is_compaction else "the first deltacommit"
    reason = (
        f"{since.count} deltacommits (threshold {config.max_delta_commits}) and {elapsed}s "
        f"(threshold {config.max_delta_seconds}s) since {what} {since.reference_instant}; "
        f"{strategy.value}: {'due' if due else 'not due'}"
    )
    return CompactionTriggerDecision(due, reason, since.count, since.reference_instant, elapsed)
