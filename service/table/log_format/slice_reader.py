"""Read one file slice of a MOR table merged (base file + log files), through the table's storage.

The I/O shell around `merge.merge_file_slice`: it reads the base file with pyarrow and each log
file's blocks with `reader.read_log_blocks`, and hands them to the pure merge.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from service.errors import CorruptTableError, StoredFileReadError
from service.table.data_files import LogFile
from service.table.fs_view import FileSlice
from service.table.instant import Action
from service.table.log_format.avro_arrow import avro_record_to_arrow_schema
from service.table.log_format.blocks import DataBlock, DeleteBlock, HeaderKey, LogBlock
from service.table.log_format.merge import InstantFilter, MergeConfig, merge_file_slice, valid_blocks
from service.table.log_format.reader import WRITE_TRANSACTIONAL_SCHEMES, read_log_blocks
from service.table.storage import Storage
from service.table.timeline import Timeline


def instant_filter(timeline: Timeline, latest_instant_time: str | None = None) -> InstantFilter:
    """What the block walk needs of the timeline: the commits timeline (commit, deltacommit,
    replacecommit; `HoodieTableMetaClient.getCommitsTimeline` on MOR), split into completed and
    pending, and the first completed non-savepoint instant (`isBeforeTimelineStarts`)."""
    commits = timeline.commits()
    completed = timeline.completed_commit_times
    non_savepoint = [t for t in completed if timeline.find(t, Action.SAVEPOINT) is None]
    latest = latest_instant_time if latest_instant_time is not None else max(completed, default=None)
    return InstantFilter(
        frozenset(completed),
        frozenset(i.timestamp for i in commits.pending()),
        min(non_savepoint, default=None),
        latest,
    )


def read_log_file(storage: Storage, log_file: LogFile) -> list[LogBlock]:
    """Every block of `log_file`, in file order (corrupt ones included, as `CorruptBlock`)."""
    data = storage.read_bytes(log_file.path)
    # Only object stores are write-transactional here (`StorageSchemes`: s3, s3a, gs); pyarrow's
    # store kind "s3" covers s3 and s3a.
    transactional = storage.location.store in WRITE_TRANSACTIONAL_SCHEMES
    return list(read_log_blocks(data, log_file.path, write_transactional=transactional))


def read_file_slice(
    storage: Storage,
    file_slice: FileSlice,
    instants: InstantFilter,
    config: MergeConfig,
    schema: pa.Schema | None = None,
) -> pa.Table:
    """The slice's latest records. `schema` (table schema with meta fields) defaults to the base
    file's, or for a log-only slice to the SCHEMA header of its newest valid data block."""
    where = f"file slice {file_slice.partition_path!r}/{file_slice.file_id} @ {file_slice.base_instant_time}"
    base = None
    if file_slice.base_file is not None:
        path = file_slice.base_file.path
        try:
            with storage.filesystem.open_input_file(storage.fs_path(path)) as source:
                base = pq.read_table(source)
            _ = base.column_names  # decoded now: a corrupt column name fails here, naming the file
        # A footer, schema or key-value metadata that is not Parquet's (ArrowInvalid and
        # UnicodeDecodeError are ValueErrors).
        except ValueError as exc:
            raise CorruptTableError(f"{where}: base file {path} cannot be read: {exc}") from exc
        except OSError as exc:  # a page that does not decompress, or storage failing
            raise StoredFileReadError(f"{where}: base file {path} cannot be read: {exc}") from exc
    logs = [(lf, read_log_file(storage, lf)) for lf in file_slice.log_files]
    blocks = valid_blocks(logs, instants)
    if schema is None:
        schema = base.schema if base is not None else _latest_block_schema(blocks, where)
    return merge_file_slice(base, blocks, config, schema, where)


def _latest_block_schema(blocks: list[DataBlock | DeleteBlock], where: str) -> pa.Schema:
    # A partial update's SCHEMA holds only the columns it updates.
    data = [b for b in blocks if isinstance(b, DataBlock) and not b.is_partial]
    if not data:
        raise CorruptTableError(f"{where}: no base file and no committed data block to take a schema from")
    return avro_record_to_arrow_schema(json.loads(data[-1].header[HeaderKey.SCHEMA]))
