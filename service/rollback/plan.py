"""A rollback's plan (`HoodieRollbackPlan`): from the instant's markers, or from a listing when it
left none (`service.rollback` says how each is made)."""

from __future__ import annotations

import posixpath

from service.errors import CorruptTableError, UnsupportedTableError
from service.table import codecs
from service.table.data_files import parse_base_file, parse_log_file_name
from service.table.instant import Action, Instant, State
from service.table.layout import METAFOLDER
from service.table.markers import IOType, Marker, list_markers
from service.table.table import HudiTable

ROLLBACK_PLAN_VERSION = 1
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
