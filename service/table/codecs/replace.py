"""`T.replacecommit.requested`: HoodieRequestedReplaceMetadata and the clustering plan inside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Self

from service.table.codecs.avro_file import AvroModel, AvroRootModel, Int32

CLUSTER_OPERATION = "CLUSTER"  # WriteOperationType.CLUSTER.name(); Java's clustering detection keys on it


class SliceInfo(AvroModel):
    """HoodieSliceInfo: one input file slice of a clustering group."""

    data_file_path: str | None = None  # full qualified base file path; "" when the slice has none
    delta_file_paths: tuple[str, ...] | None = None
    file_id: str | None  # no Avro default: always written
    partition_path: str | None = None
    bootstrap_file_path: str | None = None
    version: Int32 | None = 1


class ClusteringGroup(AvroModel):
    """HoodieClusteringGroup: slices of one partition rewritten into `num_output_file_groups` groups."""

    slices: tuple[SliceInfo, ...] | None = None
    metrics: Mapping[str, float] | None = None
    num_output_file_groups: Int32 | None = 1
    extra_metadata: Mapping[str, str] | None = None
    version: Int32 | None = 1


class ClusteringStrategy(AvroModel):
    """HoodieClusteringStrategy: the execution strategy class and its parameters."""

    strategy_class_name: str | None = None
    strategy_params: Mapping[str, str] | None = None
    version: Int32 | None = 1


class ClusteringPlan(AvroModel):
    """HoodieClusteringPlan."""

    input_groups: tuple[ClusteringGroup, ...] | None = None
    strategy: ClusteringStrategy | None = None
    extra_metadata: Mapping[str, str] | None = None
    version: Int32 | None = 1
    preserve_hoodie_metadata: bool | None = None
    # Hudi 1.x: partitions whose candidates the plan did not all take, for its incremental scheduler.
    missing_schedule_partitions: tuple[str, ...] | None = None


# Plans of version-6 tables are written in Hudi 0.15's schema, without `missingSchedulePartitions`.
REQUESTED_REPLACE_SCHEMA_0_15 = "HoodieRequestedReplaceMetadata-0.15"


class RequestedReplaceMetadata(AvroRootModel):
    """HoodieRequestedReplaceMetadata; every field null is what insert_overwrite writes (and what a
    0-byte requested file decodes to)."""

    AVRO_NAME: ClassVar[str] = "HoodieRequestedReplaceMetadata"

    operation_type: str | None = None
    clustering_plan: ClusteringPlan | None = None
    extra_metadata: Mapping[str, str] | None = None
    version: Int32 | None = 1

    @classmethod
    def from_empty_file(cls, source: str) -> Self:
        # Java's ClusteringUtils treats an empty requested file as "not a clustering".
        return cls(operation_type=None, clustering_plan=None, extra_metadata=None, version=None)

    @property
    def is_clustering(self) -> bool:
        """Whether this replacecommit is a clustering: Java's ClusteringUtils looks at operationType only."""
        return self.operation_type == CLUSTER_OPERATION
