"""The blockers of a table (`strategies.blockers`) from storage: its timeline, the heartbeats and owners
of its old pending instants, its last clean and its metadata table's timeline. `check` reports them and
the daemon watches them (`service.daemon.tick`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, tzinfo

from service.cleaning.snapshot import read_last_clean
from service.clustering.attempts import SCHEDULER_NAME, is_our_plan
from service.config.cleaning import CleaningPolicy
from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import METADATA_COMPACT_MAX_DELTA_COMMITS
from service.table import codecs
from service.table.heartbeat import HeartbeatSettings, judge
from service.table.instant import Action, Instant
from service.table.mdt.timeline import load_mdt_timeline, mdt_timeline_layout
from service.table.properties import TableType
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.blockers import (
    COMPACTION_DEBT_FACTOR,
    Blocker,
    BlockerInputs,
    CompactionState,
    Executor,
    Heartbeat,
    MetadataTableState,
    compaction_state,
    find_blockers,
    pending_to_report,
)


def table_blockers(
    table: HudiTable,
    config: HoodieConfig,
    zone: tzinfo,
    now: datetime,
    timeline: Timeline | None = None,
    *,
    per_slice: bool = False,
) -> list[Blocker]:
    """`per_slice`: count the log files of each file group from a listing too (`check`)."""
    timeline = timeline if timeline is not None else table.load_timeline()
    settings = HeartbeatSettings.from_config(config)
    window = settings.window_seconds
    clean = config.clean
    inputs = BlockerInputs(
        timeline=timeline,
        zone=zone,
        now=now,
        heartbeat_window_seconds=window,
        executors=_executors(table, timeline, settings, zone, now),
        last_clean=read_last_clean(table, timeline),
        incremental_clean=clean.incremental_mode
        and clean.policy is not CleaningPolicy.KEEP_LATEST_FILE_VERSIONS,
        archive_beyond_savepoint=config.archival.beyond_savepoint,
        metadata_table=_metadata_table(table, config),
        savepoint_files=_savepoint_files(table, timeline),
        compaction=_compaction(table, config, timeline, per_slice),
    )
    return find_blockers(inputs)


def owner(table: HudiTable, instant: Instant) -> str | None:
    """Who scheduled a pending instant, as far as the timeline says: a clustering plan of ours carries
    our mark (`attempts.mark_as_ours`); a commit or deltacommit is a writer's; other plans
    (clean, compaction, rollback, a writer's replacecommit) do not say which process wrote them."""
    if instant.action in (Action.COMMIT, Action.DELTA_COMMIT):
        return "a Hudi writer"
    if instant.action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        return SCHEDULER_NAME if is_our_plan(table, instant) else "a Hudi writer"
    return None


def _executors(
    table: HudiTable, timeline: Timeline, settings: HeartbeatSettings, zone: tzinfo, now: datetime
) -> Mapping[str, Executor]:
    """Owner and heartbeat of each pending instant a blocker reports (one heartbeat read each)."""
    out: dict[str, Executor] = {}
    for instant in pending_to_report(timeline, zone, now, settings.window_seconds):
        verdict = judge(table.storage, table.layout, instant, settings, now.timestamp())
        beat = verdict.heartbeat_age_seconds
        heartbeat = (
            Heartbeat.NONE if beat is None else Heartbeat.ALIVE if verdict.alive else Heartbeat.EXPIRED
        )
        out[instant.timestamp] = Executor(owner(table, instant), heartbeat, beat)
    return out


def _compaction(
    table: HudiTable, config: HoodieConfig, timeline: Timeline, per_slice: bool
) -> CompactionState | None:
    if table.config.table_type is not TableType.MERGE_ON_READ:
        return None
    trigger = config.compaction.max_delta_commits
    state = compaction_state(timeline, trigger)
    if not per_slice or state.delta_commits_since <= COMPACTION_DEBT_FACTOR * trigger:
        return state
    counts = [
        sum(len(s.log_files) for s in group.snapshot_slices)
        for view in table.iter_views(timeline)  # a batch of partitions at a time
        for group in view.live_file_groups
    ]
    return replace(
        state, max_log_files=max(counts, default=0), groups_over_trigger=sum(c > trigger for c in counts)
    )


def _savepoint_files(table: HudiTable, timeline: Timeline) -> dict[str, tuple[int, int]]:
    """(files, partitions) each completed savepoint's metadata names (one small read each, cached)."""
    out = {}
    for savepoint in timeline.by_actions([Action.SAVEPOINT]).completed():
        metadata = table.facts_reader.metadata(savepoint, codecs.SavepointMetadata)
        partitions = metadata.partition_metadata.values()
        out[savepoint.timestamp] = (sum(len(p.savepoint_data_file) for p in partitions), len(partitions))
    return out


def _metadata_table(table: HudiTable, config: HoodieConfig) -> MetadataTableState | None:
    """The metadata table's delta commits since its latest compaction (a `commit` on its timeline)."""
    if not table.config.metadata_partitions:
        return None
    mdt = load_mdt_timeline(table.storage, mdt_timeline_layout(table.layout)).completed()
    compaction = mdt.by_actions([Action.COMMIT]).last
    after = compaction.timestamp if compaction is not None else ""
    deltas = [i for i in mdt.by_actions([Action.DELTA_COMMIT]) if i.timestamp > after]
    threshold = config.get(METADATA_COMPACT_MAX_DELTA_COMMITS)
    assert threshold is not None  # Hudi's default
    return MetadataTableState(len(deltas), int(threshold), compaction.timestamp if compaction else None)


def blocker_json(blocker: Blocker, now: datetime) -> dict[str, object]:
    age = blocker.age_seconds(now)
    return {
        "kind": blocker.kind.value,
        "services": list(blocker.services),
        "instant": blocker.instant,
        "age_seconds": round(age) if age is not None else None,
        "owner": blocker.owner,
        "heartbeat": blocker.heartbeat.value if blocker.heartbeat is not None else None,
        "heartbeat_age_seconds": round(blocker.heartbeat_age_seconds)
        if blocker.heartbeat_age_seconds is not None
        else None,
        "effect": blocker.effect,
        "way_out": blocker.way_out,
    }
