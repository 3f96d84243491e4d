"""Timeline structures the benchmarks' synthetic tables share."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from service.config import java_properties
from service.table import codecs
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.properties import TableConfig


def partition_metafile_bytes(commit_time: str, partition_path: str, now: datetime | None = None) -> bytes:
    """`.hoodie_partition_metadata` as Hudi writes it: `HoodiePartitionMetadata.writeMetafile` stores
    `commitTime` and `partitionDepth` with `Properties.store(os, "partition metadata")` (a comment line,
    a date line, then the keys). Hudi's readers need `partitionDepth`
    (`HoodiePartitionMetadata.getPartitionDepth` throws "Could not find partitionDepth in partition
    metafile" without it); it is the partition path's depth below the base path, 0 for the base path."""
    depth = len(partition_path.strip("/").split("/")) if partition_path.strip("/") else 0
    props = {"commitTime": commit_time, "partitionDepth": str(depth)}
    return java_properties.dumps(props, comment="partition metadata", now=now).encode("latin-1")


def write_partition_metafile(base: Path, partition_path: str, commit_time: str) -> Path:
    """Write the partition's metafile unless it has one (Hudi's `HoodiePartitionMetadata.trySave` keeps
    the first: a partition's metafile names the commit that created the partition)."""
    path = base / partition_path / PARTITION_METAFILE_PREFIX  # `base / ""` is `base`
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(partition_metafile_bytes(commit_time, partition_path))
    return path


def cow_table_properties(
    name: str, precombine: str, partition_field: str | None = None, table_version: int = 6
) -> bytes:
    """`hoodie.properties` of a copy-on-write table keyed by `id`, timeline in UTC: version 6 as Hudi
    0.15 writes it, or version 9 with the keys Hudi 1.1.1 writes (layout 2 under `.hoodie/timeline`,
    ordering fields and merge mode instead of the precombine field and payload)."""
    raw = {
        "hoodie.table.name": name,
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.precombine.field": precombine,
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.archivelog.folder": "archived",
    }
    if table_version == 9:
        del raw["hoodie.table.precombine.field"]
        raw.update(
            {
                "hoodie.table.version": "9",
                "hoodie.table.initial.version": "9",
                "hoodie.timeline.layout.version": "2",
                "hoodie.timeline.path": "timeline",
                "hoodie.timeline.history.path": "history",
                "hoodie.archivelog.folder": "history",
                "hoodie.table.format": "native",
                "hoodie.table.ordering.fields": precombine,
                "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                "hoodie.table.base.file.format": "PARQUET",
                "hoodie.populate.meta.fields": "true",
            }
        )
    elif table_version != 6:
        raise ValueError(f"no synthetic table of version {table_version}")
    if partition_field is None:
        raw["hoodie.table.keygenerator.class"] = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    else:
        raw["hoodie.table.partition.fields"] = partition_field
    return TableConfig(raw).to_text().encode("latin-1")


def clean_that_deleted_nothing(
    instant_time: str, earliest_commit_to_retain: str, last_completed: str, files_deleted: int = 0
) -> tuple[codecs.CleanerPlan, codecs.CleanMetadata]:
    """The plan and metadata of a KEEP_LATEST_COMMITS clean with an empty plan: it sets the earliest
    commit to retain (what incremental cleaning starts from) without listing files."""
    plan = codecs.CleanerPlan(
        earliest_instant_to_retain=codecs.ActionInstant(
            timestamp=earliest_commit_to_retain, action="commit", state="COMPLETED"
        ),
        last_completed_commit_timestamp=last_completed,
        policy="KEEP_LATEST_COMMITS",
        files_to_be_deleted_per_partition={},
        file_paths_to_be_deleted_per_partition={},
        partitions_to_be_deleted=(),
    )
    meta = codecs.CleanMetadata(
        start_clean_time=instant_time,
        time_taken_in_millis=1,
        total_files_deleted=files_deleted,
        earliest_commit_to_retain=earliest_commit_to_retain,
        last_completed_commit_timestamp=last_completed,
        partition_metadata={},
    )
    return plan, meta
