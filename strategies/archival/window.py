"""Which instants archival moves off the active timeline: Hudi's archiver window, pure.

Two archivers, chosen by the timeline layout as Hudi's `TimelineArchivers.getInstance` chooses them:
`HoodieTimelineArchiver` of Hudi 0.14/0.15 on layout 1 (table version 6; Hudi 1.x calls it
`TimelineArchiverV1`) and `TimelineArchiverV2` on layout 2 (versions 8 and 9). Both archive completed
commits only while the commit timeline holds more than `hoodie.keep.max.commits`, down to
`hoodie.keep.min.commits`, and never at or past any of these bounds:

- the last completed commit before the earliest pending write (a pending write keeps the commit
  before it, so its rollback and the cleaner see what they need);
- on merge-on-read, the instant compaction still needs (`CompactionUtils`' oldest/earliest instant to
  retain for compaction: the delta commits the next compaction trigger counts);
- the first replacecommit (clustering, insert overwrite) whose replaced file groups the last clean has
  not released yet (`ClusteringUtils.get{Oldest,Earliest}InstantToRetainForClustering`): archiving it
  would make those groups visible again;
- the metadata table's latest compaction, when the table has a metadata table (its log files replay
  instants from there on); with no compaction yet nothing is archived;
- the first savepoint, or, with `hoodie.archive.beyond.savepoint`, every savepointed commit.

An instant the archive already holds while its completed file is still active was archived by a run
stopped before its deletes were done: it is in the window whatever the trigger and the bounds say
(its records are not written again), so that the next run finishes what the stopped one began; the
stopped run's deletes may have taken the commit count below the trigger.

Savepoint, restore and indexing instants are never archived. Completed cleans and rollbacks go by
their own count on layout 1 (each action beyond `max`, down to `min`) and with the commits on layout
2 (those older than the last commit archived). `window` returns them in the order Hudi writes their
records, with what stopped the window, which `check` and the status page show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta, tzinfo
from enum import StrEnum

from service.config.cleaning import ArchivalConfig, CleanConfig, CleaningPolicy
from service.config.compaction import CompactionConfig, CompactionTriggerStrategy
from service.table.instant import Action, Instant, State
from service.table.timeline import Timeline, format_instant_time, parse_instant_time

# `getCommitsTimeline`: commit, deltacommit and replacecommit (and layout 2's clustering), any state.
COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING})
# `getWriteTimeline`: what a pending write is, for the pending bound.
WRITE_ACTIONS = COMMIT_ACTIONS | {Action.COMPACTION, Action.LOG_COMPACTION}
REPLACE_ACTIONS = frozenset({Action.REPLACE_COMMIT, Action.CLUSTERING})
CLEAN_AND_ROLLBACK = (Action.ROLLBACK, Action.CLEAN)  # layout 1 writes rollbacks' records first
# The compaction triggers under which the archiver keeps what the next compaction counts.
_COUNTING_TRIGGERS = frozenset(
    {CompactionTriggerStrategy.NUM_COMMITS, CompactionTriggerStrategy.NUM_AND_TIME}
)


class Archiver(StrEnum):
    """Hudi's archiver of a timeline layout (`TimelineArchivers.getInstance`)."""

    V1 = "HoodieTimelineArchiver (Hudi 0.14/0.15, timeline layout 1)"
    V2 = "TimelineArchiverV2 (Hudi 1.x, timeline layout 2)"


class Bound(StrEnum):
    """Why the window stops where it does (the way out is in `operations.md`)."""

    PENDING_WRITE = "pending write"
    COMPACTION = "compaction"
    CLUSTERING = "replaced file groups not yet cleaned"
    METADATA_TABLE = "metadata table compaction"
    DATA_TABLE = "data table's active timeline"
    SAVEPOINT = "savepoint"
    MIN_COMMITS = "hoodie.keep.min.commits"
    NOT_TRIGGERED = "hoodie.keep.max.commits not exceeded"


@dataclass(frozen=True)
class LastClean:
    """The latest completed clean: its time and its plan's earliest commit to retain (None under
    KEEP_LATEST_FILE_VERSIONS, or in an older plan) and the savepoints its plan kept."""

    instant_time: str
    earliest_commit_to_retain: str | None
    savepointed_timestamps: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchivalInputs:
    """What the window is a function of, besides the timeline and the settings."""

    merge_on_read: bool
    zone: tzinfo  # the timeline's zone, for KEEP_LATEST_BY_HOURS's earliest commit to retain
    last_clean: LastClean | None = None
    # The table has a metadata table: its latest completed compaction (None: none yet, which holds
    # all archival back). Absent (`has_metadata_table` False) for tables without one and for the
    # metadata table itself.
    has_metadata_table: bool = False
    metadata_table_compaction: str | None = None
    # The data table's earliest instant for metadata-table archival, when the timeline is the
    # metadata table's own (`TimelineUtils.getEarliestInstantForMetadataArchival`).
    data_table_bound: str | None = None
    # Times of completed instants still on the active timeline that the archive already holds.
    already_archived: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Stop:
    """The first instant the window may not reach, and why."""

    bound: Bound
    instant_time: str | None
    detail: str


@dataclass(frozen=True)
class ArchivalWindow:
    """The instants to archive (each the highest state of its time and action, the files of all its
    states going with it), in the order Hudi writes their records; what stopped the window."""

    archiver: Archiver
    instants: tuple[Instant, ...]
    min_commits: int
    max_commits: int
    commits: int  # completed instants of the commit timeline that count toward the trigger
    stops: tuple[Stop, ...] = field(default=())
    # Times of `instants` a stopped run already archived: only their active files are left to delete.
    unfinished: frozenset[str] = frozenset()

    @property
    def stop(self) -> Stop | None:
        """The bound that holds the window back most (the earliest), None when nothing is held."""
        return min(self.stops, key=lambda s: s.instant_time or "", default=None)


def window(
    timeline: Timeline,
    archiver: Archiver,
    archival: ArchivalConfig,
    clean: CleanConfig,
    compaction: CompactionConfig,
    inputs: ArchivalInputs,
) -> ArchivalWindow:
    """The instants Hudi's `archiver` would archive now from `timeline` (the active timeline, each
    instant in its highest state), and the bounds that stop it; first, those a stopped run archived."""
    found = _window(timeline, archiver, archival, clean, compaction, inputs)
    if not inputs.already_archived:
        return found
    unfinished = [i for i in timeline.completed() if i.timestamp in inputs.already_archived]
    times = {i.timestamp for i in unfinished}
    instants = (*unfinished, *(i for i in found.instants if i.timestamp not in times))
    return replace(found, instants=instants, unfinished=frozenset(times))


def _window(
    timeline: Timeline,
    archiver: Archiver,
    archival: ArchivalConfig,
    clean: CleanConfig,
    compaction: CompactionConfig,
    inputs: ArchivalInputs,
) -> ArchivalWindow:
    commits = _completed_commit_timeline(timeline, inputs.merge_on_read)
    low, high = _min_and_max_to_keep(timeline, commits, archival, clean, inputs.zone)
    if inputs.has_metadata_table and inputs.metadata_table_compaction is None:
        stop = Stop(Bound.METADATA_TABLE, None, "the metadata table has no compaction yet")
        return ArchivalWindow(archiver, (), low, high, len(commits), (stop,))
    stops = _stops(timeline, commits, archiver, compaction, inputs)
    if len(commits) <= high:
        detail = f"{len(commits)} completed commits, archival starts above {high}"
        # Layout 1 counts cleans and rollbacks on their own (`getCleanInstantsToArchive`), whether or
        # not the commits reach the trigger.
        alone = _with_v1_cleans(timeline, [], low, high, inputs) if archiver is Archiver.V1 else []
        return ArchivalWindow(
            archiver, tuple(alone), low, high, len(commits), (Stop(Bound.NOT_TRIGGERED, None, detail),)
        )
    savepoints = [i.timestamp for i in timeline.completed().by_actions([Action.SAVEPOINT])]
    first_savepoint = savepoints[0] if savepoints else None
    if first_savepoint is not None and not archival.beyond_savepoint:
        stops.append(Stop(Bound.SAVEPOINT, first_savepoint, f"savepoint {first_savepoint}"))
    limit = max(len(commits) - low, 0)
    chosen: list[Instant] = []
    held = min((s.instant_time for s in stops if s.instant_time is not None), default=None)
    for instant in commits:
        if archival.beyond_savepoint and instant.timestamp in savepoints:
            continue
        if held is not None and instant.timestamp >= held:
            break
        if len(chosen) == limit:
            break
        chosen.append(instant)
    if len(chosen) == limit:
        after = chosen[-1].timestamp if chosen else ""
        kept = next((c.timestamp for c in commits if c.timestamp > after), None)
        stops.append(Stop(Bound.MIN_COMMITS, kept, f"keeps the last {low} completed commits"))
    if archiver is Archiver.V2:
        instants = _with_v2_cleans(timeline, chosen)
    else:
        instants = _with_v1_cleans(timeline, chosen, low, high, inputs)
    return ArchivalWindow(archiver, tuple(instants), low, high, len(commits), tuple(stops))


def _completed_commit_timeline(timeline: Timeline, merge_on_read: bool) -> list[Instant]:
    """`HoodieTable.getCompletedCommitsTimeline`: commit and replacecommit, deltacommit on MOR."""
    actions = {Action.COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING}
    if merge_on_read:
        actions.add(Action.DELTA_COMMIT)
    return [i for i in timeline.completed() if i.action in actions]


def _min_and_max_to_keep(
    timeline: Timeline,
    completed: Sequence[Instant],
    archival: ArchivalConfig,
    clean: CleanConfig,
    zone: tzinfo,
) -> tuple[int, int]:
    """`ArchivalUtils.getMinAndMaxInstantsToKeep`: keep every commit the cleaner's earliest commit to
    retain still needs, plus two; `max` moves with `min`."""
    low, high = archival.min_commits_to_keep, archival.max_commits_to_keep
    ectr = _earliest_commit_to_retain(timeline, completed, clean, zone)
    if ectr is None:
        return low, high
    needed = sum(1 for i in completed if i.timestamp > ectr) + 2
    if low < needed:
        return needed, needed + (high - low)
    return low, high


def _earliest_commit_to_retain(
    timeline: Timeline, completed: Sequence[Instant], clean: CleanConfig, zone: tzinfo
) -> str | None:
    """`CleanerUtils.getEarliestCommitToRetain` over `getCommitsTimeline` (every state), with the
    latest completed commit's time as "now" (the archiver's call)."""
    commits = timeline.by_actions(COMMIT_ACTIONS)
    done = commits.completed().instants
    if clean.policy is CleaningPolicy.KEEP_LATEST_COMMITS:
        if len(done) <= clean.commits_retained:
            return None
        nth = done[len(done) - clean.commits_retained]
        pending = commits.pending().first
        if pending is None or nth.sort_key() <= pending.sort_key():
            return nth.timestamp
        before = [i for i in done if i.timestamp < pending.timestamp]
        return before[-1].timestamp if before else None
    if clean.policy is CleaningPolicy.KEEP_LATEST_BY_HOURS and completed:
        latest = parse_instant_time(completed[-1].timestamp, zone)
        cutoff = format_instant_time((latest - timedelta(hours=clean.hours_retained)).astimezone(zone))
        return next((i.timestamp for i in done if i.timestamp >= cutoff), None)
    return None


def _stops(
    timeline: Timeline,
    commits: Sequence[Instant],
    archiver: Archiver,
    compaction: CompactionConfig,
    inputs: ArchivalInputs,
) -> list[Stop]:
    stops: list[Stop] = []
    pending = next((i for i in timeline.pending() if i.action in WRITE_ACTIONS), None)
    if pending is not None:
        before = [c for c in commits if c.timestamp < pending.timestamp]
        kept = before[-1].timestamp if before else pending.timestamp
        stops.append(
            Stop(
                Bound.PENDING_WRITE,
                kept,
                f"{pending.action.value} {pending.timestamp} is {pending.state.name.lower()}",
            )
        )
    if inputs.merge_on_read and compaction.trigger_strategy in _COUNTING_TRIGGERS:
        needed = _instant_to_retain_for_compaction(timeline, compaction.max_delta_commits, archiver)
        if needed is not None:
            stops.append(
                Stop(Bound.COMPACTION, needed, f"the next compaction counts delta commits from {needed}")
            )
    clustering = _instant_to_retain_for_clustering(timeline, archiver, inputs.last_clean)
    if clustering is not None:
        stops.append(
            Stop(
                Bound.CLUSTERING,
                clustering,
                f"replacecommit {clustering}: no clean has released its replaced file groups",
            )
        )
    if inputs.has_metadata_table and inputs.metadata_table_compaction is not None:
        compacted = inputs.metadata_table_compaction
        if archiver is Archiver.V2:
            # `findInstantsModifiedAfterByCompletionTime(t).firstInstant()`: the first commit completed
            # after the metadata table's compaction.
            after = [
                c
                for c in commits
                if (c.completion_time or c.timestamp) > compacted and c.timestamp != compacted
            ]
            bound = after[0].timestamp if after else None
        else:
            bound = compacted
        if bound is not None:
            stops.append(Stop(Bound.METADATA_TABLE, bound, f"the metadata table compacted at {compacted}"))
    if inputs.data_table_bound is not None:
        stops.append(
            Stop(
                Bound.DATA_TABLE,
                inputs.data_table_bound,
                f"the data table still holds {inputs.data_table_bound}",
            )
        )
    return stops


def _instant_to_retain_for_compaction(
    timeline: Timeline, max_delta_commits: int, archiver: Archiver
) -> str | None:
    """`CompactionUtils.get{Oldest,Earliest}InstantToRetainForCompaction`: the last compaction (a
    completed `commit`), or the delta commit from which the next compaction trigger counts."""
    compactions = [i for i in timeline.completed() if i.action is Action.COMMIT]
    deltas = [i for i in timeline if i.action is Action.DELTA_COMMIT]
    if compactions:
        last = compactions[-1]
        if archiver is Archiver.V2:
            # `findInstantsModifiedAfterByCompletionTime`: pending by requested time, completed by
            # completion time.
            since = [
                d
                for d in deltas
                if (
                    d.timestamp > last.timestamp
                    if d.is_pending
                    else (d.completion_time or d.timestamp) > last.timestamp and d.timestamp != last.timestamp
                )
            ]
        else:
            since = [d for d in deltas if d.timestamp > last.timestamp]
        anchor = last.timestamp
    elif deltas:
        since, anchor = list(deltas), deltas[0].timestamp
    else:
        return None
    if len(since) < max_delta_commits:
        return anchor
    return since[len(since) - max_delta_commits].timestamp


def _instant_to_retain_for_clustering(
    timeline: Timeline, archiver: Archiver, last_clean: LastClean | None
) -> str | None:
    """`ClusteringUtils.get{Oldest,Earliest}InstantToRetainForClustering`: the first replacecommit
    (any state) at or after the last clean's earliest commit to retain (its own time when the plan
    has none); with no clean, the first replacecommit."""
    replaces = [i for i in timeline if i.action in REPLACE_ACTIONS]
    if not replaces:
        return None
    if last_clean is None:
        oldest: str | None = replaces[0].timestamp
    else:
        lower = last_clean.earliest_commit_to_retain or last_clean.instant_time
        if archiver is Archiver.V2:
            lower = _earliest_replaced_savepoint(timeline, last_clean) or lower
        oldest = next((r.timestamp for r in replaces if r.timestamp >= lower), None)
    if archiver is Archiver.V1:
        # Layout 1 also keeps the commit before an inflight replacecommit (a requested one does not
        # count: `filterInflights`).
        inflight = next((r for r in replaces if r.state is State.INFLIGHT), None)
        if inflight is not None:
            before = [
                i.timestamp
                for i in timeline.completed()
                if i.action in COMMIT_ACTIONS and i.timestamp < inflight.timestamp
            ]
            if before and (oldest is None or oldest > before[-1]):
                oldest = before[-1]
    return oldest


def _earliest_replaced_savepoint(timeline: Timeline, last_clean: LastClean) -> str | None:
    """`ClusteringUtils.getEarliestReplacedSavepointInClean` (layout 2): the earliest savepoint the last
    clean kept, when a completed replacecommit lies between it and the clean's earliest commit to
    retain (the groups it replaced are still there for the savepoint)."""
    ectr = last_clean.earliest_commit_to_retain
    savepoints = [t for t in last_clean.savepointed_timestamps if t]
    if not ectr or not savepoints:
        return None
    earliest = min(savepoints)
    if ectr <= earliest:
        return None
    replaced = [
        i
        for i in timeline.completed()
        if i.action is Action.REPLACE_COMMIT and earliest <= i.timestamp <= ectr
    ]
    return earliest if replaced else None


def _with_v1_cleans(
    timeline: Timeline, commits: list[Instant], low: int, high: int, inputs: ArchivalInputs
) -> list[Instant]:
    """Layout 1: completed rollbacks, then cleans, each action by its own count beyond `max` down to
    `min` (`getCleanInstantsToArchive`), before the commits; the metadata-table bounds apply to all."""
    out: list[Instant] = []
    for action in CLEAN_AND_ROLLBACK:
        done = [i for i in timeline.completed() if i.action is action]
        if len(done) > high:
            out.extend(done[: len(done) - low])
    out.extend(commits)
    ceiling = min(
        (
            t
            for t in (
                inputs.metadata_table_compaction if inputs.has_metadata_table else None,
                inputs.data_table_bound,
            )
            if t
        ),
        default=None,
    )
    return [i for i in out if ceiling is None or i.timestamp < ceiling]


def _with_v2_cleans(timeline: Timeline, commits: list[Instant]) -> list[Instant]:
    """Layout 2: completed cleans and rollbacks older than the last commit archived go with the
    commits (`getCleanAndRollbackInstantsToArchive`), everything in requested-time order."""
    if not commits:
        return []
    last = commits[-1].timestamp
    extra = [i for i in timeline.completed() if i.action in CLEAN_AND_ROLLBACK and i.timestamp < last]
    return sorted([*commits, *extra], key=Instant.sort_key)
