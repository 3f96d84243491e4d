"""Complete a table service's commit (a compaction's `commit`, a clustering's `replacecommit`), under the
table lock: its metadata-table deltacommit first, then its completed instant, as Hudi's
`BaseHoodieTableServiceClient.completeCompaction` / `completeClustering` do.

On layout 1 the completed file is `T.<action>` with JSON commit metadata; on layout 2 (table versions 8
and 9) it is `T_<completion>.<action>` with Avro metadata, the completion time drawn here, under the
lock. On 1.x tables with `partition_stats` the MDT deltacommit recomputes the partitions the commit
wrote into, over their files once T completes (`partition_stats.partition_files`, plus the files T
wrote, which a pending clustering's view does not count yet).
"""

from __future__ import annotations

import functools
from datetime import datetime, tzinfo

from service.table import codecs
from service.table.instant import Instant
from service.table.mdt.commit import commit_records, sync_files_partition
from service.table.mdt.index_sync import commit_index_records
from service.table.mdt.mdt_format import PARTITION_STATS_PARTITION
from service.table.mdt.partition_stats import PartitionFiles, partition_files
from service.table.rolling_metadata import NO_ROLLING, RollingMetadata, carried_forward
from service.table.table import HudiTable
from service.table.timeline import Timeline, complete_instant


def complete_table_service(
    table: HudiTable,
    timeline: Timeline,
    pending: Instant,
    metadata: codecs.CommitMetadata,
    *,
    now: datetime,
    zone: tzinfo,
    relocated_in: tzinfo | None = None,
    rolling: RollingMetadata = NO_ROLLING,
) -> None:
    """Write MDT deltacommit T and then complete `pending` (T, inflight) with `metadata`. The caller
    holds the table lock and loaded `timeline` under it. `relocated_in`: the commit moved records (a
    clustering), whose record-index entries get their instant in this zone. `rolling`: the extra-metadata
    keys the commit carries forward from the recent ones (`service.table.rolling_metadata`)."""
    instant_time = pending.timestamp
    if rolling.keys:
        extra = carried_forward(rolling, timeline, metadata.extra_metadata, table.facts_reader.commit_summary)
        metadata = metadata.model_copy(update={"extra_metadata": extra})
    indexes = functools.partial(
        commit_index_records,
        table.storage,
        metadata=metadata,
        instant_time=instant_time,
        relocated_in=relocated_in,
        partition_files=_partition_files(table, timeline, instant_time, metadata),
    )
    records = commit_records(metadata, table.storage.qualify(instant_time))
    sync_files_partition(
        table.storage, timeline, instant_time, records, indexes, expected=table.format, now=now, tz=zone
    )
    content = codecs.encode_commit(metadata, avro=table.layout.writes_avro_commit_metadata)
    complete_instant(table.storage, table.layout, timeline, pending, content, now, zone)


def _partition_files(
    table: HudiTable, timeline: Timeline, instant_time: str, metadata: codecs.CommitMetadata
) -> PartitionFiles | None:
    """Each written partition's files once T completes: every file group's latest slice (a group a
    clustering replaces included: it is not replaced until T completes, and Hudi 1.0.2's and 1.1.1's
    clustering counts it, seen in tests/interop/test_hudi1_clustering.py) and T's own files. None
    where no `partition_stats` is kept (nothing to list)."""
    if not table.format.mdt.accepts(PARTITION_STATS_PARTITION) or (
        PARTITION_STATS_PARTITION not in table.config.metadata_partitions
    ):
        return None
    written = {
        partition: {s.path.rsplit("/", 1)[-1] for s in stats if s.path}
        for partition, stats in metadata.partition_to_write_stats.items()
    }
    listed = partition_files(table.load_view(timeline, sorted(written)), written, instant_time)
    return {partition: listed[partition] | names for partition, names in written.items()}
