"""Rolling metadata (Hudi 1.2): extra-metadata keys every commit carries forward from the ones before.

A writer configured with `hoodie.write.rolling.metadata.keys` (a checkpoint, a Kafka offset) finds a key
in the most recent completed commits, walking back at most
`hoodie.write.rolling.metadata.timeline.lookback.commits` of them (default 10), and copies it into its
own commit when the commit does not set it. Hudi 1.2.0's table services do the same
(`BaseHoodieClient.mergeRollingMetadata`, called from `BaseHoodieTableServiceClient.preCommit` for a
clustering's replacecommit and a compaction's commit; its cleaner does not): without it, more table-service
commits in a row than the writer's lookback would lose the key for every later commit. Ours do it as Hudi's
do, under the table lock, just before the commit is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import ROLLING_METADATA_KEYS, ROLLING_METADATA_LOOKBACK
from service.table.codecs import CommitSummary
from service.table.instant import Instant
from service.table.timeline import Timeline


@dataclass(frozen=True)
class RollingMetadata:
    """The keys to carry forward (none: the feature is off) and how many commits to look back over."""

    keys: tuple[str, ...] = ()
    lookback: int = 10

    @classmethod
    def of(cls, config: HoodieConfig) -> RollingMetadata:
        """`HoodieWriteConfig.getRollingMetadataKeys`: the comma-separated names, trimmed, empty ones
        dropped."""
        names = str(config.get(ROLLING_METADATA_KEYS) or "")
        keys = tuple(dict.fromkeys(k.strip() for k in names.split(",") if k.strip()))
        lookback = config.get(ROLLING_METADATA_LOOKBACK)
        return cls(keys, int(lookback) if isinstance(lookback, int) else cls.lookback)


NO_ROLLING = RollingMetadata()  # the feature off (Hudi's default: no keys)


def rolled_forward(
    rolling: RollingMetadata,
    current: Mapping[str, str | None],
    recent: Iterable[Mapping[str, str | None]],
) -> dict[str, str]:
    """The values to add to a commit whose extra metadata is `current`: for each rolling key it lacks
    (absent or empty: a clustering writes an empty schema), the value of the first of `recent` (the
    completed commits' extra metadata, most recent first, at most `lookback` of them) that has one."""
    remaining = [key for key in rolling.keys if not current.get(key)]
    found: dict[str, str] = {}
    for extra in recent:
        if not remaining:
            break
        for key in list(remaining):
            value = extra.get(key)
            if value:
                found[key] = value
                remaining.remove(key)
    return found


def recent_commits(timeline: Timeline, lookback: int) -> list[Instant]:
    """The completed commits, deltacommits and replacecommits Hudi walks back over, most recent
    completion first (`getCommitsTimeline().getReverseOrderedInstantsByCompletionTime()`), at most
    `lookback`. An instant without a completion time (timeline layout 1) sorts by its instant time."""
    done = [i for i in timeline.commits() if i.is_completed]
    done.sort(key=lambda i: (i.completion_time or i.timestamp, i.timestamp), reverse=True)
    return done[:lookback]


def carried_forward(
    rolling: RollingMetadata,
    timeline: Timeline,
    current: Mapping[str, str | None],
    summary_of: Callable[[Instant], CommitSummary],
) -> dict[str, str | None]:
    """`current` with the rolling keys it lacks added from the timeline's recent commits (their
    summaries, `TimelineFactsReader.commit_summary`)."""
    if not rolling.keys:
        return dict(current)
    recent = (summary_of(i).extra_metadata for i in recent_commits(timeline, rolling.lookback))
    return {**current, **rolled_forward(rolling, current, recent)}
