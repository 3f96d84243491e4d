"""Clustering orchestration: schedule a plan, execute its groups on Spark, commit as a replacecommit.

Commit protocol (Hudi's `completeClustering`): under the table lock, the attempt's heartbeat and
`Tc.replacecommit.inflight` (empty; one executor per instant, see `execute_clustering`), DIRECT
markers before every data file, then under the table lock: check the attempt still owns the instant,
reload the timeline, re-check that no completed commit touched an input file group since the plan
(whatever the update strategy: committing would drop that update), delete files with markers that
are not in the write stats, write `Tc.replacecommit`. A failure anywhere leaves readers on the old
file groups; the failed attempt is rolled back by markers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from service.cleaning.records import files_of_pending_cleans
from service.clustering.attempts import mark_as_ours
from service.clustering.log_conflicts import check_no_log_appends
from service.clustering.preflight import check_plan_executable
from service.clustering.records import read_clustering_plan, requested_metadata
from service.config.clustering import ClusteringConfig
from service.config.hoodie import HoodieConfig
from service.config.schedule import ClusteringSchedule
from service.errors import (
    ConflictError,
    HeartbeatLostError,
    HudiTableServiceError,
    PlanRefusedError,
)
from service.executor.clustering_job import GroupJob, MergedRead, MergedSliceInput
from service.lock.base import TableLock
from service.rollback import rollback_instant
from service.table import codecs
from service.table.base_file_writer import BaseFileWriteResult
from service.table.clustering_plan import PlannedClustering, PlannedSlice
from service.table.fs_view import FileGroupId
from service.table.heartbeat import Heartbeat, HeartbeatSettings, refuse_if_alive
from service.table.instant import Action, Instant, State
from service.table.listing_check import check_mdt_listing, verified_storage_view
from service.table.log_format.merge import InstantFilter, MergeConfig
from service.table.log_format.slice_reader import instant_filter
from service.table.markers import delete_marker_dir, list_markers
from service.table.properties import TableType
from service.table.rolling_metadata import NO_ROLLING, RollingMetadata
from service.table.service_commit import complete_table_service
from service.table.table import HudiTable
from service.table.table_schema import TableSchema, checked_table_schema, latest_table_schema_of
from service.table.timeline import Timeline, create_instant_file, next_instant_time
from strategies.clustering.size_based import ClusteringSurvey, plan_clustering, survey_partitions
from strategies.clustering.small_files import SmallFiles, small_files
from strategies.clustering.trigger import (
    ClusteringStep,
    TriggerDecision,
    TriggerMode,
    clustering_due,
)
from strategies.execution.sort_and_size import OrderSpec

log = logging.getLogger(__name__)

GroupRunner = Callable[[GroupJob], list[BaseFileWriteResult]]


@dataclass
class ClusteringResult:
    instant_time: str
    groups: int = 0
    input_files: int = 0
    input_bytes: int = 0
    output_files: int = 0
    output_bytes: int = 0
    committed: bool = False
    rolled_back: bool = False
    reason: str = ""
    duration_seconds: float = 0.0
    written: list[BaseFileWriteResult] = field(default_factory=list, repr=False)

    @property
    def output_records(self) -> int:
        """Records in the files written: the commit's `totalRecordsWritten` (sum of its write stats)."""
        return sum(w.record_count for w in self.written)


def _readable_schema(table: HudiTable, timeline: Timeline) -> TableSchema | None:
    """`latest_table_schema_of`, with a commit file that cannot be decoded refusing the plan."""
    try:
        return latest_table_schema_of(table, timeline)
    except HudiTableServiceError as exc:
        raise PlanRefusedError(
            f"table {table.name!r} at {table.base_uri}: the table schema cannot be read: {exc}"
        ) from exc


def group_jobs(
    table: HudiTable,
    instant_time: str,
    plan: PlannedClustering,
    config: HoodieConfig,
    schema: str | None,
    read_instants: InstantFilter | None = None,
) -> list[GroupJob]:
    """One Spark job per group. Slices with log files (merge-on-read) are read merged as of
    `read_instants` (the timeline at execution start, read up to the clustering instant, as Hudi's
    `readRecordsForGroupWithLogs` scans with `latestInstantTime = Tc`)."""
    clustering = config.clustering
    sort_value = plan.strategy_params.get("hoodie.clustering.plan.strategy.sort.columns")
    sort_columns = tuple(c.strip() for c in sort_value.split(",") if c.strip()) if sort_value else ()
    order = OrderSpec(clustering.layout_strategy, sort_columns)
    merge = _merge_config(table, plan)
    jobs = []
    for group_index, group in enumerate(plan.groups):
        if not group.slices:
            continue
        paths = tuple(s.base_file_path or s.log_file_paths[0] for s in group.slices)
        sizes = tuple(sum(_file_size(table, p) for p in _slice_files(s)) for s in group.slices)
        merged_read = None
        if merge is not None and any(s.log_file_paths for s in group.slices):
            if read_instants is None:
                raise HudiTableServiceError(
                    f"{table.base_uri}: clustering {instant_time} reads log files but no timeline was given"
                )
            inputs = tuple(_merged_input(s) if s.log_file_paths else None for s in group.slices)
            merged_read = MergedRead(merge, read_instants, inputs)
        jobs.append(
            GroupJob(
                base_uri=table.base_uri,
                storage_options=dict(table.storage_options),
                table_name=table.name,
                instant_time=instant_time,
                partition_path=group.partition_path,
                input_paths=paths,
                input_sizes=sizes,
                order=order,
                curve_build_method=clustering.curve_build_method,
                curve_sample_size=clustering.sample_size,
                target_file_bytes=clustering.target_file_max_bytes,
                parquet=config.parquet,
                avro_schema_json=schema,
                group_index=group_index,
                populate_meta_fields=table.config.populate_meta_fields,
                merged_read=merged_read,
            )
        )
    return jobs


def _merge_config(table: HudiTable, plan: PlannedClustering) -> MergeConfig | None:
    """The table's merge rules when some slice has log files; a payload class or record merger the
    reader does not reproduce refuses the plan (PlanRefusedError naming it)."""
    if not any(s.log_file_paths for g in plan.groups for s in g.slices):
        return None
    try:
        return MergeConfig.from_table_properties(table.config.raw, table.name)
    except HudiTableServiceError as exc:
        raise PlanRefusedError(f"{table.base_uri}: clustering reads log files: {exc}") from exc


def _slice_files(s: PlannedSlice) -> tuple[str, ...]:
    return ((s.base_file_path,) if s.base_file_path else ()) + s.log_file_paths


def _merged_input(s: PlannedSlice) -> MergedSliceInput:
    return MergedSliceInput(
        s.partition_path, s.file_id, s.base_instant_time, s.base_file_path, s.log_file_paths
    )


def _file_size(table: HudiTable, path: str) -> int:
    status = table.storage.status(path)
    if status is None:
        raise ConflictError(f"{table.base_uri}: clustering input {path} no longer exists")
    return status.size


def check_no_conflict(
    table: HudiTable, instant_time: str, plan: PlannedClustering, read_instants: InstantFilter | None = None
) -> None:
    """Raise ConflictError if committing would drop a change made since the plan was scheduled.

    On merge-on-read also a writer's log append to an input file group since the execution's read
    (`read_instants`: the timeline its merged read used; `log_conflicts.check_no_log_appends`)."""
    timeline = table.load_timeline()
    requested = Instant(instant_time, table.layout.clustering_action, State.REQUESTED)
    if not table.storage.exists(table.layout.instant_path(requested)):
        raise ConflictError(f"{table.base_uri}: clustering {instant_time} was rolled back by another process")
    base_instants = _base_instants(plan)
    # Storage's listing of the plan's partitions, checked against the MDT's when the table has one:
    # a newer slice only one of them lists would otherwise be dropped by the replace.
    partitions = {fg_id[0] for fg_id in base_instants}
    view = verified_storage_view(table, timeline, partitions, files_of_pending_cleans(table, timeline))
    for fg_id, base_instant in base_instants.items():
        group = view.file_groups.get(fg_id)
        if group is None or group.latest_slice is None:
            raise ConflictError(
                f"{table.base_uri}: input file group {fg_id} of clustering {instant_time} is gone"
            )
        if group.replaced_by is not None:
            raise ConflictError(
                f"{table.base_uri}: input file group {fg_id} was replaced by {group.replaced_by} "
                f"after clustering {instant_time} was planned"
            )
        latest = group.latest_slice.base_instant_time
        if latest != base_instant:
            raise ConflictError(
                f"{table.base_uri}: commit {latest} updated file group {fg_id} after clustering "
                f"{instant_time} read slice {base_instant}; committing would drop that update"
            )
    if table.config.table_type is TableType.MERGE_ON_READ:
        if read_instants is None:
            raise ConflictError(
                f"{table.base_uri}: clustering {instant_time} on a merge-on-read table cannot be checked "
                "for log appends without the timeline its read used"
            )
        check_no_log_appends(table, instant_time, plan, view, timeline, read_instants)


def _base_instants(plan: PlannedClustering) -> dict[FileGroupId, str]:
    """(partition, fileId) → base instant of the slice the plan read."""
    return {s.file_group_id: s.base_instant_time for g in plan.groups for s in g.slices}


def _marker_files(table: HudiTable, instant_time: str) -> set[str]:
    return {m.data_file_path for m in list_markers(table.storage, instant_time)}


def write_stats(results: Sequence[BaseFileWriteResult]) -> dict[str, tuple[codecs.WriteStat, ...]]:
    by_partition: dict[str, list[codecs.WriteStat]] = {}
    for r in results:
        by_partition.setdefault(r.partition_path, []).append(
            codecs.WriteStat(
                file_id=r.file_id,
                path=r.path,
                prev_commit=codecs.NULL_COMMIT,
                num_writes=r.record_count,
                num_inserts=r.record_count,
                total_write_bytes=r.file_size_bytes,
                partition_path=r.partition_path,
                file_size_in_bytes=r.file_size_bytes,
                runtime_stats=codecs.RuntimeStats(total_create_time=r.write_time_ms),
            )
        )
    return {p: tuple(stats) for p, stats in by_partition.items()}


def commit_clustering(
    table: HudiTable,
    instant_time: str,
    plan: PlannedClustering,
    results: Sequence[BaseFileWriteResult],
    schema: str | None,
    lock: TableLock,
    heartbeat: Heartbeat | None = None,
    inflight_mtime_ns: int | None = None,
    read_instants: InstantFilter | None = None,
    *,
    zone: tzinfo,
    now: datetime,
    rolling: RollingMetadata = NO_ROLLING,
) -> None:
    """Under the lock: conflict re-check, finalize (drop unreferenced files), write the replacecommit
    (with the rolling metadata keys carried forward, `rolling`).

    `zone`: the timeline zone, in which the record index stores the instant time of moved keys.

    `read_instants` is the timeline the execution read the input slices with (merge-on-read: a
    write it did not read conflicts).

    With `heartbeat` (this attempt's) it first re-checks that the attempt still owns the instant:
    the heartbeat never lapsed past the expiry window (Java's `HeartbeatUtils.abortIfHeartbeatExpired`
    before a commit) and `Tc.replacecommit.inflight` is still the file this attempt created
    (`inflight_mtime_ns`): an executor that took the instant over rolled it back and re-created it.
    """
    with lock:
        if heartbeat is not None:
            _check_still_owned(table, instant_time, heartbeat, inflight_mtime_ns)
        check_no_conflict(table, instant_time, plan, read_instants)
        keep = {r.path for r in results}
        for stray in sorted(_marker_files(table, instant_time) - keep):
            # A retried task's leftover: a file group must not hold two base files of one instant.
            table.storage.delete_file(stray)
        replaced: dict[str, list[str]] = {}
        for group in plan.groups:
            for s in group.slices:
                replaced.setdefault(s.partition_path, []).append(s.file_id)
        metadata = codecs.ReplaceCommitMetadata(
            partition_to_write_stats=write_stats(results),
            compacted=False,
            extra_metadata={"schema": schema} if schema else {},
            operation_type=codecs.WriteOperationType.CLUSTER,
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in replaced.items()},
        )
        lock.check_held()
        if heartbeat is not None:
            heartbeat.check_owned()  # finalizing may have taken a while
        pending = Instant(instant_time, table.layout.clustering_action, State.INFLIGHT)
        complete_table_service(
            table, table.load_timeline(), pending, metadata,
            now=now, zone=zone, relocated_in=zone, rolling=rolling,
        )  # fmt: skip
    delete_marker_dir(table.storage, instant_time)


def _check_still_owned(
    table: HudiTable, instant_time: str, heartbeat: Heartbeat, inflight_mtime_ns: int | None
) -> None:
    heartbeat.check_owned()
    if inflight_mtime_ns is None:
        return
    inflight = Instant(instant_time, table.layout.clustering_action, State.INFLIGHT)
    status = table.storage.status(table.layout.instant_path(inflight))
    if status is None or status.mtime_ns != inflight_mtime_ns:
        raise HeartbeatLostError(
            f"{table.base_uri}: {inflight} is not the file this attempt created (another executor took "
            "the clustering over); this attempt neither commits nor rolls back",
            instant=instant_time,
        )


def _create_inflight(table: HudiTable, instant_time: str, lock: TableLock) -> int | None:
    """Under the lock: `Tc.replacecommit.inflight`; its mtime identifies this attempt's claim."""
    lock.check_held()
    inflight = Instant(instant_time, table.layout.clustering_action, State.INFLIGHT)
    create_instant_file(table.storage, table.layout, inflight)
    status = table.storage.status(table.layout.instant_path(inflight))
    return status.mtime_ns if status is not None else None


def run_groups(
    jobs: Sequence[GroupJob], runner: GroupRunner, max_parallelism: int
) -> list[BaseFileWriteResult]:
    """Every group as its own Spark job, in a bounded thread pool; the first failure fails the plan."""
    results: list[BaseFileWriteResult] = []
    with ThreadPoolExecutor(max_workers=max(1, min(max_parallelism, len(jobs) or 1))) as pool:
        for written in pool.map(runner, jobs):
            results.extend(written)
    return results


@dataclass(frozen=True)
class ScheduleOutcome:
    """What scheduling did: the new instant (None if nothing was written) and why."""

    instant_time: str | None
    plan: PlannedClustering | None
    reason: str


@dataclass(frozen=True)
class Decided:
    """The trigger's decision, with the survey of the table and the small files it read when a data
    trigger needed them (the planner then plans from that survey: no second listing)."""

    decision: TriggerDecision
    survey: ClusteringSurvey | None = None
    small_files: SmallFiles | None = None


def decide_clustering(
    table: HudiTable,
    timeline: Timeline,
    clustering: ClusteringConfig,
    mode: TriggerMode,
    *,
    schedule: ClusteringSchedule | None,
    now: datetime,
    zone: tzinfo,
) -> Decided:
    """`clustering_due` on `timeline`; the view is loaded only when a data trigger needs small files."""
    local = now.astimezone(zone)
    clock = local if schedule is not None else None
    decision = clustering_due(timeline, clustering, mode, table.facts_reader, schedule, clock)
    if not decision.needs_small_files:
        return Decided(decision)
    # A batch of partitions at a time: what is kept is the small files' slices, not the table's view.
    survey = survey_partitions(table.iter_views(timeline), clustering)
    small = small_files(survey, clustering, local)
    return Decided(
        clustering_due(timeline, clustering, mode, table.facts_reader, schedule, clock, small), survey, small
    )


def schedule_clustering(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    *,
    now: datetime,
    zone: tzinfo,
    mode: TriggerMode = TriggerMode.MANUAL,
    dry_run: bool = False,
    schedule: ClusteringSchedule | None = None,
) -> ScheduleOutcome:
    """Plan over a fresh snapshot under the lock and write `T.replacecommit.requested`.

    Nothing is written when the trigger says wait, a plan is already pending (at most one pending
    clustering per table: it runs first), nothing is eligible, or `dry_run` is set. A plan that
    execution could not run raises PlanRefusedError instead (`preflight.check_plan_executable`).
    `schedule` (the daemon's per-table section) adds its triggers and caps the plan's bytes.
    """
    with lock:
        timeline = table.load_timeline()
        decided = decide_clustering(
            table, timeline, config.clustering, mode, schedule=schedule, now=now, zone=zone
        )
        decision = decided.decision
        if decision.step is not ClusteringStep.SCHEDULE:
            return ScheduleOutcome(None, None, decision.reason)
        outcome = plan_clustering(
            decided.survey or table.iter_views(timeline),
            config.clustering,
            now.astimezone(zone),
            config.parquet.max_file_size_bytes,
            max_bytes_per_run=schedule.max_bytes_per_run if schedule is not None else None,
        )
        if outcome.plan is None:
            log.debug("table %s: no clustering scheduled: %s", table.name, outcome.reason)
            return ScheduleOutcome(None, None, outcome.reason)
        # Planned on the MDT's listing when the table has one: written only once storage agrees on
        # the plan's partitions (any executor, Hudi's too, would run it as written).
        partitions = {g.partition_path for g in outcome.plan.groups}
        check_mdt_listing(table, timeline, partitions, files_of_pending_cleans(table, timeline))
        # A pending plan blocks writers' updates to its file groups: never write one that cannot run.
        check_plan_executable(table, config, outcome.plan, _readable_schema(table, timeline))
        if dry_run:
            return ScheduleOutcome(None, outcome.plan, "dry run: nothing written")
        instant_time = next_instant_time(timeline, now, zone)
        metadata = mark_as_ours(requested_metadata(outcome.plan, table.storage))
        lock.check_held()
        create_instant_file(
            table.storage,
            table.layout,
            Instant(instant_time, table.layout.clustering_action, State.REQUESTED),
            codecs.encode(metadata, table.format.clustering_plan_schema),
        )
    log.debug(
        "table %s: scheduled clustering %s: %d groups, %d file slices",
        table.name, instant_time, len(outcome.plan.groups), sum(len(g.slices) for g in outcome.plan.groups),
    )  # fmt: skip
    return ScheduleOutcome(instant_time, outcome.plan, outcome.reason)


def execute_clustering(
    table: HudiTable,
    instant_time: str,
    config: HoodieConfig,
    runner: GroupRunner,
    lock: TableLock,
    *,
    zone: tzinfo,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    wall_clock: Callable[[], float] = time.time,
) -> ClusteringResult:
    """Execute a pending clustering plan (ours or Hudi's) and commit it; one executor per instant.

    Claim, under the lock on a reloaded timeline: a REQUESTED plan is claimed by starting its
    heartbeat (`.hoodie/.heartbeat/Tc`, as `HoodieHeartbeatClient.start`) and writing
    `Tc.replacecommit.inflight`. An INFLIGHT one is another attempt's: while it is alive by
    `service.table.heartbeat.judge` this raises `InstantOwnedError` (naming the instant and the
    heartbeat's age) and touches nothing. Unlike Hudi 0.15's `BaseHoodieTableServiceClient.cluster`,
    which rolls back any inflight clustering it is asked to run, an abandoned attempt only is
    claimed (heartbeat under the lock), rolled back by markers (the plan stays), and re-executed.

    The heartbeat beats through the Spark work and the commit, and is stopped and deleted at the end,
    whatever happens (`wall_clock` judges others' heartbeats). If a group fails, this attempt is
    rolled back at once, so no partial file outlives the failure (hudi-rs would show such files once
    a later commit completes). If committing would drop a concurrent update, the whole clustering is
    rolled back and the result says so. If the heartbeat lapsed (`HeartbeatLostError`), nothing is
    committed or rolled back: the instant may be another executor's by then.
    """
    started = time.monotonic()
    settings = HeartbeatSettings.from_config(config)
    instant = table.load_timeline().find(instant_time, Action.REPLACE_COMMIT)
    if instant is None or instant.is_completed:
        raise HudiTableServiceError(f"{table.base_uri}: no pending clustering at {instant_time}")
    plan = read_clustering_plan(table, instant)  # confined before anything is read or rolled back
    heartbeat = Heartbeat(table.storage, instant_time, settings, table_name=table.name)
    inflight_mtime_ns: int | None = None
    with lock:
        timeline = table.load_timeline()
        instant = timeline.find(instant_time, Action.REPLACE_COMMIT)
        if instant is None or instant.is_completed:
            raise HudiTableServiceError(f"{table.base_uri}: no pending clustering at {instant_time}")
        verdict = refuse_if_alive(table.storage, table.layout, instant, settings, wall_clock(), "executing")
        schema = checked_table_schema(table, timeline)
        # What the merged read of log files sees (Hudi scans them up to the clustering instant);
        # the commit refuses writes to the input groups this did not see.
        read_instants = instant_filter(timeline, latest_instant_time=instant_time)
        # Planned before anything is written: a plan that cannot run leaves no inflight attempt.
        jobs = group_jobs(table, instant_time, plan, config, schema, read_instants)
        heartbeat.start()
        try:
            if instant.state is State.REQUESTED:
                inflight_mtime_ns = _create_inflight(table, instant_time, lock)
        except BaseException:
            heartbeat.stop()
            raise
    try:
        if instant.state is State.INFLIGHT:
            log.warning(
                "table %s: clustering %s was interrupted (%s); rolling back that attempt",
                table.name, instant_time, verdict.describe(),
            )  # fmt: skip
            rollback_instant(
                table, instant_time, lock, now=now(), tz=zone, keep_requested=True,
                heartbeat_settings=settings, owner=heartbeat,
            )  # fmt: skip
            with lock:
                heartbeat.check_owned()
                inflight_mtime_ns = _create_inflight(table, instant_time, lock)
        return _run_and_commit(
            table, instant_time, plan, config, runner, lock, jobs, schema, heartbeat, inflight_mtime_ns,
            read_instants, zone=zone, now=now, started=started,
        )  # fmt: skip
    finally:
        heartbeat.stop()


def _run_and_commit(
    table: HudiTable,
    instant_time: str,
    plan: PlannedClustering,
    config: HoodieConfig,
    runner: GroupRunner,
    lock: TableLock,
    jobs: list[GroupJob],
    schema: str | None,
    heartbeat: Heartbeat,
    inflight_mtime_ns: int | None,
    read_instants: InstantFilter,
    *,
    zone: tzinfo,
    now: Callable[[], datetime],
    started: float,
) -> ClusteringResult:
    """The Spark work and the commit of a claimed attempt (its heartbeat beating)."""
    settings = heartbeat.settings
    result = ClusteringResult(
        instant_time,
        groups=len(jobs),
        input_files=sum(len(j.input_paths) for j in jobs),
        input_bytes=sum(sum(j.input_sizes) for j in jobs),
    )
    try:
        results = run_groups(jobs, runner, config.clustering.max_parallelism)
    except BaseException:
        if heartbeat.lost:
            log.error("table %s: clustering %s failed after losing its heartbeat", table.name, instant_time)
        else:
            log.error("table %s: clustering %s failed; rolling back this attempt", table.name, instant_time)
            rollback_instant(
                table, instant_time, lock, now=now(), tz=zone, keep_requested=True,
                heartbeat_settings=settings, owner=heartbeat,
            )  # fmt: skip
        raise
    result.written = results
    result.output_files = len(results)
    result.output_bytes = sum(r.file_size_bytes for r in results)
    try:
        commit_clustering(
            table, instant_time, plan, results, schema, lock, heartbeat, inflight_mtime_ns, read_instants,
            zone=table.timeline_zone(zone), now=now(), rolling=RollingMetadata.of(config),
        )  # fmt: skip
    except ConflictError as conflict:
        # The lock is released by now (locks are not re-entrant; rollback takes it itself).
        # The plan goes too (its `.requested` file), as when Hudi 0.15's writer gives up a clustering
        # its update conflicts with (a rollback with deleteInstants): kept, it would conflict on every
        # retry. A writer that listed the plan just before may fail once reading it; it retries.
        log.warning("table %s: %s; rolling back clustering %s", table.name, conflict, instant_time)
        rollback_instant(
            table, instant_time, lock, now=now(), tz=zone, keep_requested=False,
            heartbeat_settings=settings, owner=heartbeat,
        )  # fmt: skip
        result.rolled_back = True
        result.reason = str(conflict)
        result.duration_seconds = time.monotonic() - started
        return result
    result.committed = True
    result.duration_seconds = time.monotonic() - started
    log.debug(
        "table %s: clustering %s committed: %d groups, %d files (%d bytes) -> %d files (%d bytes) in %.1fs",
        table.name, instant_time, result.groups, result.input_files, result.input_bytes,
        result.output_files, result.output_bytes, result.duration_seconds,
    )  # fmt: skip
    return result
