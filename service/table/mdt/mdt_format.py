"""What a table version's metadata table asks of a writer: the one place its version differences live.

`TableFormat.mdt` holds one of these; the MDT writer (`commit.py`, `index_sync.py`, `log_writer.py`)
asks it, never the version.

- Table version 6 (Hudi 0.14/0.15): MDT timeline layout 1; a deltacommit appends to the latest slice
  of each file group (`.<fileId>_<baseInstant>.log.<n>`); a clean's column-stats tombstones are stub
  records (`HoodieColumnRangeMetadata.stub`, `isDeleted=true`) for the indexed columns of the latest
  table schema, under 0.15's `FSUtils.getFileName` truncation of the file name.
- Table versions 8 and 9 (Hudi 1.0, 1.1): MDT timeline layout 2; every deltacommit writes new log
  files named by itself (`.<fileId>_<deltacommit>.log.1_<token>`, `HoodieAppendHandle` on 1.x); a
  clean's column-stats entries go as keys in a DELETE block (`HoodieMetadataPayload` records with
  `isDeleted` are deletes on 1.x's write path: `HoodieAppendHandle` puts them in
  `HoodieDeleteBlock`), for every deleted file (base and log) and every `sourceFields` column of the
  `column_stats` index definition (`.hoodie/.index_defs/index.json`), full file names. Seen on
  tables Hudi 1.0.2 and 1.1.1 cleaned (tests/interop/test_hudi1_tables.py). A data rollback is an
  MDT rollback of the same instant (tests/interop/test_hudi1_rollback.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from service.table.mdt.files_listing import FILES_PARTITION
from service.table.mdt.index_keys import (
    BLOOM_FILTERS_PARTITION,
    COLUMN_STATS_PARTITION,
    PARTITION_STATS_PARTITION,
    RECORD_INDEX_PARTITION,
)

SECONDARY_INDEX_PREFIX = "secondary_index_"


@dataclass(frozen=True)
class MdtFormat:
    """A table version's metadata-table rules for the writes the service makes."""

    # `schemas/<record_schema>.avsc`: the block schema (HoodieMetadataRecord with meta fields) that
    # version's Hudi writes into block headers and HFile file info.
    record_schema: str
    # Log files named by the deltacommit writing them (layout 2), or by the slice they extend.
    logs_per_deltacommit: bool
    # A clean's column-stats tombstones: DELETE-block keys (1.x) or stub records (0.x).
    column_stats_deletes_as_keys: bool
    # Indexed columns from the index definition file (1.x) or the latest table schema (0.x); on 1.x
    # the definition's version also picks the value form (V2: typed values with their `valueType`),
    # and every column-stats record carries `isTightBound` (false for a file).
    columns_from_index_definitions: bool
    # The index partitions the service writes (a commit's records, a clean's tombstones) when present.
    index_partitions_written: tuple[str, ...]
    # MDT partitions a table may have for the service to serve it on this version: those it keeps in
    # sync and those its services leave alone as Hudi's do (`partition_prefixes` for families such as
    # `secondary_index_<name>`). A table with any other partition is refused.
    partitions: tuple[str, ...]
    partition_prefixes: tuple[str, ...] = ()
    # How a data-table rollback of T reaches the MDT (`HoodieBackedTableMetadataWriter.update(
    # HoodieRollbackMetadata…)`): on 1.x the MDT rolls back its own deltacommit T with a rollback
    # instant of the same time, deleting T's log files, and writes no deltacommit; on 0.x T is taken
    # out and a deltacommit of the rollback's time is written (`service.table.mdt.rollback`).
    rollback_as_mdt_rollback: bool = False

    def accepts(self, mdt_partition: str) -> bool:
        return mdt_partition in self.partitions or mdt_partition.startswith(self.partition_prefixes)


MDT_FORMAT_V6 = MdtFormat(
    record_schema="HoodieMetadataRecordWithMetaFields",
    logs_per_deltacommit=False,
    column_stats_deletes_as_keys=False,
    columns_from_index_definitions=False,
    # A clustering writes the record index's new locations (`record_index_records`); compaction and
    # clean leave it, as Hudi 0.15's do.
    index_partitions_written=(COLUMN_STATS_PARTITION, BLOOM_FILTERS_PARTITION, RECORD_INDEX_PARTITION),
    partitions=(FILES_PARTITION, COLUMN_STATS_PARTITION, BLOOM_FILTERS_PARTITION, RECORD_INDEX_PARTITION),
)
# Versions 8/9 serve cleaning and compaction. Hudi 1.0.2's and 1.1.1's clean writes `files` and
# `column_stats` and nothing into `partition_stats`, `bloom_filters`, `record_index` or
# `secondary_index_*` (seen on tables with all of them: tests/interop/test_hudi1_tables.py); their
# compaction adds `partition_stats` of the compacted partitions and leaves the record index and
# secondary indexes (tests/interop/test_hudi1_compaction.py).
# Expression indexes (`expr_index_*`) need Spark expressions evaluated: refused.
MDT_FORMAT_V8 = MdtFormat(
    record_schema="HoodieMetadataRecordWithMetaFields-1.0",
    logs_per_deltacommit=True,
    column_stats_deletes_as_keys=True,
    columns_from_index_definitions=True,
    # A compaction and a clustering recompute the partition_stats of the partitions they wrote into (a
    # clean writes none); a clustering writes the record index's new locations of the keys it moved.
    index_partitions_written=(COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION, RECORD_INDEX_PARTITION),
    partitions=(
        FILES_PARTITION,
        COLUMN_STATS_PARTITION,
        PARTITION_STATS_PARTITION,
        BLOOM_FILTERS_PARTITION,
        RECORD_INDEX_PARTITION,
    ),
    partition_prefixes=(SECONDARY_INDEX_PREFIX,),
    rollback_as_mdt_rollback=True,
)
MDT_FORMAT_V9 = replace(MDT_FORMAT_V8, record_schema="HoodieMetadataRecordWithMetaFields-1.1")
MDT_FORMATS = {6: MDT_FORMAT_V6, 8: MDT_FORMAT_V8, 9: MDT_FORMAT_V9}
