"""Timeline structures the benchmarks' synthetic tables share."""

from __future__ import annotations

from service.table import codecs
from service.table.properties import TableConfig


def cow_table_properties(name: str, precombine: str, partition_field: str | None = None) -> bytes:
    """`hoodie.properties` of a version-6 copy-on-write table keyed by `id`, timeline in UTC."""
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
