"""Execute a pending compaction plan (Hudi's or ours) and commit it: `HoodieCompactor.compact` and
`BaseHoodieTableServiceClient.completeCompaction`; the operations run as Spark tasks
(`service.executor.compaction_job`).

Claim under the lock: this attempt's heartbeat and the empty `C.compaction.inflight`
(`transitionCompactionRequestedToInflight`). An INFLIGHT plan is an earlier attempt: while its
heartbeat is alive it is another executor's and is refused; otherwise it is rolled back first (its
files by its markers, `C.compaction.inflight` deleted, the plan kept), as Java's `compact(instant)`
does. Java keeps no heartbeat for compaction, so a Java compactor still running the same plan cannot
be told from a dead one: do not run Java's and this compactor on the same table. Each operation
(one Spark task, as `HoodieCompactor.compact` parallelizes them) reads its slice merged
(`read_file_slice`: the base file and the plan's log files, blocks of instants up to the last
completed commit, deltacommit or rollback, as the compactor's scanner), and writes
`<fileId>_<token>_C.parquet` in the same file group after a DIRECT marker (MERGE with a base file,
CREATE for a log-only slice; a log-only slice that merges to nothing writes nothing). Meta columns
are kept as merged (`preserveMetadata`), `_hoodie_file_name` names the new file.

Commit under the lock: the plan still pending, files with markers that are not in the stats deleted
(finalize), the metadata table's `files` partition first, then `C.commit` (JSON, `compacted: true`,
operationType COMPACT: Java writers' conflict check tolerates that alone, and the table schema in
extraMetadata), then the marker folder goes. If an operation fails, the files this attempt wrote
are deleted and `C.compaction.inflight` stays, as a crashed Java compactor leaves it; the next
execution (ours or Java's) rolls it back by its markers and re-executes the plan.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from service.config.hoodie import HoodieConfig
from service.errors import HudiTableServiceError
from service.executor.compaction_job import CompactionJob
from service.lock.base import TableLock
from service.rollback import rollback_instant
from service.table import codecs
from service.table.data_files import BaseFile, LogFile, parse_base_file, parse_log_file
from service.table.fs_view import FileSlice
from service.table.heartbeat import Heartbeat, HeartbeatSettings, refuse_if_alive
from service.table.instant import Action, Instant, State
from service.table.log_format.merge import MergeConfig
from service.table.log_format.slice_reader import instant_filter
from service.table.markers import delete_marker_dir, list_markers
from service.table.rolling_metadata import RollingMetadata
from service.table.service_commit import complete_table_service
from service.table.table import HudiTable
from service.table.table_schema import checked_table_schema
from service.table.timeline import Timeline, create_instant_file

log = logging.getLogger(__name__)

# `BaseHoodieCompactionPlanGenerator`/`HoodieCompactor`: the scan reads up to the last completed
# commit, deltacommit or rollback.
_SCAN_UP_TO = (Action.COMMIT, Action.DELTA_COMMIT, Action.ROLLBACK)
# The operations of one plan, run (as Spark tasks: `SparkExecutor.run_compaction`); the stats of
# the files written.
CompactionRunner = Callable[[CompactionJob], list[codecs.WriteStat]]


@dataclass
class CompactionResult:
    instant_time: str
    operations: int = 0
    output_files: int = 0
    output_bytes: int = 0
    records: int = 0
    committed: bool = False
    duration_seconds: float = 0.0
    stats: list[codecs.WriteStat] = field(default_factory=list, repr=False)


def pending_compactions(timeline: Timeline) -> list[Instant]:
    return [i for i in timeline.by_actions([Action.COMPACTION]).pending()]


def read_compaction_plan(table: HudiTable, instant_time: str) -> codecs.CompactionPlan:
    requested = Instant(instant_time, Action.COMPACTION, State.REQUESTED)
    path = table.layout.instant_path(requested)
    try:
        data = table.storage.read_bytes(path)
    except FileNotFoundError:
        raise HudiTableServiceError(f"{table.base_uri}: no compaction plan {path}") from None
    plan = codecs.decode(codecs.CompactionPlan, data, table.storage.qualify(path))
    if plan.version != codecs.LATEST_COMPACTION_PLAN_VERSION:
        raise HudiTableServiceError(
            f"{table.storage.qualify(path)}: compaction plan version {plan.version}; only version "
            f"{codecs.LATEST_COMPACTION_PLAN_VERSION} (file names, Hudi 0.10+) is executed"
        )
    return plan


def _slice_of(table: HudiTable, op: codecs.CompactionOperation, where: str) -> FileSlice:
    """The operation's input slice, with each file's size from storage; the plan's file names are
    confined to the operation's partition."""
    partition = op.partition_path or ""
    if op.file_id is None or op.base_instant_time is None:
        raise HudiTableServiceError(f"{where}: an operation lacks its fileId or baseInstantTime")
    guard = table.path_guard(where)
    partition = guard.partition("partitionPath", partition)
    base: BaseFile | None = None
    if op.data_file_path:
        rel = guard.relative_file("dataFilePath", _in_partition(partition, op.data_file_path), partition)
        base = parse_base_file(partition, rel.rsplit("/", 1)[-1], _size(table, rel, where))
    logs: list[LogFile] = []
    for name in op.delta_file_paths or ():
        rel = guard.relative_file("deltaFilePaths", _in_partition(partition, name), partition)
        parsed = parse_log_file(partition, rel.rsplit("/", 1)[-1], _size(table, rel, where))
        if parsed is None:
            raise HudiTableServiceError(f"{where}: {name!r} is not a log file name")
        logs.append(parsed)
    logs.sort(key=lambda lf: lf.order_key)  # readers merge in LogFileComparator order, whatever the plan's
    return FileSlice(partition, op.file_id, op.base_instant_time, base, tuple(logs))


def _in_partition(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def _size(table: HudiTable, rel: str, where: str) -> int:
    status = table.storage.status(rel)
    if status is None:
        raise HudiTableServiceError(f"{where}: input file {rel} does not exist")
    return status.size


def execute_compaction(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    instant_time: str,
    runner: CompactionRunner,
    *,
    zone: tzinfo,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    wall_clock: Callable[[], float] = time.time,
) -> CompactionResult:
    """Execute the pending compaction `instant_time` (its operations through `runner`, as Spark
    tasks) and commit it as `C.commit`. An INFLIGHT one is an earlier attempt: refused while its
    heartbeat is alive, else rolled back and re-executed."""
    started = time.monotonic()
    settings = HeartbeatSettings.from_config(config)
    plan = read_compaction_plan(table, instant_time)
    where = table.storage.qualify(
        table.layout.instant_path(Instant(instant_time, Action.COMPACTION, State.REQUESTED))
    )
    merge = MergeConfig.from_table_properties(table.config.raw, table.name)
    heartbeat = Heartbeat(table.storage, instant_time, settings, table_name=table.name)
    with lock:
        timeline = table.load_timeline()
        instant = timeline.find(instant_time, Action.COMPACTION)
        if instant is None or instant.is_completed:
            raise HudiTableServiceError(f"{table.base_uri}: no pending compaction at {instant_time}")
        verdict = None
        if instant.state is not State.REQUESTED:
            # Another attempt's: refused while its heartbeat is alive (InstantOwnedError).
            verdict = refuse_if_alive(
                table.storage, table.layout, instant, settings, wall_clock(), "executing"
            )
        avro_schema = checked_table_schema(table, timeline)
        heartbeat.start()
        try:
            if instant.state is State.REQUESTED:
                create_instant_file(
                    table.storage, table.layout, Instant(instant_time, Action.COMPACTION, State.INFLIGHT)
                )
        except BaseException:
            heartbeat.stop()
            raise
    result = CompactionResult(instant_time, operations=len(plan.operations or ()))
    try:
        if verdict is not None:
            # `rollbackInflightCompaction` before re-executing, as Java's `compact(instant)` does: the
            # attempt's files go (by its markers), `C.compaction.inflight` goes, the plan stays.
            log.warning(
                "table %s: compaction %s was interrupted (%s); rolling back that attempt",
                table.name, instant_time, verdict.describe(),
            )  # fmt: skip
            rollback_instant(
                table, instant_time, lock, now=now(), tz=zone, keep_requested=True,
                heartbeat_settings=settings, owner=heartbeat,
            )  # fmt: skip
            with lock:
                heartbeat.check_owned()
                lock.check_held()
                create_instant_file(
                    table.storage, table.layout, Instant(instant_time, Action.COMPACTION, State.INFLIGHT)
                )
        stats = runner(_job(table, config, instant_time, plan, timeline, merge, avro_schema, where))
    except BaseException:
        if heartbeat.lost:
            # The instant may be another executor's by now: its files carry the same names.
            log.error("table %s: compaction %s failed after losing its heartbeat", table.name, instant_time)
        else:
            log.error(
                "table %s: compaction %s failed; deleting this attempt's files", table.name, instant_time
            )
            for marker in list_markers(table.storage, instant_time):
                table.storage.delete_file(marker.data_file_path)
        heartbeat.stop()
        raise
    try:
        # A failure here leaves the attempt inflight with its files and markers (the next execution
        # rolls it back); once `C.commit` exists nothing of it may be deleted.
        rolling = RollingMetadata.of(config)
        _commit(table, instant_time, stats, avro_schema, lock, heartbeat, now(), zone, rolling)
    finally:
        heartbeat.stop()
    result.stats = stats
    result.output_files = len(stats)
    result.output_bytes = sum(s.file_size_in_bytes for s in stats)
    result.records = sum(s.num_writes for s in stats)
    result.committed = True
    result.duration_seconds = time.monotonic() - started
    log.debug(  # the CLI prints the result, the daemon logs its run line (`run_log.compaction_outcome`)
        "table %s: compaction %s committed: %d operations -> %d files (%d bytes) in %.1fs",
        table.name, instant_time, result.operations, result.output_files, result.output_bytes,
        result.duration_seconds,
    )  # fmt: skip
    return result


def _job(
    table: HudiTable,
    config: HoodieConfig,
    instant_time: str,
    plan: codecs.CompactionPlan,
    timeline: Timeline,
    merge: MergeConfig,
    avro_schema: str | None,
    where: str,
) -> CompactionJob:
    """The plan as Spark tasks take it: each operation's slice resolved on the driver, and the
    timeline as the compactor's scanner reads it (blocks up to the last completed commit,
    deltacommit or rollback)."""
    operations = list(plan.operations or ())
    last = timeline.by_actions(_SCAN_UP_TO).completed().last
    return CompactionJob(
        base_uri=table.base_uri,
        storage_options=dict(table.storage_options),
        table_name=table.name,
        instant_time=instant_time,
        populate_meta_fields=table.config.populate_meta_fields,
        parquet=config.parquet,
        avro_schema_json=avro_schema,
        merge=merge,
        instants=instant_filter(timeline, last.timestamp if last is not None else None),
        slices=tuple(_slice_of(table, op, where) for op in operations),
        log_bytes=tuple(int((op.metrics or {}).get("TOTAL_LOG_FILES_SIZE", 0.0)) for op in operations),
    )


def _commit(
    table: HudiTable,
    instant_time: str,
    stats: list[codecs.WriteStat],
    schema: str | None,
    lock: TableLock,
    heartbeat: Heartbeat,
    now: datetime,
    zone: tzinfo,
    rolling: RollingMetadata,
) -> None:
    """Under the lock: this attempt's stray files go, then C completes (`complete_table_service`,
    carrying the rolling metadata keys forward)."""
    by_partition: dict[str, list[codecs.WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    metadata = codecs.CommitMetadata(
        partition_to_write_stats={p: tuple(s) for p, s in by_partition.items()},
        compacted=True,
        extra_metadata={codecs.SCHEMA_KEY: schema} if schema else {},
        operation_type=codecs.WriteOperationType.COMPACT,
    )
    with lock:
        heartbeat.check_owned()
        timeline = table.load_timeline()
        current = timeline.find(instant_time, Action.COMPACTION)
        if current is None or current.state is not State.INFLIGHT:
            raise HudiTableServiceError(
                f"{table.base_uri}: compaction {instant_time} is {current} now, not this attempt's inflight"
            )
        keep = {s.path for s in stats}
        for marker in list_markers(table.storage, instant_time):
            if marker.data_file_path not in keep:
                table.storage.delete_file(marker.data_file_path)
        lock.check_held()
        complete_table_service(table, timeline, current, metadata, now=now, zone=zone, rolling=rolling)
    delete_marker_dir(table.storage, instant_time)
