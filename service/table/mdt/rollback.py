"""Mirror a data-table rollback R of instant T into the metadata table, as the table's Hudi version does.

Called by `service.rollback` under the table lock, after T's data files are gone and before R
completes on the data table (`BaseRollbackActionExecutor.finishRollback` writes the MDT first).

- Version 6 (Hudi 0.x): T's MDT blocks are taken out (`commit.forget_rolled_back_instant`), then an MDT
  deltacommit R records the log files the rollback's command blocks went into (none on copy-on-write).
- Versions 8 and 9 (Hudi 1.x, `MdtFormat.rollback_as_mdt_rollback`): when the MDT holds a deltacommit
  T (pending or completed), the MDT rolls it back with its own rollback instant R
  (`HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata, R)` -> the MDT write client's
  `rollback(T, R)`): `R.rollback.requested` (a listing-based plan: one request per file T wrote, file
  id and base instant empty), an empty `R.rollback.inflight`, T's log files deleted (1.x writes whole
  log files per deltacommit), T's MDT instant files deleted, `R_<completion>.rollback`. No MDT
  deltacommit is written. An MDT without T gets nothing. Seen on real Hudi 1.1.1 tables
  (tests/interop/test_hudi1_rollback.py).

A crash anywhere is resumed by the next attempt of the same data rollback R: a pending MDT rollback R
is finished from its stored plan (confined to the MDT's partitions, every file one T wrote), a
completed one is left as is.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Iterable
from datetime import datetime, tzinfo

from service.errors import CorruptTableError, PlanRefusedError, UnsupportedTableError
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.mdt.commit import (
    MdtState,
    check_mdt,
    compacted_after,
    delete_deltacommit_files,
    forget_rolled_back_instant,
    mdt_state,
    mdt_sync_required,
    sync_files_partition,
)
from service.table.mdt.files_listing import parse_log_file_name
from service.table.mdt.records import FilesRecord
from service.table.mdt.timeline import MDT_BASE
from service.table.paths import PathGuard, TableLocation
from service.table.properties import TableConfig, load_table_config
from service.table.storage import Storage
from service.table.table_format import TableFormat
from service.table.timeline import Timeline, complete_instant, create_instant_file, next_instant_time

log = logging.getLogger(__name__)

ROLLBACK_VERSION = 1  # HoodieRollbackPlan / HoodieRollbackMetadata `version`, unchanged in 1.x


def mirror_rollback(
    storage: Storage,
    data_timeline: Timeline,
    instant_time: str,
    rollback_time: str,
    files_records: Iterable[FilesRecord],
    *,
    now: datetime,
    tz: tzinfo,
) -> None:
    """Bring the MDT in line with data rollback `rollback_time` of `instant_time` (see the module
    docstring). `files_records`: the `files` records of the rollback's command-block log files
    (version 6 only). No-op for a table without the MDT."""
    config = load_table_config(storage)  # re-read under the lock
    if not mdt_sync_required(config):
        return
    table_format = TableFormat.for_table(config, storage.base_uri)
    if not table_format.mdt.rollback_as_mdt_rollback:
        forget_rolled_back_instant(storage, data_timeline, instant_time)
        sync_files_partition(storage, data_timeline, rollback_time, files_records)
        return
    state = check_mdt(storage, config, table_format, data_timeline, instant_time)
    _rollback_in_mdt(storage, config, state, instant_time, rollback_time, now, tz)


def _rollback_in_mdt(
    storage: Storage,
    config: TableConfig,
    state: MdtState,
    instant_time: str,
    rollback_time: str,
    now: datetime,
    tz: tzinfo,
) -> None:
    started = time.monotonic()
    layout, timeline = state.layout, state.timeline
    where = f"table {config.name!r} at {storage.base_uri}"
    existing = timeline.find(rollback_time, Action.ROLLBACK)
    requested = Instant(rollback_time, Action.ROLLBACK, State.REQUESTED)
    source = storage.qualify(layout.instant_path(requested))
    if existing is not None and existing.is_completed:
        return  # a crashed attempt of this data rollback got that far
    if existing is not None:
        plan = codecs.decode(codecs.RollbackPlan, storage.read_bytes(layout.instant_path(requested)), source)
        target = plan.instant_to_rollback.commit_time if plan.instant_to_rollback else None
        if target != instant_time:
            raise CorruptTableError(f"{source}: rolls back {target!r}, expected {instant_time}")
    else:
        target_instant = timeline.find(instant_time, Action.DELTA_COMMIT)
        if target_instant is None:
            return  # Hudi rolls back in the MDT only a deltacommit the MDT holds
        _validate_rollback(storage, where, timeline, target_instant)
        plan = _plan(storage, config, instant_time)
        create_instant_file(storage, layout, requested, codecs.encode(plan))
    inflight = Instant(rollback_time, Action.ROLLBACK, State.INFLIGHT)
    if not storage.exists(layout.instant_path(inflight)):
        create_instant_file(storage, layout, inflight)
    deleted = _delete_files(storage, config, plan, instant_time, source)
    delete_deltacommit_files(storage, state, instant_time)
    metadata = codecs.RollbackMetadata(
        start_rollback_time=rollback_time,
        time_taken_in_millis=max(0, round((time.monotonic() - started) * 1000)),
        total_files_deleted=sum(len(files) for files in deleted.values()),
        commits_rollback=(instant_time,),
        partition_metadata={
            p: codecs.RollbackPartitionMetadata(
                partition_path=p,
                success_delete_files=tuple(files),
                failed_delete_files=(),
                rollback_log_files={},
                log_files_from_failed_commit={},
            )
            for p, files in deleted.items()
        },
        version=ROLLBACK_VERSION,
        instants_rollback=(codecs.InstantInfo(commit_time=instant_time, action=Action.DELTA_COMMIT.value),),
    )
    complete_instant(storage, layout, timeline, inflight, codecs.encode(metadata), now, tz)
    log.info(
        "table %s: metadata table rolled back deltacommit %s as %s (%d files)",
        config.name, instant_time, rollback_time, metadata.total_files_deleted,
    )  # fmt: skip


def _validate_rollback(storage: Storage, where: str, timeline: Timeline, target: Instant) -> None:
    """`HoodieBackedTableMetadataWriter.validateRollback`: a completed T whose records an MDT
    compaction since folded into a base file cannot be taken out by deleting its log files."""
    compacted = compacted_after(timeline, target.timestamp)
    if compacted is not None:
        raise UnsupportedTableError(
            f"{where}: the metadata table compacted ({compacted}) after its deltacommit "
            f"{target.timestamp}; rolling {target.timestamp} back needs a restore (Hudi refuses it too)"
        )


def _written_by(name: str, instant_time: str) -> bool:
    """A file of MDT deltacommit T: a log file named by T (1.x names every log by its deltacommit),
    or a base file of T (`<fileId>_<token>_<T>.hfile`)."""
    parsed = parse_log_file_name(name)
    if parsed is not None:
        return parsed.base_instant == instant_time
    return not name.startswith(".") and name.endswith(f"_{instant_time}.hfile")


def _plan(storage: Storage, config: TableConfig, instant_time: str) -> codecs.RollbackPlan:
    """ListingBasedRollbackStrategy as the MDT's write client runs it: every file T wrote in every
    MDT partition, one request each."""
    requests = []
    for partition in config.metadata_partitions:
        directory = f"{MDT_BASE}/{partition}"
        for name in sorted(storage.list_file_names(directory)):
            if _written_by(name, instant_time):
                requests.append(
                    codecs.RollbackRequest(
                        partition_path=partition,
                        file_id="",
                        latest_base_instant="",
                        files_to_be_deleted=(storage.qualify(f"{directory}/{name}"),),
                        log_blocks_to_be_deleted={},
                    )
                )
    return codecs.RollbackPlan(
        instant_to_rollback=codecs.InstantInfo(commit_time=instant_time, action=Action.DELTA_COMMIT.value),
        rollback_requests=tuple(requests),
        version=ROLLBACK_VERSION,
    )


def _delete_files(
    storage: Storage, config: TableConfig, plan: codecs.RollbackPlan, instant_time: str, source: str
) -> dict[str, list[str]]:
    """Delete the plan's files; per MDT partition, the paths as the plan names them. The plan is
    untrusted: every path must be a file T wrote directly in one of the MDT's partitions, checked for
    all before the first delete."""
    location = storage.location
    guard = PathGuard(
        TableLocation(location.store, location.authority, posixpath.join(location.root, MDT_BASE)),
        config.name,
        True,
        source,
    )
    checked: list[tuple[str, str, str]] = []
    for request in plan.rollback_requests or ():
        field = "rollbackRequests[].filesToBeDeleted"
        partition_field = "rollbackRequests[].partitionPath"
        partition = guard.partition(partition_field, request.partition_path)
        if partition not in config.metadata_partitions:
            raise guard.refuse(partition_field, partition, "not a metadata-table partition")
        if request.log_blocks_to_be_deleted:
            raise guard.refuse("rollbackRequests[].logBlocksToBeDeleted", partition, "1.x deletes files")
        for raw in request.files_to_be_deleted:
            rel = guard.file(field, raw, partition)
            if not _written_by(posixpath.basename(rel), instant_time):
                raise guard.refuse(field, raw, f"not a file of deltacommit {instant_time}")
            checked.append((partition, raw, f"{MDT_BASE}/{rel}"))
    deleted: dict[str, list[str]] = {}
    for partition, raw, rel in checked:
        storage.delete_file(rel)
        storage.delete_checksum_sibling(rel)  # as the data rollback drops it
        deleted.setdefault(partition, []).append(raw)
    return deleted


# ------------------------------------------------------------------ undoing a clean (`clean --undo`)


def check_clean_forgettable(storage: Storage, data_timeline: Timeline, clean_time: str) -> None:
    """Refuse (PlanRefusedError, before anything changes) to undo clean `clean_time` when the metadata
    table compacted at or after its deltacommit: the compaction folded the clean's deletions into a
    base file, and no rollback takes them out (`HoodieBackedTableMetadataWriter.validateRollback`)."""
    found = mdt_state(storage, data_timeline, clean_time)
    if found is None:
        return
    config, state = found
    compacted = compacted_after(state.timeline, clean_time)
    if compacted is not None:
        raise PlanRefusedError(
            f"table {config.name!r} at {storage.base_uri}: the metadata table compacted ({compacted}) "
            f"after clean {clean_time}, folding its deletions in for good: the clean can no longer be "
            "undone. Its files stay in the trash until the retention passes (its manifest.json says where "
            "each came from)"
        )


def forget_clean(
    storage: Storage, data_timeline: Timeline, clean_time: str, *, now: datetime, tz: tzinfo
) -> None:
    """Take the metadata table's deltacommit `clean_time` out, so that its `files` partition (and its
    indexes) list what the undone clean had removed: on version 6 by deleting its blocks' log files
    and its instant files (`forget_rolled_back_instant`), on versions 8 and 9 by the MDT's own rollback
    of it, as a data rollback does (`_rollback_in_mdt`), at a new MDT instant time. Idempotent."""
    found = mdt_state(storage, data_timeline, clean_time)
    if found is None:
        return
    config, state = found
    if not state.mdt.rollback_as_mdt_rollback:
        forget_rolled_back_instant(storage, data_timeline, clean_time)
        return
    pending = [
        i
        for i in state.timeline.by_actions((Action.ROLLBACK,)).pending()
        if _rolls_back(storage, state, i, clean_time)
    ]
    if pending:
        rollback_time = pending[0].timestamp  # an undo killed midway: finish its MDT rollback
    elif state.timeline.find(clean_time, Action.DELTA_COMMIT) is None:
        return  # not in the MDT (never, or taken out by an earlier attempt)
    else:
        rollback_time = next_instant_time(state.timeline, now, tz, floor=data_timeline.latest_time)
    _rollback_in_mdt(storage, config, state, clean_time, rollback_time, now, tz)


def _rolls_back(storage: Storage, state: MdtState, rollback: Instant, instant_time: str) -> bool:
    requested = Instant(rollback.timestamp, Action.ROLLBACK, State.REQUESTED)
    path = state.layout.instant_path(requested)
    plan = codecs.decode(codecs.RollbackPlan, storage.read_bytes(path), storage.qualify(path))
    return plan.instant_to_rollback is not None and plan.instant_to_rollback.commit_time == instant_time
