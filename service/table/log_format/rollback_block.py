"""The rollback command block a rollback of a failed deltacommit writes into each log file group.

`BaseRollbackHelper.maybeDeleteAndCollectStats` opens a `HoodieLogFormat` writer on the file group
(`overBaseCommit` = the slice's base instant, no write token) and appends one `HoodieCommandBlock`
with the header `generateHeader(X)`: INSTANT_TIME = the timeline's last instant (the rollback
instant R, just created), TARGET_INSTANT_TIME = X, COMMAND_BLOCK_TYPE = ROLLBACK_BLOCK's ordinal.
The block has no content. Without a version the writer takes the slice's latest log version with
`HoodieLogFormat.UNKNOWN_WRITE_TOKEN` ("1-0-1") and, the file existing on storage without append
(local, S3, GCS, ...), rolls over to version + 1 with that token (`HoodieLogFormatWriter.rollOver`):
one new file holding only the command block. We always write that new file (create-if-absent).

Readers (`AbstractHoodieLogRecordReader`) drop every block of X read before the command, so X's
blocks stay invisible even once X's instant files are gone and archiving moves the active timeline's
start past X (blocks before the timeline's start count as committed).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.table.data_files import LogFileName, log_file_order_key, parse_log_file_name
from service.table.log_format.blocks import CommandBlockType, HeaderKey, LogBlockType, encode_log_block
from service.table.storage import Storage

UNKNOWN_WRITE_TOKEN = "1-0-1"  # HoodieLogFormat.UNKNOWN_WRITE_TOKEN: the rollback writer's token
LOGFILE_BASE_VERSION = 1  # HoodieLogFile.LOGFILE_BASE_VERSION


@dataclass(frozen=True)
class RollbackBlockAppend:
    """The log file a rollback command block was written into (base-relative path) and its size."""

    path: str
    size: int


def rollback_command_block(target_instant: str, rollback_instant: str) -> bytes:
    """The framed COMMAND_BLOCK voiding `target_instant`'s blocks (`HoodieCommandBlock`)."""
    header = {
        HeaderKey.INSTANT_TIME: rollback_instant,
        HeaderKey.TARGET_INSTANT_TIME: target_instant,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandBlockType.ROLLBACK_BLOCK)),
    }
    return encode_log_block(LogBlockType.COMMAND_BLOCK, header, b"")


def _slice_logs(storage: Storage, partition: str, file_id: str, base_instant: str) -> list[LogFileName]:
    logs = []
    for name in storage.list_file_names(partition):
        parsed = parse_log_file_name(name)
        if (
            parsed is not None
            and not parsed.is_cdc
            and parsed.file_id == file_id
            and parsed.base_instant_time == base_instant
        ):
            logs.append(parsed)
    return sorted(logs, key=log_file_order_key)


def append_rollback_block(
    storage: Storage,
    partition: str,
    file_id: str,
    base_instant: str,
    target_instant: str,
    rollback_instant: str,
) -> RollbackBlockAppend:
    """Write the command block as `.<file id>_<base>.log.<latest version + 1>_1-0-1`.

    Idempotent for a resumed rollback: when the slice's latest log file already is exactly this
    block (a crashed run of the same rollback R wrote it), it is reported again, not written twice.
    """
    data = rollback_command_block(target_instant, rollback_instant)
    logs = _slice_logs(storage, partition, file_id, base_instant)
    if logs:
        latest = logs[-1]
        rel = _join(partition, latest.format())
        if latest.write_token == UNKNOWN_WRITE_TOKEN and storage.read_bytes(rel) == data:
            return RollbackBlockAppend(rel, len(data))
    version = max((log.version for log in logs), default=LOGFILE_BASE_VERSION - 1) + 1
    name = LogFileName(file_id, base_instant, version, UNKNOWN_WRITE_TOKEN).format()
    rel = _join(partition, name)
    storage.create_if_absent(rel, data)
    return RollbackBlockAppend(rel, len(data))


def _join(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name
