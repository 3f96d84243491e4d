"""On-disk codecs of timeline files: typed models, `encode(model) -> bytes`, `decode(type, bytes, source)`.

Avro files (plans, clean/rollback/savepoint metadata) are one-record container files checked against
our own Hudi 0.14.1 schemas (`schemas/`); commit metadata is Jackson-style JSON. Decoding failures
raise CorruptTableError naming the file.
"""

from __future__ import annotations

from typing import TypeVar

from service.table.codecs.avro_file import AvroRootModel, decode_avro, encode_avro
from service.table.codecs.clean import (
    LATEST_CLEAN_METADATA_VERSION,
    LATEST_CLEAN_PLAN_VERSION,
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
)
from service.table.codecs.commit import (
    NULL_COMMIT,
    SCHEMA_KEY,
    CommitMetadata,
    CommitSummary,
    ReplaceCommitMetadata,
    RuntimeStats,
    WriteOperationType,
    WriteStat,
    decode_commit,
    decode_commit_summary,
    encode_commit,
)
from service.table.codecs.compaction import (
    COMPACTION_PLAN_SCHEMA_0_15,
    LATEST_COMPACTION_PLAN_VERSION,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
)
from service.table.codecs.replace import (
    CLUSTER_OPERATION,
    REQUESTED_REPLACE_SCHEMA_0_15,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from service.table.codecs.rollback import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from service.table.codecs.savepoint import SavepointMetadata, SavepointPartitionMetadata

TimelineModel = AvroRootModel | CommitMetadata
T = TypeVar("T", bound=AvroRootModel | CommitMetadata)


def encode(model: TimelineModel, schema_name: str | None = None) -> bytes:
    """The bytes Hudi's Java code writes for `model`: Avro container file (in schema file `schema_name`
    when given, see `encode_avro`) or commit JSON."""
    if isinstance(model, CommitMetadata):
        return encode_commit(model)
    return encode_avro(model, schema_name)


def decode(model_type: type[T], data: bytes, source: str, *, avro_commit: bool = False) -> T:
    """Read a timeline file's bytes as `model_type`; `source` names the file in errors. Commit metadata
    is JSON unless `avro_commit` (`TimelineLayout.commit_metadata_is_avro` decides per file).

    Empty files: commit metadata → empty metadata, requested replace → all fields None (no plan),
    anything else → CorruptTableError.
    """
    if issubclass(model_type, CommitMetadata):
        return decode_commit(model_type, data, source, avro=avro_commit)
    return decode_avro(model_type, data, source)


__all__ = [
    "CLUSTER_OPERATION",
    "COMPACTION_PLAN_SCHEMA_0_15",
    "LATEST_CLEAN_METADATA_VERSION",
    "LATEST_CLEAN_PLAN_VERSION",
    "LATEST_COMPACTION_PLAN_VERSION",
    "NULL_COMMIT",
    "REQUESTED_REPLACE_SCHEMA_0_15",
    "SCHEMA_KEY",
    "ActionInstant",
    "AvroRootModel",
    "CleanFileInfo",
    "CleanMetadata",
    "CleanPartitionMetadata",
    "CleanerPlan",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringStrategy",
    "CommitMetadata",
    "CommitSummary",
    "CompactionOperation",
    "CompactionPlan",
    "CompactionStrategy",
    "InstantInfo",
    "ReplaceCommitMetadata",
    "RequestedReplaceMetadata",
    "RollbackMetadata",
    "RollbackPartitionMetadata",
    "RollbackPlan",
    "RollbackRequest",
    "RuntimeStats",
    "SavepointMetadata",
    "SavepointPartitionMetadata",
    "SliceInfo",
    "TimelineModel",
    "WriteOperationType",
    "WriteStat",
    "decode",
    "decode_commit_summary",
    "encode",
]
