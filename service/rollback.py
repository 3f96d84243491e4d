"""Roll back a failed or pending write instant the way the table's Hudi version does (0.15, 1.0, 1.1).

Steps (`BaseRollbackPlanActionExecutor`, `BaseRollbackActionExecutor`):

1. Plan: a `HoodieRollbackPlan` naming the files the instant wrote. From its markers (one request
   per marker: partition, file id, base instant, the file), as `MarkerBasedRollbackStrategy`; when
   the instant left no markers (a writer that crashed before its timeline-server markers were
   flushed, or markers deleted), as `ListingBasedRollbackStrategy`: a listing of the partitions it
   touched for base files carrying its instant time and log files whose base instant it is (one
   delete request per partition), and for a deltacommit a rollback command block in each file
   group its workload profile says it appended to. An instant still in REQUESTED state wrote
   nothing: its plan has no requests, as in Java. On versions 8 and 9 every log file is named by
   the deltacommit that wrote it and is deleted whole, never voided with a command block
   (`TableFormat.rollback_deletes_log_files`); each has a CREATE marker.
2. Under the table lock (on object stores "create if absent" is exclusive only under it): reload
   the timeline, refuse a T whose heartbeat is alive (unless the caller owns it), write
   `R.rollback.requested` (the Avro plan), start R's heartbeat (`.hoodie/.heartbeat/R`, kept until
   the rollback ends), write an empty `R.rollback.inflight`. A pending rollback of T whose heartbeat
   (R's own) is alive is another process's at work and is refused; one without is resumed.
3. Delete the files. A file already gone counts as deleted, so a re-run after a crash completes; a
   file that cannot be deleted fails the rollback before step 4, leaving it pending for a retry.
4. Under the table lock, after re-checking that R's heartbeat (and the caller's of T) never lapsed:
   mirror R into the metadata table (`service.table.mdt.rollback`), delete `T.<action>.inflight`,
   then `T.<action>.requested` (unless the plan is kept for a retry, as Java's
   `rollbackInflightClustering` does), then write `R.rollback` (Avro `HoodieRollbackMetadata`;
   `R_<completion>.rollback` on timeline layout 2). Java's `finishRollback` uses this order under
   its transaction lock.
5. Delete `.hoodie/.temp/T` (the markers) and, when the instant is gone, its heartbeat file.

Re-running is idempotent: a pending rollback whose plan targets T is completed (never a second one
started), and a T that is gone with a completed rollback naming it is reported as already rolled
back. The caller must know T is dead (its own failed attempt, or a writer whose heartbeat expired):
rolling back a live write breaks it; as a last guard, a T whose heartbeat file is alive is refused
(`InstantOwnedError`) unless the caller passes its own heartbeat of T. The lock is taken here, for
steps 2 and 4: the caller must not hold it (table locks are not re-entrant).
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from service.errors import (
    ConflictError,
    CorruptTableError,
    DeleteFailedError,
    HudiTableServiceError,
    InstantExistsError,
    InstantOwnedError,
    PlanRefusedError,
    UnsupportedTableError,
)
from service.lock.base import TableLock
from service.table import codecs
from service.table.data_files import parse_base_file, parse_log_file_name
from service.table.heartbeat import (
    Heartbeat,
    HeartbeatSettings,
    heartbeat_path,
    instant_name,
    is_expired,
    last_heartbeat_ms,
    refuse_if_alive,
)
from service.table.instant import Action, Instant, State
from service.table.layout import METAFOLDER
from service.table.log_format.rollback_block import append_rollback_block
from service.table.markers import IOType, Marker, delete_marker_dir, list_markers
from service.table.mdt.commit import partition_key
from service.table.mdt.records import RECORD_TYPE_FILE_LIST, FileInfo, FilesRecord
from service.table.mdt.rollback import mirror_rollback
from service.table.table import HudiTable
from service.table.timeline import (
    Timeline,
    complete_instant,
    create_instant_file,
    delete_instant_file,
    next_instant_time,
)

log = logging.getLogger(__name__)

ROLLBACK_PLAN_VERSION = 1
ROLLBACK_METADATA_VERSION = 1
# Write actions whose pending instants the product rolls back. A deltacommit (merge-on-read) is
# rolled back from its markers, or without them from a listing and its workload profile: its base
# files (and log files of slices it began) are deleted, and each file group it appended log blocks
# to gets a rollback command block (`service.table.log_format.rollback_block`).
ROLLBACK_ACTIONS = frozenset({Action.COMMIT, Action.REPLACE_COMMIT, Action.DELTA_COMMIT})
# A compaction completes as a commit; a failed attempt is rolled back from its MERGE/CREATE markers
# and its plan kept for the retry (`HoodieTable.rollbackInflightCompaction`, `keep_requested=True`).
# Pending table services: a compaction, and on layout 2 a clustering (its own action until it
# completes as a replacecommit).
_PLANNED_ACTIONS = ROLLBACK_ACTIONS | {Action.COMPACTION, Action.CLUSTERING}

Clock = Callable[[], float]


@dataclass(frozen=True)
class RollbackOutcome:
    """What a rollback call did. `rollback_time` is None when there was nothing to roll back."""

    instant_time: str
    rollback_time: str | None
    metadata: codecs.RollbackMetadata | None
    resumed: bool = False  # completed a rollback a crashed run had started
    already_rolled_back: bool = False

    @property
    def deleted_files(self) -> tuple[str, ...]:
        if self.metadata is None:
            return ()
        return tuple(f for pm in self.metadata.partition_metadata.values() for f in pm.success_delete_files)


# ---------------------------------------------------------------------------------------- lookups


def find_pending_rollback(
    table: HudiTable, timeline: Timeline, instant_time: str
) -> tuple[Instant, codecs.RollbackPlan] | None:
    """The oldest pending rollback whose plan targets `instant_time` (Java's `getPendingRollbackInfo`)."""
    for instant in timeline.by_actions([Action.ROLLBACK]).pending():
        plan = table.facts_reader.requested_plan(instant, codecs.RollbackPlan)
        target = plan.instant_to_rollback if plan else None
        if target is not None and target.commit_time == instant_time:
            assert plan is not None
            return instant, plan
    return None


def find_completed_rollback(
    table: HudiTable, timeline: Timeline, instant_time: str
) -> tuple[Instant, codecs.RollbackMetadata] | None:
    """The newest completed rollback whose metadata names `instant_time`."""
    for instant in reversed(timeline.by_actions([Action.ROLLBACK]).completed().instants):
        metadata = table.facts_reader.metadata(instant, codecs.RollbackMetadata)
        if instant_time in metadata.commits_rollback:
            return instant, metadata
    return None


# ---------------------------------------------------------------------------------------- planning


def plan_rollback(table: HudiTable, instant: Instant) -> codecs.RollbackPlan:
    """The rollback plan of a pending instant: marker-based, listing-based when it left no markers."""
    if instant.action not in _PLANNED_ACTIONS:
        raise UnsupportedTableError(
            f"{table.base_uri}: rolling back {instant} is not supported "
            "(only commit, replacecommit, deltacommit, compaction and clustering)"
        )
    requests: list[codecs.RollbackRequest] = []
    if instant.state is not State.REQUESTED:
        markers = list_markers(table.storage, instant.timestamp)
        if markers:
            requests = _merge_log_requests([_marker_request(table, instant, m) for m in markers])
        else:
            requests = _listing_requests(table, instant)
            if instant.action is Action.DELTA_COMMIT and not table.format.rollback_deletes_log_files:
                requests += _listing_append_requests(table, instant)
    return codecs.RollbackPlan(
        instant_to_rollback=codecs.InstantInfo(commit_time=instant.timestamp, action=instant.action.value),
        rollback_requests=tuple(requests),
        version=ROLLBACK_PLAN_VERSION,
    )


def _marker_request(table: HudiTable, instant: Instant, marker: Marker) -> codecs.RollbackRequest:
    source = table.storage.qualify(f"{METAFOLDER}/.temp/{instant.timestamp}/{marker.name}")
    if table.format.rollback_deletes_log_files and parse_log_file_name(marker.file_name) is not None:
        return _log_file_request(table, instant, marker, source)
    if marker.io_type is IOType.APPEND:
        return _append_request(table, instant, marker, source)
    base = parse_base_file(marker.partition_path, marker.file_name)
    if base.instant_time != instant.timestamp:
        raise CorruptTableError(f"{source}: the marker names a file of instant {base.instant_time}")
    return codecs.RollbackRequest(
        partition_path=marker.partition_path,
        file_id=base.file_id,
        latest_base_instant=base.instant_time,
        files_to_be_deleted=(table.storage.qualify(marker.data_file_path),),
        log_blocks_to_be_deleted={},
    )


def _log_file_request(
    table: HudiTable, instant: Instant, marker: Marker, source: str
) -> codecs.RollbackRequest:
    """Versions 8/9 (`MarkerBasedRollbackStrategy.createRollbackRequestForCreateAndMerge`): a log file
    marker names a whole file of X (its name carries X), deleted like a base file; the request's
    base instant is X, as Hudi 1.x writes it."""
    log_name = parse_log_file_name(marker.file_name)
    assert log_name is not None
    if log_name.base_instant_time != instant.timestamp:
        raise CorruptTableError(
            f"{source}: the marker names a log file of instant {log_name.base_instant_time}"
        )
    return codecs.RollbackRequest(
        partition_path=marker.partition_path,
        file_id=log_name.file_id,
        latest_base_instant=instant.timestamp,
        files_to_be_deleted=(table.storage.qualify(marker.data_file_path),),
        log_blocks_to_be_deleted={},
    )


def _append_request(
    table: HudiTable, instant: Instant, marker: Marker, source: str
) -> codecs.RollbackRequest:
    """MarkerBasedRollbackStrategy.getRollbackRequestForAppend: since 0.14 an APPEND marker names the
    log file X appended to; the request names the file group and that log file (its blocks are voided
    by a command block, never deleted: earlier instants' blocks may share the file). Keyed by the log
    file's name, with the positive stub size Java records (markers carry no block sizes); Hudi 0.15's
    rollback metadata shows exactly that (`tests/clean/test_lazy_rollback_mor.py`)."""
    if instant.action is not Action.DELTA_COMMIT:
        raise CorruptTableError(f"{source}: an APPEND marker in {instant}, which writes no log files")
    log_name = parse_log_file_name(marker.file_name)
    if log_name is None or log_name.is_cdc:
        # Markers of writers before 0.14 name a base file as a container of the file id: not read.
        raise UnsupportedTableError(f"{source}: the APPEND marker names no log file; written before 0.14?")
    return codecs.RollbackRequest(
        partition_path=marker.partition_path,
        file_id=log_name.file_id,
        latest_base_instant=log_name.base_instant_time,
        files_to_be_deleted=(),
        log_blocks_to_be_deleted={marker.file_name: 1},
    )


def _merge_log_requests(requests: list[codecs.RollbackRequest]) -> list[codecs.RollbackRequest]:
    """One log request per file slice: X's log files of one slice (a writer rolled over) all sit
    before the one command block written after the slice's latest log file."""
    merged: dict[tuple[str, str, str], codecs.RollbackRequest] = {}
    out: list[codecs.RollbackRequest] = []
    for request in requests:
        if request.files_to_be_deleted or not request.log_blocks_to_be_deleted:
            out.append(request)
            continue
        key = (request.partition_path, request.file_id or "", request.latest_base_instant or "")
        old = merged.get(key)
        if old is None:
            merged[key] = request
            out.append(request)
        else:
            blocks = {**(old.log_blocks_to_be_deleted or {}), **request.log_blocks_to_be_deleted}
            merged[key] = old.model_copy(update={"log_blocks_to_be_deleted": blocks})
            out[out.index(old)] = merged[key]
    return out


def affected_partitions(table: HudiTable, instant: Instant) -> list[str] | None:
    """Partitions a pending instant may have written, from its plan or workload profile; None: unknown.

    They are listed and files in them deleted: each is confined to the table first.
    """
    if instant.action.comparable is Action.REPLACE_COMMIT:
        plan = table.facts_reader.clustering_plan(instant, file_names_only=True)  # partitions confined
        if plan is not None:
            return sorted({s.partition_path for g in plan.groups for s in g.slices})
    if instant.action is Action.COMPACTION:
        compaction = table.facts_reader.requested_plan(instant, codecs.CompactionPlan)
        if compaction is not None:
            guard = table.path_guard(table.storage.qualify(table.layout.instant_path(instant)))
            return sorted(
                {
                    guard.partition("partitionPath", op.partition_path or "")
                    for op in compaction.operations or ()
                }
            )
        return None
    if instant.state is State.INFLIGHT:
        profile = table.facts_reader.commit_metadata(instant)
        if profile.partition_to_write_stats:
            guard = table.path_guard(table.storage.qualify(table.layout.instant_path(instant)))
            stats = profile.partition_to_write_stats
            return sorted(guard.partition("partitionToWriteStats", p) for p in stats)
    return None


def _listing_requests(table: HudiTable, instant: Instant) -> list[codecs.RollbackRequest]:
    partitions = affected_partitions(table, instant)
    # Storage, never the MDT: a failed write's files are in no metadata table listing.
    listing = table.list_storage_partitions(partitions)
    requests = []
    for partition in sorted(listing):
        files = [
            table.storage.qualify(posixpath.join(partition, status.name) if partition else status.name)
            for status in listing[partition]
            if not status.is_dir and _written_by(table, partition, status.name, instant.timestamp)
        ]
        if files:
            requests.append(
                codecs.RollbackRequest(
                    partition_path=partition,
                    file_id="",
                    latest_base_instant="",
                    files_to_be_deleted=tuple(sorted(files)),
                    log_blocks_to_be_deleted={},
                )
            )
    return requests


def _written_by(table: HudiTable, partition: str, name: str, instant_time: str) -> bool:
    """ListingBasedRollbackStrategy.getSerializablePathFilter: a base file of the instant, or a log
    file whose base instant is the instant (a file group the instant created with log files: an
    index that logs inserts, or a slice only it wrote to)."""
    if name.endswith(table.config.base_file_extension) and not name.startswith("."):
        try:
            return parse_base_file(partition, name).instant_time == instant_time
        except CorruptTableError:
            return False  # not a Hudi base file name: certainly not written by this instant
    log_name = parse_log_file_name(name)
    return log_name is not None and log_name.base_instant_time == instant_time


def _listing_append_requests(table: HudiTable, instant: Instant) -> list[codecs.RollbackRequest]:
    """ListingBasedRollbackStrategy.getRollbackRequestToAppend for a deltacommit without markers:
    which file groups it appended log blocks to comes from its workload profile
    (`X.deltacommit.inflight`: per partition, a write stat per file group with the base instant
    the write found, `prevCommit`; "null" for a new file group). A group whose latest slice up to X
    (`getLatestFileSlicesBeforeOrOn(partition, X, true)`: a pending compaction's new slice counts,
    groups replaced by X's time do not) began before X gets a rollback command block in that slice;
    a slice X began was deleted whole by the listing.

    Java keys `logBlocksToBeDeleted` by the write stat's path, which a workload profile leaves
    empty (the key becomes the table's base path); here it names the slice's newest log file,
    where X's blocks went unless X died before appending. A slice without log files holds no block
    of X: no command block (Java would write one that voids nothing).
    """
    if instant.state is not State.INFLIGHT:
        return []
    profile = table.facts_reader.commit_metadata(instant)
    if not profile.partition_to_write_stats:
        return []
    partitions = affected_partitions(table, instant) or []  # the profile's, confined
    timeline = table.load_timeline()
    view = table.load_view(timeline, partitions, from_storage=True)
    requests = []
    for partition in partitions:
        for stat in profile.partition_to_write_stats.get(partition, ()):
            if not stat.file_id or stat.prev_commit in (None, codecs.NULL_COMMIT):
                continue
            group = view.file_groups.get((partition, stat.file_id))
            if group is None or (group.replaced_by is not None and group.replaced_by <= instant.timestamp):
                continue
            latest = next((s for s in group.slices if s.base_instant_time <= instant.timestamp), None)
            if latest is None or latest.base_instant_time == instant.timestamp or not latest.log_files:
                continue
            requests.append(
                codecs.RollbackRequest(
                    partition_path=partition,
                    file_id=stat.file_id,
                    latest_base_instant=latest.base_instant_time,
                    files_to_be_deleted=(),
                    log_blocks_to_be_deleted={latest.log_files[-1].file_name: 1},
                )
            )
    return requests


# ---------------------------------------------------------------------------------------- executing


def confine_rollback_plan(table: HudiTable, plan: codecs.RollbackPlan, source: str) -> list[list[str]]:
    """Every request's files as base-relative paths, confined to the table (`service.table.paths`).

    A rollback plan may have been written by a Java writer or another process: one path breaking
    the rule (outside the table, `.hoodie`, not in the request's partition, …) refuses the whole
    plan with `PathOutsideTableError` before the first delete.
    """
    guard = table.path_guard(source)
    confined = []
    for request in plan.rollback_requests or ():
        partition = guard.partition("rollbackRequests[].partitionPath", request.partition_path)
        confined.append(
            [
                guard.file("rollbackRequests[].filesToBeDeleted", file_uri, partition)
                for file_uri in request.files_to_be_deleted
            ]
        )
        for log_key in request.log_blocks_to_be_deleted or {}:
            # Hudi 0.15 keys by file name; older plans by full path (BaseRollbackHelper strips the
            # partition's path from either). Both must name a file of the request's partition.
            field = "rollbackRequests[].logBlocksToBeDeleted"
            if "/" in log_key:
                guard.file(field, log_key, partition)
            else:
                guard.relative_file(
                    field, posixpath.join(partition, log_key) if partition else log_key, partition
                )
        if request.log_blocks_to_be_deleted and not request.files_to_be_deleted:
            for field, value in (
                ("fileId", request.file_id),
                ("latestBaseInstant", request.latest_base_instant),
            ):
                if not value or "/" in value or "_" in value or value.startswith("."):
                    raise CorruptTableError(f"{source}: rollbackRequests[].{field} is {value!r}")
    return confined


def execute_rollback_plan(
    table: HudiTable, plan: codecs.RollbackPlan, source: str, rollback_time: str = ""
) -> dict[str, codecs.RollbackPartitionMetadata]:
    """Delete the plan's files and write its rollback command blocks; per partition, what was done.

    A request naming log files (`logBlocksToBeDeleted`, a failed deltacommit's appends) gets one
    rollback command block (INSTANT_TIME `rollback_time`) in a new log file of its slice, as
    `BaseRollbackHelper.maybeDeleteAndCollectStats` does: `rollbackLogFiles` = that file and its
    size, `logFilesFromFailedCommit` = the request's log files. Command blocks come before the
    timeline is touched, so X's blocks are void before X's instant files go.

    `source` names the stored plan (`R.rollback.requested`); the whole plan is confined first.
    Every file is attempted; if any could not be deleted (the delete raised, or the file is still
    there after it, see `Storage.delete_file`) this raises `DeleteFailedError` before the timeline
    is touched: the rollback stays pending and the next run retries it. Completing it would delete
    `T`'s instant files while a file `T` wrote is still on storage, a file no instant explains.
    Java 0.15's `BaseRollbackHelper.deleteFiles` fails the rollback on an IOException as well; it
    records a delete returning false in failedDeleteFiles, which this executor never needs (a
    missing file counts as deleted; one still present fails).
    """
    confined = confine_rollback_plan(table, plan, source)
    target = plan.instant_to_rollback.commit_time if plan.instant_to_rollback else "?"
    success: dict[str, list[str]] = {}
    appended: dict[str, dict[str, int]] = {}
    failed_commit_logs: dict[str, dict[str, int]] = {}
    failures: list[str] = []
    for request, rels in zip(plan.rollback_requests or (), confined, strict=True):
        partition = request.partition_path
        success.setdefault(partition, [])
        if request.log_blocks_to_be_deleted and not request.files_to_be_deleted:
            if not rollback_time:
                raise HudiTableServiceError(f"{source}: a rollback block needs the rollback instant time")
            try:
                block = append_rollback_block(
                    table.storage,
                    partition,
                    request.file_id or "",
                    request.latest_base_instant or "",
                    target,
                    rollback_time,
                )
            except (OSError, HudiTableServiceError) as exc:
                log.warning(
                    "table %s: rollback of %s could not write a rollback block into %s/%s: %s",
                    table.name, target, partition, request.file_id, exc,
                )  # fmt: skip
                failures.append(
                    f"rollback block of {partition}/{request.file_id} ({type(exc).__name__}: {exc})"
                )
                continue
            appended.setdefault(partition, {})[table.storage.qualify(block.path)] = block.size
            failed_commit_logs.setdefault(partition, {}).update(request.log_blocks_to_be_deleted)
        for file_uri, rel in zip(request.files_to_be_deleted, rels, strict=True):
            try:
                table.storage.delete_file(rel)
                # A checksum that cannot be deleted fails the rollback like its file (retried; its
                # file then counts as already gone), so a completed rollback leaves nothing of `T`.
                table.storage.delete_checksum_sibling(rel)
            except (OSError, DeleteFailedError) as exc:
                log.warning(
                    "table %s: rollback of %s could not delete %s: %s", table.name, target, file_uri, exc
                )
                failures.append(f"{file_uri} ({type(exc).__name__}: {exc})")
            else:
                success[partition].append(file_uri)
    if failures:
        raise DeleteFailedError(
            f"table {table.name!r}: rollback of {target} could not delete {len(failures)} file(s), e.g. "
            f"{'; '.join(failures[:3])}; the rollback stays pending and the next run retries it"
        )
    return {
        p: codecs.RollbackPartitionMetadata(
            partition_path=p,
            success_delete_files=tuple(success[p]),
            failed_delete_files=(),
            rollback_log_files=appended.get(p, {}),
            log_files_from_failed_commit=failed_commit_logs.get(p, {}),
        )
        for p in success
    }


def rollback_files_records(
    table: HudiTable, partition_metadata: dict[str, codecs.RollbackPartitionMetadata]
) -> list[FilesRecord]:
    """The MDT `files` records of a rollback on version 6: in each partition where command blocks
    were appended, the log files they went into and the log files the failed instant wrote, each with
    its size, the larger where a file is both (`HoodieTableMetadataUtil.processRollbackMetadata`, Hudi
    0.15: both only when the partition has rollback log files). The failed instant's other files were
    never in the MDT: nothing to remove."""
    records = []
    for partition, pm in sorted(partition_metadata.items()):
        if not pm.rollback_log_files:
            continue
        files: dict[str, int] = {}
        for uri, size in [*pm.rollback_log_files.items(), *(pm.log_files_from_failed_commit or {}).items()]:
            name = posixpath.basename(uri)
            files[name] = max(files.get(name, size), size)
        infos = {name: FileInfo(size, False) for name, size in files.items()}
        records.append(FilesRecord(partition_key(partition), RECORD_TYPE_FILE_LIST, infos))
    return records


# ---------------------------------------------------------------------------------------- entry point


def rollback_instant(
    table: HudiTable,
    instant_time: str,
    lock: AbstractContextManager[Any],
    *,
    now: datetime,
    tz: tzinfo | None = None,
    keep_requested: bool = False,
    clock: Clock = time.monotonic,
    heartbeat_settings: HeartbeatSettings | None = None,
    owner: Heartbeat | None = None,
) -> RollbackOutcome:
    """Roll back the pending instant `instant_time` (see the module docstring for the protocol).

    `now` and `tz` choose the rollback instant time (`tz` may be omitted for UTC-timeline tables);
    `now` is also the wall clock heartbeats are judged by. `keep_requested=True` undoes a failed
    attempt but keeps `T.<action>.requested` so the plan can run again, as Java does before
    re-executing an inflight clustering. `owner`: the caller's own heartbeat of T (it executes or
    has claimed T); without it, T is refused while a heartbeat file of T is alive. The rollback
    instant keeps its own heartbeat (`heartbeat_settings`, Hudi's defaults when None) while it runs.
    """
    started = clock()
    settings = heartbeat_settings or HeartbeatSettings()
    timeline = table.load_timeline()
    plan: codecs.RollbackPlan | None = None
    target: Instant | None = None
    if find_pending_rollback(table, timeline, instant_time) is None:
        target = _find_target(timeline, instant_time)
        if target is None:
            done = find_completed_rollback(table, timeline, instant_time)
            if done is None:
                raise HudiTableServiceError(
                    f"{table.base_uri}: no pending instant {instant_time} to roll back"
                )
            delete_marker_dir(table.storage, instant_time)
            return RollbackOutcome(instant_time, done[0].timestamp, done[1], already_rolled_back=True)
        if target.is_completed:
            raise PlanRefusedError(
                f"{table.base_uri}: {target} is completed; only pending or failed instants are rolled back"
            )
        if target.action is Action.COMPACTION and not keep_requested:
            # Writers append to slice C from the moment C is requested: without the plan those log
            # files would belong to no committed slice (MOR_FORMAT: never unschedule by deleting).
            raise UnsupportedTableError(
                f"{table.base_uri}: a compaction ({target}) is only rolled back to its plan "
                "(keep_requested), never unscheduled"
            )
        if keep_requested and target.state is State.REQUESTED:
            return RollbackOutcome(instant_time, None, None)  # nothing was attempted: nothing to undo
        plan = plan_rollback(table, target)  # listing work: outside the lock

    # Claim under the lock: on object stores "create if absent" is exclusive only there.
    with lock as held:
        timeline = table.load_timeline()
        pending = find_pending_rollback(table, timeline, instant_time)
        if pending is not None:
            rollback, plan = pending
            # A pending rollback with a live heartbeat is another process's at work; one without a
            # heartbeat (a crashed run, or Java's, which keeps none) is finished, as Java's
            # getPendingRollbackInfo re-uses it: deleting and completing are idempotent.
            refuse_if_alive(
                table.storage,
                table.layout,
                rollback.with_state(State.REQUESTED),
                settings,
                now.timestamp(),
                "resuming",
            )
            rollback_time, resumed = rollback.timestamp, True
            # A stored plan is untrusted: refused before anything (even its heartbeat) is written.
            confine_rollback_plan(table, plan, _plan_source(table, rollback_time))
        else:
            current = _find_target(timeline, instant_time)
            if target is None or plan is None or current != target:
                raise ConflictError(
                    f"{table.base_uri}: {instant_time} changed while its rollback was planned "
                    f"({target} -> {current}); try again"
                )
            _refuse_live_target(table, current, settings, now, owner)
            rollback_time, resumed = next_instant_time(timeline, now, _zone(table, tz)), False
            confine_rollback_plan(table, plan, _plan_source(table, rollback_time))
            _check_held(held)
            create_instant_file(
                table.storage,
                table.layout,
                Instant(rollback_time, Action.ROLLBACK, State.REQUESTED),
                codecs.encode(plan),
            )
        heartbeat = Heartbeat(table.storage, rollback_time, settings, table_name=table.name).start()
        try:
            inflight = Instant(rollback_time, Action.ROLLBACK, State.INFLIGHT)
            if not table.storage.exists(table.layout.instant_path(inflight)):
                _check_held(held)
                create_instant_file(table.storage, table.layout, inflight)
        except BaseException:
            heartbeat.stop()
            raise
    if resumed:
        log.info("table %s: completing pending rollback %s of %s", table.name, rollback_time, instant_time)
    else:
        log.info(
            "table %s: rolling back %s as %s (%d requests)",
            table.name, target, rollback_time, len(plan.rollback_requests or ()),
        )  # fmt: skip
    try:
        return _run(
            table, rollback_time, plan, lock, keep_requested, started, clock, resumed, heartbeat, owner,
            now=now, zone=_zone(table, tz),
        )  # fmt: skip
    finally:
        heartbeat.stop()


def _refuse_live_target(
    table: HudiTable, target: Instant, settings: HeartbeatSettings, now: datetime, owner: Heartbeat | None
) -> None:
    if owner is not None:
        if owner.instant_time != target.timestamp:
            raise HudiTableServiceError(
                f"{table.base_uri}: the heartbeat passed for rolling back {target} is {owner.instant_time}'s"
            )
        owner.check_owned()
        return
    beat_ms = last_heartbeat_ms(table.storage, target.timestamp)
    now_ms = int(now.timestamp() * 1000)
    if beat_ms is not None and not is_expired(table.storage, target.timestamp, now_ms, settings):
        raise InstantOwnedError(
            f"{table.base_uri}: not rolling back {instant_name(target)}: its heartbeat is "
            f"{now.timestamp() - beat_ms / 1000:.1f} s old (expiry window {settings.window_seconds:g} s); "
            "its writer is alive",
            instant=target.timestamp,
            heartbeat_age_seconds=now.timestamp() - beat_ms / 1000,
        )


def _check_held(held: object) -> None:
    if isinstance(held, TableLock):
        held.check_held()


def _find_target(timeline: Timeline, instant_time: str) -> Instant | None:
    found = [i for i in timeline if i.timestamp == instant_time and i.action.comparable in ROLLBACK_ACTIONS]
    others = [
        i for i in timeline if i.timestamp == instant_time and i.action.comparable not in ROLLBACK_ACTIONS
    ]
    if not found and others:
        raise UnsupportedTableError(
            f"rolling back {others[0]} is not supported (only commit, replacecommit and deltacommit instants)"
        )
    return found[0] if found else None


def _zone(table: HudiTable, tz: tzinfo | None) -> tzinfo:
    return table.timeline_zone(tz)


def _plan_source(table: HudiTable, rollback_time: str) -> str:
    """How errors name a rollback plan: its `R.rollback.requested` file."""
    return table.storage.qualify(
        table.layout.instant_path(Instant(rollback_time, Action.ROLLBACK, State.REQUESTED))
    )


def _run(
    table: HudiTable,
    rollback_time: str,
    plan: codecs.RollbackPlan,
    lock: AbstractContextManager[Any],
    keep_requested: bool,
    started: float,
    clock: Clock,
    resumed: bool,
    heartbeat: Heartbeat,
    owner: Heartbeat | None,
    *,
    now: datetime,
    zone: tzinfo,
) -> RollbackOutcome:
    """`now` and `zone`: the wall clock and timeline zone completion times are drawn from."""
    target_info = plan.instant_to_rollback
    if target_info is None:
        raise CorruptTableError(f"{table.base_uri}: rollback plan {rollback_time} names no instant")
    instant_time = target_info.commit_time
    action = Action(target_info.action)

    partition_metadata = execute_rollback_plan(table, plan, _plan_source(table, rollback_time), rollback_time)

    with lock as held:
        # Neither the rollback nor (when the caller executes it) T may have changed hands meanwhile.
        heartbeat.check_owned()
        if owner is not None:
            owner.check_owned()
        timeline = table.load_timeline()
        current = timeline.find(instant_time, action)
        if current is not None and current.is_completed:
            raise ConflictError(
                f"{table.base_uri}: {current} completed while rollback {rollback_time} was deleting its files"
            )
        # BaseRollbackActionExecutor.finishRollback: the MDT first, then the data timeline.
        mirror_rollback(
            table.storage,
            timeline,
            instant_time,
            rollback_time,
            rollback_files_records(table, partition_metadata),
            now=now,
            tz=zone,
        )
        delete_instant_file(table.storage, table.layout, Instant(instant_time, action, State.INFLIGHT))
        if not keep_requested:
            delete_instant_file(table.storage, table.layout, Instant(instant_time, action, State.REQUESTED))
        metadata = codecs.RollbackMetadata(
            start_rollback_time=rollback_time,
            time_taken_in_millis=max(0, round((clock() - started) * 1000)),
            total_files_deleted=sum(len(pm.success_delete_files) for pm in partition_metadata.values()),
            commits_rollback=(instant_time,),
            partition_metadata=partition_metadata,
            version=ROLLBACK_METADATA_VERSION,
            instants_rollback=(codecs.InstantInfo(commit_time=instant_time, action=action.value),),
        )
        _check_held(held)
        done = timeline.find(rollback_time, Action.ROLLBACK)
        if done is not None and done.is_completed:
            # Another process completed this very rollback first: its metadata stands.
            metadata = table.facts_reader.metadata(done, codecs.RollbackMetadata)
        else:
            inflight = Instant(rollback_time, Action.ROLLBACK, State.INFLIGHT)
            try:
                complete_instant(
                    table.storage, table.layout, timeline, inflight, codecs.encode(metadata), now, zone
                )
            except InstantExistsError:
                # Completed by another process since the timeline was loaded (layout 1's one name).
                metadata = table.facts_reader.metadata(inflight.completed_at(None), codecs.RollbackMetadata)
    delete_marker_dir(table.storage, instant_time)
    if not keep_requested:
        table.storage.delete_file(heartbeat_path(instant_time))
    log.info(
        "table %s: rollback %s of %s done: %d files deleted",
        table.name, rollback_time, instant_time, metadata.total_files_deleted,
    )  # fmt: skip
    return RollbackOutcome(instant_time, rollback_time, metadata, resumed=resumed)
