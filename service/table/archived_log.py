"""The archived timeline of layout 1 (table version 6), as Hudi 0.14/0.15's `HoodieTimelineArchiver`
writes it: log files `.hoodie/archived/.commits_.archive.<N>_1-0-1` of Avro data blocks, one
`HoodieArchivedMetaEntry` record per archived instant *file* (requested, inflight, completed).

- One run writes one new file: on storage without append (local disks, object stores;
  `StorageSchemes.isAppendSupported`) Hudi's writer rolls over to the next version on its first
  append, with the write token `1-0-1` (`HoodieLogFormat.UNKNOWN_WRITE_TOKEN`).
- Blocks hold `hoodie.commits.archival.batch` records each, the last the remainder
  (`HoodieTimelineArchiver.archive` / `writeToFile`); the only header is SCHEMA, the writer schema
  of Hudi 0.15 (`HoodieArchivedMetaEntry.SCHEMA$`, byte for byte).
- Each record is `MetadataConversionUtils.createMetaWrapper` of one instant file: commitTime,
  actionType, actionState and stateTransitionTime (the file's modification time as an instant
  time), plus the file's content in the field its action and state use. `version` stays null
  (Java's no-argument constructor skips the schema default).

A retried run (one killed after its file was written) must not archive an instant file twice:
`archived_keys` reads back which instant files an archive file already holds.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import fastavro

from service.errors import CorruptLogBlockError, CorruptTableError
from service.table import codecs
from service.table.codecs.avro_file import schema_text
from service.table.codecs.commit import CommitMetadata, ReplaceCommitMetadata, WriteStat
from service.table.instant import Action, Instant, State
from service.table.log_format.blocks import BLOCK_CONTENT_VERSION, HeaderKey, LogBlockType, encode_log_block
from service.table.log_format.content import avro_data_datums
from service.table.log_format.reader import read_block_frames

ARCHIVE_SCHEMA_NAME = "HoodieArchivedMetaEntry-0.15"
ROLLOVER_WRITE_TOKEN = "1-0-1"  # HoodieLogFormat.UNKNOWN_WRITE_TOKEN
ROLLING_STAT = "ROLLING_STAT"  # HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY
# `HoodieArchivedTimeline`'s file pattern: `.commits_.archive.<N>[_<token>]`.
_ARCHIVE_NAME = re.compile(r"^\.commits_\.archive\.(\d+)(?:_\d+-\d+-\d+)?\Z")
# Plan and metadata versions Hudi 0.14/0.15's migrators upgrade to (`CleanPlanMigrator`,
# `CleanMetadataMigrator`, `CompactionPlanMigrator`); older ones are rewritten on the way in.
_LATEST_VERSION = {"clean": 2, "compaction": 2}


@dataclass(frozen=True)
class InstantFile:
    """One active-timeline file to archive: the instant (in its state), its bytes and its
    modification time as `yyyyMMddHHmmssSSS` (what `HoodieInstant.getStateTransitionTime` reads)."""

    instant: Instant
    data: bytes
    state_transition_time: str
    source: str  # the file, for errors


def archive_file_version(name: str) -> int | None:
    """N of `.commits_.archive.N[_token]`; None for any other name (a `.crc` sibling, a plan)."""
    match = _ARCHIVE_NAME.match(name)
    return int(match.group(1)) if match else None


def next_archive_file_name(existing: Iterable[str]) -> str:
    """The file the next run writes: one version after the latest (`rollOver`), or version 1."""
    versions = [v for v in map(archive_file_version, existing) if v is not None]
    return f".commits_.archive.{max(versions, default=0) + 1}_{ROLLOVER_WRITE_TOKEN}"


def latest_archive_file_name(existing: Iterable[str]) -> str | None:
    named = [(v, n) for n in existing if (v := archive_file_version(n)) is not None]
    return max(named)[1] if named else None


@cache
def _parsed(text: str) -> Any:
    return fastavro.parse_schema(json.loads(text), named_schemas={})


def _schema() -> tuple[str, Any]:
    text = schema_text(ARCHIVE_SCHEMA_NAME)
    return text, _parsed(text)


def encode_archive_file(files: Sequence[InstantFile], batch: int) -> bytes:
    """The log file of one run: `batch` records a block, in the order given."""
    if batch < 1:
        raise ValueError(f"hoodie.commits.archival.batch must be at least 1, not {batch}")
    records = [(meta_entry(f), f.source) for f in files]
    return _encode_blocks([records[i : i + batch] for i in range(0, len(records), batch)])


def _encode_blocks(blocks: Sequence[Sequence[tuple[dict[str, Any], str]]]) -> bytes:
    """Avro data blocks of (record, the file it came from) in Hudi 0.15's schema, one per group."""
    text, parsed = _schema()
    out = bytearray()
    for records in blocks:
        content = io.BytesIO()
        content.write(BLOCK_CONTENT_VERSION.to_bytes(4, "big") + len(records).to_bytes(4, "big"))
        for record, source in records:
            datum = io.BytesIO()
            try:
                fastavro.schemaless_writer(datum, parsed, record)
            except (ValueError, TypeError) as err:
                raise CorruptTableError(
                    f"{source}: cannot be archived as a HoodieArchivedMetaEntry: {err}"
                ) from err
            content.write(len(datum.getvalue()).to_bytes(4, "big") + datum.getvalue())
        out += encode_log_block(LogBlockType.AVRO_DATA_BLOCK, {HeaderKey.SCHEMA: text}, content.getvalue())
    return bytes(out)


def read_archive_blocks(data: bytes, path: str) -> list[list[dict[str, Any]]]:
    """The records of each block of the archive file `data`, resolved to Hudi 0.15's schema (0.14's
    writer schema lacks a few optional nested fields; each block is read in its own)."""
    _, reader_schema = _schema()
    blocks: list[list[dict[str, Any]]] = []
    for frame in read_block_frames(data, path):
        where = frame.location.offset
        if frame.block_type is not LogBlockType.AVRO_DATA_BLOCK:
            raise CorruptLogBlockError(path, where, f"{frame.block_type.name} in an archive file")
        content, bounds = avro_data_datums(frame.content, frame.location)
        try:
            writer_schema = _parsed(frame.header[HeaderKey.SCHEMA])
        except (KeyError, ValueError, TypeError) as err:
            raise CorruptLogBlockError(path, where, f"no usable SCHEMA header: {err}") from err
        stream = io.BytesIO(content)
        records = []
        for pos, _length in bounds:
            stream.seek(pos)
            try:
                record = fastavro.schemaless_reader(stream, writer_schema, reader_schema)
            except Exception as err:  # fastavro raises several types on bad bytes
                raise CorruptLogBlockError(path, where, f"not a HoodieArchivedMetaEntry: {err}") from err
            if not isinstance(record, dict):
                raise CorruptLogBlockError(path, where, "not a HoodieArchivedMetaEntry record")
            records.append(record)
        blocks.append(records)
    return blocks


def archived_keys(data: bytes, path: str) -> frozenset[tuple[str, str, str]]:
    """(commitTime, actionType, actionState) of every record of the archive file `data`."""
    return frozenset(
        (str(r.get("commitTime")), str(r.get("actionType")), str(r.get("actionState")))
        for block in read_archive_blocks(data, path)
        for r in block
    )


def encode_merged_archive(files: Sequence[tuple[bytes, str]], batch: int) -> bytes:
    """`HoodieTimelineArchiver.mergeArchiveFiles`: the records of `files` ((bytes, path), in the
    order given: Hudi passes the newest first), whole blocks gathered until a group holds `batch`
    records or more, each group one block."""
    groups: list[list[tuple[dict[str, Any], str]]] = []
    pending: list[tuple[dict[str, Any], str]] = []
    for data, path in files:
        for block in read_archive_blocks(data, path):
            pending.extend((record, path) for record in block)
            if len(pending) >= batch:
                groups.append(pending)
                pending = []
    if pending:
        groups.append(pending)
    return _encode_blocks(groups)


def key_of(file: InstantFile) -> tuple[str, str, str]:
    """What `archived_keys` reports for the record of `file`."""
    return (file.instant.timestamp, _action_type(file.instant), file.instant.state.name)


def _action_type(instant: Instant) -> str:
    # A completed compaction is a `commit` file, a completed log compaction a `deltacommit`: the
    # record carries the action of the file (`HoodieInstant.getAction` of the parsed name).
    if instant.state is State.COMPLETED:
        return instant.action.comparable.value
    return instant.action.value


def meta_entry(file: InstantFile) -> dict[str, Any]:
    """`MetadataConversionUtils.createMetaWrapper` of one instant file."""
    instant, data = file.instant, file.data
    action = Action(_action_type(instant))
    record: dict[str, Any] = {
        "commitTime": instant.timestamp,
        "actionType": action.value,
        "actionState": instant.state.name,
        "stateTransitionTime": file.state_transition_time,
        "version": None,
    }
    if instant.state is State.COMPLETED and not data:
        # `createMetaWrapperForEmptyInstant`: the names only, for the actions it knows.
        if action not in _EMPTY_COMPLETED:
            raise CorruptTableError(f"{file.source}: empty completed {action.value} cannot be archived")
        return record
    field, value = _content(action, instant.state, data, file.source)
    if field is not None:
        record[field] = value
    return record


_EMPTY_COMPLETED = frozenset(
    {
        Action.CLEAN,
        Action.COMMIT,
        Action.DELTA_COMMIT,
        Action.REPLACE_COMMIT,
        Action.ROLLBACK,
        Action.SAVEPOINT,
    }
)


def _content(action: Action, state: State, data: bytes, source: str) -> tuple[str | None, Any]:
    match action, state:
        case Action.CLEAN, State.COMPLETED:
            return "hoodieCleanMetadata", _avro_record(data, source, "clean", "clean metadata")
        case Action.CLEAN, _:
            return "hoodieCleanerPlan", _avro_record(data, source, "clean", "clean plan")
        case ((Action.COMMIT | Action.DELTA_COMMIT), _):
            return "hoodieCommitMetadata", avro_commit_metadata(codecs.decode(CommitMetadata, data, source))
        case Action.REPLACE_COMMIT, State.COMPLETED:
            meta = codecs.decode(ReplaceCommitMetadata, data, source)
            return "hoodieReplaceCommitMetadata", avro_replace_metadata(meta)
        case Action.REPLACE_COMMIT, State.INFLIGHT:
            if not data:
                return None, None
            return "HoodieInflightReplaceMetadata", avro_commit_metadata(
                codecs.decode(CommitMetadata, data, source)
            )
        case Action.REPLACE_COMMIT, State.REQUESTED:
            if not data:
                return None, None
            return "hoodieRequestedReplaceMetadata", _avro_record(
                data, source, None, "requested replace metadata"
            )
        case Action.ROLLBACK, State.COMPLETED:
            return "hoodieRollbackMetadata", _avro_record(data, source, None, "rollback metadata")
        case ((Action.COMPACTION | Action.LOG_COMPACTION), State.REQUESTED):
            return "hoodieCompactionPlan", _avro_record(data, source, "compaction", "compaction plan")
        case ((Action.ROLLBACK | Action.COMPACTION | Action.LOG_COMPACTION), _):
            return None, None  # rollback plans and inflight compactions are not archived
        case Action.SAVEPOINT, _:
            return "hoodieSavePointMetadata", _avro_record(data, source, None, "savepoint metadata")
    raise CorruptTableError(f"{source}: Hudi 0.15's archiver does not archive {action.value} (refused)")


def _avro_record(data: bytes, source: str, versioned: str | None, what: str) -> dict[str, Any]:
    """The one record of an Avro timeline file, as its writer wrote it (the archive's nested schema
    resolves it: fields Hudi 0.15 added are absent in 0.14's files and take their defaults)."""
    try:
        record = next(iter(fastavro.reader(io.BytesIO(data))), None)
    except Exception as err:  # fastavro raises several types on bad bytes
        raise CorruptTableError(f"{source}: not an Avro {what}: {err}") from err
    if not isinstance(record, dict):
        raise CorruptTableError(f"{source}: no Avro {what} record")
    if versioned is not None and record.get("version") != _LATEST_VERSION[versioned]:
        # Java upgrades older versions while converting; this service does not write those.
        raise CorruptTableError(
            f"{source}: {what} version {record.get('version')!r} would need Hudi's migrator "
            f"(version {_LATEST_VERSION[versioned]} is archived as is); refused"
        )
    return record


def avro_commit_metadata(meta: CommitMetadata) -> dict[str, Any]:
    """`MetadataConversionUtils.convertCommitMetadata`: Jackson's bean conversion of the JSON
    metadata into the Avro record, `COMPACT` for a compaction, `ROLLING_STAT` set to ""."""
    record = _converted(meta)
    if meta.compacted:
        record["operationType"] = "COMPACT"
    return record


def avro_replace_metadata(meta: ReplaceCommitMetadata) -> dict[str, Any]:
    """`ReplaceArchivalHelper.convertReplaceCommitMetadata`: the same, with the replaced file ids."""
    record = _converted(meta)
    record["partitionToReplaceFileIds"] = {
        p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()
    }
    return record


def _converted(meta: CommitMetadata) -> dict[str, Any]:
    extra: dict[str, str | None] = dict(meta.extra_metadata)
    extra[ROLLING_STAT] = ""  # set in place when present, appended otherwise (dict order, as Java's)
    return {
        "partitionToWriteStats": {
            p: [_write_stat(s) for s in stats] for p, stats in meta.partition_to_write_stats.items()
        },
        "extraMetadata": extra,
        "version": None,
        "operationType": meta.operation_type.value,
    }


def _write_stat(stat: WriteStat) -> Mapping[str, Any]:
    # The bean's getters: `totalLogFiles` has none (it stays null); Java-only fields are dropped.
    return {
        "fileId": stat.file_id,
        "path": stat.path,
        "prevCommit": stat.prev_commit,
        "numWrites": stat.num_writes,
        "numDeletes": stat.num_deletes,
        "numUpdateWrites": stat.num_update_writes,
        "totalWriteBytes": stat.total_write_bytes,
        "totalWriteErrors": stat.total_write_errors,
        "partitionPath": stat.partition_path,
        "totalLogRecords": stat.total_log_records,
        "totalLogFiles": None,
        "totalUpdatedRecordsCompacted": stat.total_updated_records_compacted,
        "numInserts": stat.num_inserts,
        "totalLogBlocks": stat.total_log_blocks,
        "totalCorruptLogBlock": stat.total_corrupt_log_block,
        "totalRollbackBlocks": stat.total_rollback_blocks,
        "fileSizeInBytes": stat.file_size_in_bytes,
    }


MERGE_PLAN_FILE = "mergeArchivePlan"  # HoodieArchivedTimeline.MERGE_ARCHIVE_PLAN_NAME
# `HoodieMergeArchiveFilePlan`: the candidates (full paths) and the merged file's name.
_MERGE_PLAN_SCHEMA = {
    "type": "record",
    "name": "HoodieMergeArchiveFilePlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "candidate", "type": ["null", {"type": "array", "items": "string"}], "default": None},
        {"name": "mergedArchiveFileName", "type": ["null", "string"], "default": None},
    ],
}


def encode_merge_plan(candidates: Sequence[str], merged_name: str) -> bytes:
    """The plan Hudi's merge writes first (`buildArchiveMergePlan`): one-record Avro container."""
    out = io.BytesIO()
    record = {"version": 1, "candidate": list(candidates), "mergedArchiveFileName": merged_name}
    fastavro.writer(out, fastavro.parse_schema(_MERGE_PLAN_SCHEMA, named_schemas={}), [record], codec="null")
    return out.getvalue()


def decode_merge_plan(data: bytes) -> tuple[tuple[str, ...], str] | None:
    """(candidate paths, merged file name) of a merge plan; None for a plan Hudi could not read
    either (a partly written one, which it deletes)."""
    try:
        record = next(iter(fastavro.reader(io.BytesIO(data))), None)
    except Exception:  # fastavro raises several types on bad bytes
        return None
    if not isinstance(record, dict) or not isinstance(record.get("mergedArchiveFileName"), str):
        return None
    candidates = record.get("candidate") or []
    return tuple(str(c) for c in candidates), record["mergedArchiveFileName"]
