"""The `partition_stats` records a table service's commit writes on Hudi 1.x: every partition it wrote
into, recomputed whole (`HoodieTableMetadataUtil.convertMetadataToPartitionStatRecords`).

For each partition of the commit's write stats: the column ranges of the files the commit wrote (read
from their footers, as for `column_stats`), plus the `column_stats` records the metadata table holds
for every other file of the partition's latest merged file slices, the commit's own instant counted
as complete (`getLatestMergedFileSlicesBeforeOrOnIncludingInflight`); merged per column
(`FileFormatUtils.getColumnRangeInPartition`: the outer bounds and the sums of the counts and sizes,
`HoodieColumnRangeMetadata.merge`), named by the partition path, with `isTightBound` true
(`HoodieMetadataPayload.createPartitionStatsRecords`). A file without `column_stats` records adds
nothing, as in Hudi. Readers then take the tight-bound record whole over the older one
(`mergeColumnStatsRecords`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace

from service.table.fs_view import FileGroup, FileSystemView
from service.table.mdt.column_ranges import merge_column_stats
from service.table.mdt.index_keys import COLUMN_STATS_PARTITION, partition_stats_key
from service.table.mdt.index_reader import MdtReader
from service.table.mdt.index_records import (
    RECORD_TYPE_PARTITION_STATS,
    ColumnStats,
    IndexRecord,
)

# Partition path -> names of the files of its latest merged slices.
PartitionFiles = Mapping[str, frozenset[str]]


def partition_files(
    view: FileSystemView, partitions: Iterable[str], instant_time: str
) -> dict[str, frozenset[str]]:
    """The file names a recompute at `instant_time` takes per partition: of every file group not
    replaced, the latest slice, with the base file of `instant_time` when it is the group's pending
    compaction (it completes with this commit); a group in another pending compaction contributes
    its merged slices (the new slice's logs and the frozen slice before it)."""
    out: dict[str, frozenset[str]] = {}
    for partition in partitions:
        names: set[str] = set()
        for group in view.file_groups_in(partition):
            names.update(_file_names_of(group, instant_time))
        out[partition] = frozenset(names)
    return out


def _file_names_of(group: FileGroup, instant_time: str) -> Iterable[str]:
    """The files one group contributes to a recompute at `instant_time` (`partition_files`)."""
    if group.is_replaced or not group.slices:
        return ()
    if group.pending_compaction_instant == instant_time:
        return group.slices[0].file_names
    return [name for file_slice in group.snapshot_slices for name in file_slice.file_names]


def partition_stats_records(
    reader: MdtReader,
    written: Sequence[tuple[str, ColumnStats]],
    files: PartitionFiles,
    columns: Collection[str],
) -> list[IndexRecord]:
    """One record per (partition, column) for every partition of `files` (the partitions a commit
    wrote into, each with its files: `partition_files`) and column with a range: the ranges in
    `written` ((partition, range) of the files the commit wrote, fresh from their footers) and those
    the MDT's `column_stats` holds for the partition's other files."""
    by_partition: dict[str, list[ColumnStats]] = {p: [] for p in files}
    for partition, stats in written:
        by_partition[partition].append(stats)
    # A column-stats key is the partition-stats key of its (column, partition) plus the file's id.
    prefixes = {partition_stats_key(p, c): p for p in by_partition for c in columns}
    width = len(next(iter(prefixes))) if prefixes else 0
    stored = reader.records(COLUMN_STATS_PARTITION, prefixes) if prefixes else {}
    own = {(p, s.file_name) for p, ranges in by_partition.items() for s in ranges}
    wanted = set(columns)
    for record in stored.values():
        payload = record.payload
        if not isinstance(payload, ColumnStats) or payload.column_name not in wanted:
            continue
        found = prefixes.get(record.key[:width])
        if found is None or payload.file_name not in files.get(found, frozenset()):
            continue
        if (found, payload.file_name) in own:
            continue  # the commit's own file: its fresh range is already in
        by_partition[found].append(payload)
    out: list[IndexRecord] = []
    for partition in sorted(by_partition):
        merged: dict[str, ColumnStats] = {}
        for stats in by_partition[partition]:
            previous = merged.get(stats.column_name)
            merged[stats.column_name] = stats if previous is None else merge_column_stats(previous, stats)
        for column in sorted(merged):
            total = replace(merged[column], file_name=partition, is_deleted=False, is_tight_bound=True)
            out.append(
                IndexRecord(partition_stats_key(partition, column), RECORD_TYPE_PARTITION_STATS, total)
            )
    return out
