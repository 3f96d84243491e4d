"""Which partitions a clean scans (`CleanPlanner.getPartitionPathsToClean`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from service.config.cleaning import CleanConfig, CleaningPolicy
from service.table.instant import Action, Instant
from service.table.timeline import Timeline
from strategies.cleaning.snapshot import LastClean


@dataclass(frozen=True)
class PartitionScope:
    """`partitions` None means every partition of the table (a full scan)."""

    partitions: frozenset[str] | None
    incremental: bool = False


NOTHING = PartitionScope(frozenset())
FULL = PartitionScope(None)


def partitions_to_scan(
    timeline: Timeline,
    ectr: Instant | None,
    last_clean: LastClean | None,
    commit_partitions: Mapping[str, frozenset[str]],
    config: CleanConfig,
    partitioned: bool = True,
) -> PartitionScope:
    """KEEP_LATEST_FILE_VERSIONS scans everything. The commit-based policies scan nothing without an
    ECTR; in incremental mode only the partitions of completed commits in [previous ECTR, new ECTR),
    when the last clean's ECTR is still on the active commits timeline; otherwise everything.

    In incremental mode Hudi 0.15 also rescans the partitions of savepoints removed since the last
    clean (partitioned tables only), read from that clean's `savepointed_timestamps`.
    """
    if config.policy is CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
        return FULL
    if ectr is None:
        return NOTHING
    if not config.incremental_mode or last_clean is None or last_clean.empty:
        return FULL
    previous = last_clean.earliest_commit_to_retain
    first_commit = timeline.commits().first
    if not previous or (first_commit is not None and previous < first_commit.timestamp):
        return FULL  # the previous ECTR was archived: the commits in between are unknown
    completed = timeline.commits().completed()
    touched: set[str] = set()
    for instant in completed:
        if previous <= instant.timestamp < ectr.timestamp:
            touched |= _partitions_of(instant, commit_partitions)
    if partitioned and last_clean.savepointed_timestamps:
        current = {i.timestamp for i in timeline.by_actions([Action.SAVEPOINT]).completed()}
        for removed in set(last_clean.savepointed_timestamps) - current:
            # Java fails on a removed savepoint whose commit was archived; scanning less is safe.
            commit = next((i for i in completed if i.timestamp == removed), None)
            if commit is not None:
                touched |= _partitions_of(commit, commit_partitions)
    return PartitionScope(frozenset(touched), incremental=True)


def _partitions_of(instant: Instant, commit_partitions: Mapping[str, frozenset[str]]) -> frozenset[str]:
    try:
        return commit_partitions[instant.timestamp]
    except KeyError:
        raise ValueError(f"no partitions decoded for completed commit {instant}") from None
