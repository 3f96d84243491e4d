"""A clustering plan on disk (`T.replacecommit.requested`, Avro) and the typed plan, converted both ways.

`requested_metadata` writes what Java's `ClusteringPlanActionExecutor` writes: operationType
`CLUSTER`, `{}` extra metadata, version 1 everywhere, `preserveHoodieMetadata` true, qualified base
file paths, `[]` delta files and `""` bootstrap path for copy-on-write slices, and the group metrics
of `FileSliceMetricUtils`. `read_clustering_plan` reads a stored plan (ours or Hudi's) through the
table's facts reader, which decodes it once with `service.table.clustering_plan.decode_clustering_plan`
(confining every slice path to the table).
"""

from __future__ import annotations

from typing import Protocol

from service.errors import CorruptTableError
from service.table import codecs
from service.table.clustering_plan import PLAN_VERSION, PlannedClustering, PlannedSlice
from service.table.instant import Instant
from service.table.table import HudiTable


class PathQualifier(Protocol):
    """Turns base-relative paths into the qualified URIs plans hold (`Storage` does)."""

    def qualify(self, rel: str) -> str: ...


def requested_metadata(plan: PlannedClustering, paths: PathQualifier) -> codecs.RequestedReplaceMetadata:
    """`plan` as Java's `ClusteringPlanActionExecutor` writes it into `T.replacecommit.requested`."""
    groups = tuple(
        codecs.ClusteringGroup(
            slices=tuple(_slice_info(s, paths) for s in g.slices),
            metrics=dict(g.metrics),
            num_output_file_groups=g.num_output_file_groups,
            extra_metadata=None,
            version=PLAN_VERSION,
        )
        for g in plan.groups
    )
    avro_plan = codecs.ClusteringPlan(
        input_groups=groups,
        strategy=codecs.ClusteringStrategy(
            strategy_class_name=plan.strategy_class,
            strategy_params=dict(plan.strategy_params),
            version=PLAN_VERSION,
        ),
        extra_metadata=dict(plan.extra_metadata),
        version=PLAN_VERSION,
        preserve_hoodie_metadata=plan.preserve_hoodie_metadata,
        missing_schedule_partitions=plan.missing_partitions,
    )
    return codecs.RequestedReplaceMetadata(
        operation_type=codecs.CLUSTER_OPERATION,
        clustering_plan=avro_plan,
        extra_metadata={},
        version=PLAN_VERSION,
    )


def read_clustering_plan(table: HudiTable, instant: Instant) -> PlannedClustering:
    """The clustering plan `instant` requested, decoded and confined; CorruptTableError if it is none."""
    plan = table.facts_reader.clustering_plan(instant, file_names_only=False)
    if plan is None:
        raise CorruptTableError(f"{table.base_uri}: {instant} is not a clustering plan")
    return plan


def _slice_info(s: PlannedSlice, paths: PathQualifier) -> codecs.SliceInfo:
    return codecs.SliceInfo(
        data_file_path=paths.qualify(s.base_file_path) if s.base_file_path else "",
        delta_file_paths=tuple(paths.qualify(p) for p in s.log_file_paths),
        file_id=s.file_id,
        partition_path=s.partition_path,
        bootstrap_file_path="",
        version=PLAN_VERSION,
    )
