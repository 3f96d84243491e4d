"""Rollback: HoodieRollbackPlan (`T.rollback.requested`) and HoodieRollbackMetadata (`T.rollback`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from service.table.codecs.avro_file import AvroModel, AvroRootModel, Int32, Int64


class InstantInfo(AvroModel):
    """HoodieInstantInfo: an instant by time and action."""

    commit_time: str
    action: str


class RollbackRequest(AvroModel):
    """HoodieRollbackRequest: what to undo in one file group (or a whole partition)."""

    partition_path: str
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: tuple[str, ...] = ()
    log_blocks_to_be_deleted: Mapping[str, Int64] | None = None


class RollbackPlan(AvroRootModel):
    """HoodieRollbackPlan."""

    AVRO_NAME: ClassVar[str] = "HoodieRollbackPlan"

    instant_to_rollback: InstantInfo | None = None
    # The only Hudi field name with a capital first letter. Not `alias=`: type checkers would then
    # want `RollbackRequests=` as the keyword.
    rollback_requests: tuple[RollbackRequest, ...] | None = Field(
        default=None, validation_alias="RollbackRequests", serialization_alias="RollbackRequests"
    )
    version: Int32 | None = 1


class RollbackPartitionMetadata(AvroModel):
    """HoodieRollbackPartitionMetadata: files removed (or appended to, for logs) in one partition."""

    partition_path: str
    success_delete_files: tuple[str, ...]
    failed_delete_files: tuple[str, ...]
    rollback_log_files: Mapping[str, Int64] | None = None
    log_files_from_failed_commit: Mapping[str, Int64] | None = None


class RollbackMetadata(AvroRootModel):
    """HoodieRollbackMetadata."""

    AVRO_NAME: ClassVar[str] = "HoodieRollbackMetadata"

    start_rollback_time: str
    time_taken_in_millis: Int64
    total_files_deleted: Int32
    commits_rollback: tuple[str, ...]
    partition_metadata: Mapping[str, RollbackPartitionMetadata]
    version: Int32 | None = 1
    instants_rollback: tuple[InstantInfo, ...] = ()
