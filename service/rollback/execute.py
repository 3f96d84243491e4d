"""Carrying out a rollback plan: its paths confined to the table, its files deleted (a file already
gone counts as deleted), the metadata table's `files` records of what it did."""

from __future__ import annotations

import logging
import posixpath

from service.errors import (
    CorruptTableError,
    DeleteFailedError,
    HudiTableServiceError,
)
from service.table import codecs
from service.table.log_format.rollback_block import append_rollback_block
from service.table.mdt.commit import partition_key
from service.table.mdt.records import RECORD_TYPE_FILE_LIST, FileInfo, FilesRecord
from service.table.table import HudiTable

log = logging.getLogger(__name__)


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
