"""Cleaning: HoodieCleanerPlan (`T.clean.requested` / `.inflight`) and HoodieCleanMetadata (`T.clean`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from service.table.codecs.avro_file import AvroModel, AvroRootModel, Int32, Int64

# Java writes version 2 for both; a version-1 plan is migrated on read from the deprecated
# `filesToBeDeletedPerPartition`, which would turn our plan into one that deletes nothing.
LATEST_CLEAN_PLAN_VERSION = 2
LATEST_CLEAN_METADATA_VERSION = 2


class ActionInstant(AvroModel):
    """HoodieActionInstant: the earliest instant to retain (`state` is e.g. "COMPLETED")."""

    timestamp: str
    action: str
    state: str


class CleanFileInfo(AvroModel):
    """HoodieCleanFileInfo: one file to delete, by full qualified path."""

    file_path: str | None = None
    is_bootstrap_base_file: bool | None = None


class CleanerPlan(AvroRootModel):
    """HoodieCleanerPlan. Fields Hudi 0.15 added (extraMetadata) are read past, not kept."""

    AVRO_NAME: ClassVar[str] = "HoodieCleanerPlan"

    earliest_instant_to_retain: ActionInstant | None = None
    last_completed_commit_timestamp: str = ""
    policy: str  # HoodieCleaningPolicy name, e.g. KEEP_LATEST_COMMITS
    files_to_be_deleted_per_partition: Mapping[str, tuple[str, ...]] | None = None  # deprecated (v1)
    version: Int32 | None = LATEST_CLEAN_PLAN_VERSION
    file_paths_to_be_deleted_per_partition: Mapping[str, tuple[CleanFileInfo, ...]] | None = None
    partitions_to_be_deleted: tuple[str, ...] | None = None


class CleanPartitionMetadata(AvroModel):
    """HoodieCleanPartitionMetadata: outcome of one partition; lists hold file names, not paths."""

    partition_path: str
    policy: str
    delete_path_patterns: tuple[str, ...]
    success_delete_files: tuple[str, ...]
    failed_delete_files: tuple[str, ...]
    is_partition_deleted: bool | None = None


class CleanMetadata(AvroRootModel):
    """HoodieCleanMetadata. Fields Hudi 0.15 added (extraMetadata) are read past, not kept."""

    AVRO_NAME: ClassVar[str] = "HoodieCleanMetadata"

    start_clean_time: str
    time_taken_in_millis: Int64
    total_files_deleted: Int32
    earliest_commit_to_retain: str
    last_completed_commit_timestamp: str = ""
    partition_metadata: Mapping[str, CleanPartitionMetadata]
    version: Int32 | None = LATEST_CLEAN_METADATA_VERSION
    bootstrap_partition_metadata: Mapping[str, CleanPartitionMetadata] | None = None
