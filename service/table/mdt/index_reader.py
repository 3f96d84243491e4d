"""Read the records of a metadata-table index partition (`column_stats`, `partition_stats`, ...) as
Hudi 1.x's readers merge them: the latest merged file slice of every file group, the base HFile
first, then the log blocks in `HoodieLogFile.LogFileComparator` order.

On layout 2 (table versions 8 and 9) the MDT is sliced like a data table of that layout: a log file
names the MDT deltacommit that wrote it, counts once that deltacommit completed in the MDT, and joins
the slice with the largest base instant at or before its completion time (`service.table.slicing`;
`HoodieFileGroup.getBaseInstantTime`). Within the slice only blocks of instants readers trust are
merged (`HoodieTableMetadataUtil.getValidInstantTimestamps`: a deltacommit of a data instant still
pending, such as a table service between its MDT write and its completion, is skipped). HFILE_DATA
blocks upsert records (`HoodieMetadataPayload.preCombine`: column stats of one key merge as
`HoodieTableMetadataUtil.mergeColumnStats` does, the rest take the newer record); DELETE blocks,
which 1.x writes for deleted index records, remove keys.

Used by `partition_stats` (`service.table.mdt.partition_stats`), which needs the `column_stats` of the
files a commit did not write. Layout 1 (version 6) MDTs are read by `files_listing.py` for `files`
only; the index partitions the service writes there need no read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import cached_property

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.fs_view import FileSlice, FileSystemView, TimelineFacts
from service.table.hfile.reader import HFileReader
from service.table.layout import TimelineLayout
from service.table.log_format.blocks import BlockLocation
from service.table.log_format.content import decode_deletes
from service.table.lsm_history import LsmHistory
from service.table.mdt.column_ranges import merge_column_stats
from service.table.mdt.index_records import ColumnStats, IndexRecord, decode_index_record
from service.table.mdt.log_blocks import BlockType, HeaderKey, LogBlock, read_log_blocks
from service.table.mdt.timeline import MDT_BASE, valid_instant_times
from service.table.storage import Storage
from service.table.timeline import Timeline

_HFILE_EXTENSION = ".hfile"


@dataclass(frozen=True)
class MdtReader:
    """A layout-2 metadata table as read under the table lock: its timeline and layout, and the data
    timeline that decides which MDT instants count. `records` reads one index partition."""

    storage: Storage
    data_timeline: Timeline
    data_layout: TimelineLayout
    mdt_layout: TimelineLayout
    mdt_timeline: Timeline

    @cached_property
    def valid_instants(self) -> frozenset[str]:
        return valid_instant_times(self.storage, self.data_timeline, self.mdt_timeline, self.data_layout)

    def latest_slices(self, mdt_partition: str) -> list[FileSlice]:
        """The latest committed file slice of every file group of `mdt_partition`."""
        if not self.mdt_layout.slices_logs_by_completion_time:
            raise UnsupportedTableError(
                f"{self.storage.qualify(MDT_BASE)}: index partitions are read on layout-2 metadata "
                "tables only"
            )
        statuses = self.storage.list_dir(f"{MDT_BASE}/{mdt_partition}")
        history_dir = self.mdt_layout.history_dir
        view = FileSystemView.build(
            self.mdt_timeline,
            {mdt_partition: [s for s in statuses if not s.name.endswith(".crc")]},
            TimelineFacts(),
            _HFILE_EXTENSION,
            table=self.storage.qualify(MDT_BASE),
            logs_by_completion_time=True,
            history=LsmHistory(self.storage, history_dir) if history_dir is not None else None,
        )
        return view.latest_file_slices(mdt_partition)

    def records(
        self, mdt_partition: str, key_prefixes: Collection[str] | None = None
    ) -> dict[str, IndexRecord]:
        """Every live record of `mdt_partition` (those whose key starts with one of `key_prefixes`,
        when given), merged; deleted keys are left out."""
        wanted: Callable[[str], bool]
        if key_prefixes is None:
            wanted = _everything
        else:
            prefixes = tuple(key_prefixes)
            wanted = lambda key: key.startswith(prefixes)  # noqa: E731
        out: dict[str, IndexRecord] = {}
        for file_slice in self.latest_slices(mdt_partition):
            out.update(self._slice_records(file_slice, wanted))
        return out

    def _slice_records(self, file_slice: FileSlice, wanted: Callable[[str], bool]) -> dict[str, IndexRecord]:
        merged: dict[str, IndexRecord] = {}
        if file_slice.base_file is not None:
            path = f"{MDT_BASE}/{file_slice.base_file.path}"
            for key, record in _hfile_records(
                self.storage.read_bytes(path), self.storage.qualify(path), None, wanted
            ):
                merged[key] = _newer(merged.get(key), record)
        valid = self.valid_instants
        for log_file in file_slice.log_files:
            path = f"{MDT_BASE}/{log_file.path}"
            source = self.storage.qualify(path)
            for block in read_log_blocks(self.storage.read_bytes(path), source):
                if block.block_type is BlockType.CORRUPT_BLOCK:
                    continue  # a torn tail block of a failed attempt: the scanner skips it
                if block.instant_time not in valid:
                    continue
                if block.block_type is BlockType.HFILE_DATA_BLOCK:
                    schema = block.header.get(HeaderKey.SCHEMA)
                    for key, record in _hfile_records(block.content, block.source, schema, wanted):
                        merged[key] = _newer(merged.get(key), record)
                elif block.block_type is BlockType.DELETE_BLOCK:
                    for key in _deleted_keys(block):
                        merged.pop(key, None)
                else:
                    raise UnsupportedTableError(
                        f"{block.source}: {block.block_type.name} in a layout-2 metadata table; Hudi 1.x "
                        "writes HFile data and delete blocks there"
                    )
        return {k: r for k, r in merged.items() if not _is_deleted(r)}


def _everything(key: str) -> bool:
    return True


def _hfile_records(
    data: bytes, source: str, schema: str | None, wanted: Callable[[str], bool]
) -> Iterator[tuple[str, IndexRecord]]:
    reader = HFileReader(data, source)
    writer_schema = schema or reader.schema_text
    if not writer_schema:
        raise CorruptTableError(f"{source}: no Avro schema in the block header or the HFile file info")
    for key, value in reader.items():
        if wanted(key):
            yield key, decode_index_record(key, value, writer_schema, source)


def _deleted_keys(block: LogBlock) -> list[str]:
    location = BlockLocation(block.log_file, block.offset, len(block.content))
    return [d.record_key for d in decode_deletes(memoryview(block.content), location) if d.record_key]


def _newer(older: IndexRecord | None, newer: IndexRecord) -> IndexRecord:
    """`HoodieMetadataPayload.preCombine` of two records of one key: column stats merge
    (`HoodieTableMetadataUtil.mergeColumnStatsRecords`) unless either is a tombstone or the newer is a
    tight bound (a partition's recomputed stats replace the old ones); other records take the newer."""
    if older is None:
        return newer
    a, b = older.payload, newer.payload
    if not (isinstance(a, ColumnStats) and isinstance(b, ColumnStats)):
        return newer
    if a.is_deleted or b.is_deleted or b.is_tight_bound:
        return newer
    merged = merge_column_stats(b, a)
    return IndexRecord(newer.key, newer.type, merged)


def _is_deleted(record: IndexRecord) -> bool:
    return bool(getattr(record.payload, "is_deleted", False))
