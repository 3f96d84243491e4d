"""What holds a table's upkeep back, as states with an age, an effect and a way out. Pure: a function of
the timeline, what is known of its pending instants' executors, the last clean, the metadata table's
timeline, the settings and now.

- A pending instant older than the heartbeat window (a normal write finishes sooner), the oldest of
  each action: its owner and heartbeat (`alive`, `expired`, `none`). A pending write holds archival
  before it (`TimelineArchiverV2.getCommitInstantsToArchive` keeps the commit before the earliest
  pending write) and the metadata table's compaction, which waits for every data-table instant before
  its latest delta commit (`HoodieBackedTableMetadataWriter.validateTimelineBeforeSchedulingCompaction`);
  a pending clustering plan takes no updates of its file groups; a pending compaction keeps its log
  files growing; a pending clean or rollback keeps the files it would delete.
- A savepoint: the cleaner keeps every file it references and archival stops at it (unless
  `hoodie.archive.beyond.savepoint`).
- The incremental clean's anchor archived: the last clean's earliest commit to retain is before the
  active commits timeline, so the next clean lists every partition (`CleanPlanner
  .getPartitionPathsToClean` falls back to `getPartitionPathsForFullCleaning`).
- The metadata table's compaction behind: more delta commits since its last compaction than
  `hoodie.metadata.compact.max.delta.commits`; every reader merges its log files meanwhile.
- Compaction debt on a merge-on-read table: more than twice `hoodie.compact.inline.max.delta.commits`
  delta commits since its latest compaction (Hudi's trigger fired, and as many again came without a
  compaction): each adds a log file to every slice it touched, and every snapshot read merges them.
- Replaced file groups waiting for a clean: completed replacecommits at or after the last clean's
  earliest commit to retain keep their replaced files on storage, and archival stops at the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from enum import StrEnum

from service.errors import CorruptTableError
from service.table.instant import Action, Instant, State
from service.table.timeline import Timeline, parse_instant_time
from strategies.cleaning.snapshot import LastClean

WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT})
REPLACE_ACTIONS = frozenset({Action.REPLACE_COMMIT, Action.CLUSTERING})


class BlockerKind(StrEnum):
    PENDING_WRITE = "pending_write"
    PENDING_CLUSTERING = "pending_clustering"
    PENDING_COMPACTION = "pending_compaction"
    PENDING_CLEAN = "pending_clean"
    PENDING_ROLLBACK = "pending_rollback"
    SAVEPOINT = "savepoint"
    CLEAN_ANCHOR_ARCHIVED = "clean_anchor_archived"
    METADATA_COMPACTION_BEHIND = "metadata_compaction_behind"
    REPLACED_GROUPS_UNCLEANED = "replaced_groups_uncleaned"
    COMPACTION_DEBT = "compaction_debt"


class Heartbeat(StrEnum):
    ALIVE = "alive"
    EXPIRED = "expired"
    NONE = "none"


@dataclass(frozen=True)
class Executor:
    """What is known of a pending instant's executor: who wrote it, and its heartbeat."""

    owner: str | None
    heartbeat: Heartbeat
    heartbeat_age_seconds: float | None = None


@dataclass(frozen=True)
class MetadataTableState:
    """The metadata table's delta commits since its latest compaction, and the threshold."""

    delta_commits_since_compaction: int
    max_delta_commits: int
    latest_compaction: str | None


@dataclass(frozen=True)
class CompactionState:
    """A merge-on-read table's completed delta commits since its latest completed compaction, and
    Hudi's trigger (`hoodie.compact.inline.max.delta.commits`)."""

    delta_commits_since: int
    first_delta_commit: str | None  # the oldest of them
    latest_compaction: str | None
    max_delta_commits: int
    # From a listing (`check` only; the daemon's minute-by-minute look reads the timeline alone): the
    # most log files a reader merges in one file group, and the groups with more than the trigger.
    max_log_files: int | None = None
    groups_over_trigger: int | None = None


# Debt is reported past this many times Hudi's trigger: the trigger fired, and as many again came.
COMPACTION_DEBT_FACTOR = 2


def compaction_state(timeline: Timeline, max_delta_commits: int) -> CompactionState:
    """On a merge-on-read timeline a completed `commit` is a compaction (`CompactionUtils`' rule)."""
    completed = timeline.completed()
    latest = completed.by_actions([Action.COMMIT]).last
    after = latest.timestamp if latest is not None else ""
    deltas = [i for i in completed.by_actions([Action.DELTA_COMMIT]) if i.timestamp > after]
    first = deltas[0].timestamp if deltas else None
    return CompactionState(len(deltas), first, latest.timestamp if latest else None, max_delta_commits)


@dataclass(frozen=True)
class BlockerInputs:
    timeline: Timeline
    zone: tzinfo
    now: datetime
    heartbeat_window_seconds: float
    executors: Mapping[str, Executor]  # instant time -> what is known of who executes it
    last_clean: LastClean | None = None
    incremental_clean: bool = True  # hoodie.cleaner.incremental.mode under a commit-based policy
    archive_beyond_savepoint: bool = False
    metadata_table: MetadataTableState | None = None
    compaction: CompactionState | None = None  # merge-on-read tables only
    # Savepoint instant -> (files, partitions) its metadata names: what the cleaner keeps for it.
    savepoint_files: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Blocker:
    kind: BlockerKind
    services: tuple[str, ...]  # the services it holds back
    instant: str | None
    since: datetime | None  # when it started (the instant's time), None when unknown
    effect: str
    way_out: str
    owner: str | None = None
    heartbeat: Heartbeat | None = None
    heartbeat_age_seconds: float | None = None

    def age_seconds(self, now: datetime) -> float | None:
        return max((now - self.since).total_seconds(), 0.0) if self.since is not None else None


def find_blockers(inputs: BlockerInputs) -> list[Blocker]:
    """Every blocker of the table now, oldest first."""
    out = _pending(inputs) + _savepoints(inputs) + _clean_anchor(inputs) + _metadata_table(inputs)
    out += _replaced_uncleaned(inputs) + _compaction_debt(inputs)
    return sorted(out, key=lambda b: (b.since is None, b.since or inputs.now, b.kind.value))


def _since(instant: str, zone: tzinfo) -> datetime | None:
    try:
        return parse_instant_time(instant, zone)
    except (ValueError, CorruptTableError):
        return None


_WRITE = (
    BlockerKind.PENDING_WRITE,
    ("archival", "cleaning", "metadata table compaction"),
    "archival stops before it; the metadata table's compaction waits for it",
)
_CLUSTERING = (
    BlockerKind.PENDING_CLUSTERING,
    ("clustering", "archival"),
    "writers' updates to its file groups are refused or wait; archival stops before it",
)
_COMPACTION = (
    BlockerKind.PENDING_COMPACTION,
    ("compaction", "archival"),
    "its file slices' log files keep growing; archival stops before it",
)
_PENDING: Mapping[Action, tuple[BlockerKind, tuple[str, ...], str]] = {
    Action.COMMIT: _WRITE,
    Action.DELTA_COMMIT: _WRITE,
    Action.REPLACE_COMMIT: _CLUSTERING,
    Action.CLUSTERING: _CLUSTERING,
    Action.COMPACTION: _COMPACTION,
    Action.LOG_COMPACTION: _COMPACTION,
    Action.CLEAN: (
        BlockerKind.PENDING_CLEAN,
        ("cleaning",),
        "the files it would delete stay; a new clean waits for it (hoodie.clean.allow.multiple)",
    ),
    Action.ROLLBACK: (
        BlockerKind.PENDING_ROLLBACK,
        ("cleaning", "archival"),
        "the failed write's files stay until it completes",
    ),
}


def pending_to_report(
    timeline: Timeline, zone: tzinfo, now: datetime, window_seconds: float
) -> list[Instant]:
    """The oldest pending instant of each action a blocker is known for, once it is older than the
    heartbeat window (a normal write finishes sooner). The service judges the heartbeats of these
    only (`service.blockers`)."""
    out: list[Instant] = []
    seen: set[Action] = set()
    for instant in timeline.pending():
        if instant.action not in _PENDING or instant.action in seen:
            continue
        since = _since(instant.timestamp, zone)
        if since is not None and (now - since).total_seconds() <= window_seconds:
            continue
        seen.add(instant.action)
        out.append(instant)
    return out


def _pending(inputs: BlockerInputs) -> list[Blocker]:
    out: list[Blocker] = []
    for instant in pending_to_report(
        inputs.timeline, inputs.zone, inputs.now, inputs.heartbeat_window_seconds
    ):
        kind, services, effect = _PENDING[instant.action]
        executor = inputs.executors.get(instant.timestamp, Executor(None, Heartbeat.NONE))
        out.append(
            Blocker(
                kind, services, instant.timestamp, _since(instant.timestamp, inputs.zone), effect,
                _pending_way_out(instant, executor), executor.owner, executor.heartbeat,
                executor.heartbeat_age_seconds,
            )
        )  # fmt: skip
    return out


def _pending_way_out(instant: Instant, executor: Executor) -> str:
    if executor.heartbeat is Heartbeat.ALIVE:
        return "none needed while its executor's heartbeat lives: it is being worked on"
    if instant.action in WRITE_ACTIONS:
        return (
            "a failed write: rolled back by the next clean under hoodie.cleaner.policy.failed.writes=LAZY "
            "(the daemon's cleaning, or `hudi-table-service clean`), by the writer's next commit under EAGER"
        )
    if instant.action in REPLACE_ACTIONS:
        return (
            "execute it (the daemon's clustering executes plans it wrote; `hudi-table-service cluster --mode "
            "execute`), or let it expire: with hoodie.clustering.enable.expirations=true and LAZY failed "
            "writes, the next clean or `hudi-table-service repair --execute` rolls it back once "
            "hoodie.clustering.expiration.threshold.mins have passed, as Hudi 1.2's writers do"
        )
    if instant.action in (Action.COMPACTION, Action.LOG_COMPACTION):
        return "execute it: the daemon's compaction, or `hudi-table-service compact --mode execute`"
    if instant.action is Action.CLEAN:
        return "the next clean finishes it (the daemon's cleaning, or `hudi-table-service clean`)"
    return "the next rollback of its writer or of `hudi-table-service clean` finishes it"


def _savepoints(inputs: BlockerInputs) -> list[Blocker]:
    archival = "" if inputs.archive_beyond_savepoint else "; archival stops at it"
    services = ("cleaning",) if inputs.archive_beyond_savepoint else ("cleaning", "archival")

    def kept(instant: str) -> str:
        counts = inputs.savepoint_files.get(instant)
        if counts is None:
            return "every file it references"
        return f"the {counts[0]} files it references (in {counts[1]} partitions)"

    return [
        Blocker(
            BlockerKind.SAVEPOINT,
            services,
            s.timestamp,
            _since(s.timestamp, inputs.zone),
            f"the cleaner keeps {kept(s.timestamp)}{archival}",
            "delete it once no reader needs it (Hudi's `delete_savepoint`)",
        )
        for s in inputs.timeline.by_actions([Action.SAVEPOINT]).completed()
    ]


def _clean_anchor(inputs: BlockerInputs) -> list[Blocker]:
    last = inputs.last_clean
    if not inputs.incremental_clean or last is None or last.empty or not last.earliest_commit_to_retain:
        return []
    first = inputs.timeline.commits().first
    if first is None or last.earliest_commit_to_retain >= first.timestamp:
        return []
    return [
        Blocker(
            BlockerKind.CLEAN_ANCHOR_ARCHIVED,
            ("cleaning",),
            last.timestamp,
            _since(last.timestamp, inputs.zone),
            f"the last clean's earliest commit to retain ({last.earliest_commit_to_retain}) was "
            "archived: the next clean lists every partition instead of those written since",
            "none needed: the next clean lists every partition once, and is incremental again after it",
        )
    ]


def _metadata_table(inputs: BlockerInputs) -> list[Blocker]:
    mdt = inputs.metadata_table
    if mdt is None or mdt.delta_commits_since_compaction <= mdt.max_delta_commits:
        return []
    writes = inputs.timeline.by_actions(WRITE_ACTIONS).pending()
    oldest = writes.first.timestamp if writes.first is not None else None
    cause = f"; a pending write ({oldest}) holds it back" if oldest else ""
    return [
        Blocker(
            BlockerKind.METADATA_COMPACTION_BEHIND,
            ("metadata table compaction",),
            mdt.latest_compaction,
            _since(mdt.latest_compaction, inputs.zone) if mdt.latest_compaction else None,
            f"{mdt.delta_commits_since_compaction} delta commits on the metadata table since its last "
            f"compaction, above hoodie.metadata.compact.max.delta.commits={mdt.max_delta_commits}: every "
            f"reader merges its log files{cause}",
            "the writers compact it inside their commits once no pending data-table write precedes its "
            "latest delta commit: roll failed writes back (`hudi-table-service clean` under LAZY)",
        )
    ]


def _compaction_debt(inputs: BlockerInputs) -> list[Blocker]:
    state = inputs.compaction
    if state is None or state.delta_commits_since <= COMPACTION_DEBT_FACTOR * state.max_delta_commits:
        return []
    since_what = f"its last compaction ({state.latest_compaction})" if state.latest_compaction else "it began"
    return [
        Blocker(
            BlockerKind.COMPACTION_DEBT,
            ("compaction",),
            state.first_delta_commit,
            _since(state.first_delta_commit, inputs.zone) if state.first_delta_commit else None,
            f"{state.delta_commits_since} delta commits since {since_what}, over "
            f"{COMPACTION_DEBT_FACTOR} x hoodie.compact.inline.max.delta.commits={state.max_delta_commits}: "
            "each left a log file in every file slice it touched, and every snapshot read merges them"
            + _per_slice(state),
            "compact: the daemon's compaction (on for merge-on-read tables unless compaction.enabled is "
            "false; see its state and refusals) or `hudi-table-service compact`; a pending compaction "
            "runs first",
        )
    ]


def _per_slice(state: CompactionState) -> str:
    if state.max_log_files is None:
        return ""
    return (
        f"; now up to {state.max_log_files} log files in one file group, {state.groups_over_trigger} "
        f"groups with more than {state.max_delta_commits}"
    )


def _replaced_uncleaned(inputs: BlockerInputs) -> list[Blocker]:
    last = inputs.last_clean
    lower = (last.earliest_commit_to_retain or last.timestamp) if last is not None else ""
    replaced: Sequence[Instant] = [
        i for i in inputs.timeline.by_actions(REPLACE_ACTIONS).completed() if i.timestamp >= lower
    ]
    if not replaced or replaced[0].state is not State.COMPLETED:
        return []
    first = replaced[0]
    return [
        Blocker(
            BlockerKind.REPLACED_GROUPS_UNCLEANED,
            ("cleaning", "archival"),
            first.timestamp,
            _since(first.timestamp, inputs.zone),
            f"{len(replaced)} completed replacecommit(s) keep their replaced file groups' files until "
            "a clean releases them; archival stops at the first",
            "a clean whose earliest commit to retain passes them (the daemon's cleaning or "
            "`hudi-table-service clean`)",
        )
    ]
