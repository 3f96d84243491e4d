"""A clustering plan on disk (`T.replacecommit.requested`, Avro) and the typed plan, converted both ways.

`requested_metadata` writes what Java's `ClusteringPlanActionExecutor` writes: operationType
`CLUSTER`, `{}` extra metadata, version 1 everywhere, `preserveHoodieMetadata` true, qualified base
file paths, `[]` delta files and `""` bootstrap path for copy-on-write slices, and the group metrics
of `FileSliceMetricUtils`. `read_clustering_plan` is the one place a stored plan (ours or Hudi's) is
decoded: every slice path is confined to the table there (`service.table.paths`), so every user of
the typed plan gets confined, base-relative paths.
"""

from __future__ import annotations

import posixpath
from typing import Protocol

from service.errors import CorruptTableError
from service.table import codecs
from service.table.data_files import parse_base_file, parse_log_file
from service.table.instant import Action, Instant, State
from service.table.paths import PathGuard
from service.table.table import HudiTable
from service.table.timeline import instant_path
from strategies.clustering.model import PLAN_VERSION, PlannedClustering, PlannedGroup, PlannedSlice

# Field names of HoodieSliceInfo as refusals name them.
_PARTITION_FIELD = "inputGroups[].slices[].partitionPath"
_DATA_FILE_FIELD = "inputGroups[].slices[].dataFilePath"
_DELTA_FILES_FIELD = "inputGroups[].slices[].deltaFilePaths"
_FILE_ID_FIELD = "inputGroups[].slices[].fileId"


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
    )
    return codecs.RequestedReplaceMetadata(
        operation_type=codecs.CLUSTER_OPERATION,
        clustering_plan=avro_plan,
        extra_metadata={},
        version=PLAN_VERSION,
    )


def read_clustering_plan(table: HudiTable, instant: Instant) -> PlannedClustering:
    """The clustering plan `instant` requested, decoded and confined; CorruptTableError if it is none."""
    requested = table.facts_reader.requested_plan(instant, codecs.RequestedReplaceMetadata)
    if requested is None or not requested.is_clustering or requested.clustering_plan is None:
        raise CorruptTableError(f"{table.base_uri}: {instant} is not a clustering plan")
    requested_file = Instant(instant.timestamp, Action.REPLACE_COMMIT, State.REQUESTED)
    source = table.storage.qualify(instant_path(requested_file))
    return decode_clustering_plan(requested, table.path_guard(source))


def decode_clustering_plan(requested: codecs.RequestedReplaceMetadata, guard: PathGuard) -> PlannedClustering:
    """A stored clustering plan (ours or Hudi's) as the typed plan; sizes it does not record are None.

    Each slice's `partitionPath` must be a partition path of the table, its files directly in that
    partition, and its `fileId` the file id of its base file: the commit writes
    `partitionToReplaceFileIds` from these fields, and rollback lists the partitions. The first
    field breaking the rule refuses the whole plan (PathOutsideTableError naming it).
    """
    plan = requested.clustering_plan
    if not requested.is_clustering or plan is None:
        raise CorruptTableError(
            f"{guard.source}: not a clustering plan (operationType {requested.operation_type!r})"
        )
    groups = []
    for index, group in enumerate(plan.input_groups or ()):
        slices = tuple(_planned_slice(info, guard) for info in group.slices or ())
        partitions = {s.partition_path for s in slices}
        if len(partitions) > 1:
            raise CorruptTableError(
                f"{guard.source}: clustering group {index} spans partitions {sorted(partitions)}"
            )
        groups.append(
            PlannedGroup(
                partition_path=partitions.pop() if partitions else "",
                slices=slices,
                num_output_file_groups=group.num_output_file_groups or 1,
                metrics=dict(group.metrics or {}),
            )
        )
    strategy = plan.strategy
    return PlannedClustering(
        groups=tuple(groups),
        strategy_class=(strategy.strategy_class_name or "") if strategy else "",
        strategy_params=dict((strategy.strategy_params or {}) if strategy else {}),
        extra_metadata=dict(plan.extra_metadata or {}),
        preserve_hoodie_metadata=bool(plan.preserve_hoodie_metadata),
    )


def _slice_info(s: PlannedSlice, paths: PathQualifier) -> codecs.SliceInfo:
    return codecs.SliceInfo(
        data_file_path=paths.qualify(s.base_file_path) if s.base_file_path else "",
        delta_file_paths=tuple(paths.qualify(p) for p in s.log_file_paths),
        file_id=s.file_id,
        partition_path=s.partition_path,
        bootstrap_file_path="",
        version=PLAN_VERSION,
    )


def _planned_slice(info: codecs.SliceInfo, guard: PathGuard) -> PlannedSlice:
    partition = guard.partition(_PARTITION_FIELD, info.partition_path or "")
    file_id = info.file_id or ""
    log_paths = tuple(guard.file(_DELTA_FILES_FIELD, p, partition) for p in info.delta_file_paths or ())
    if not info.data_file_path and log_paths:
        # A merge-on-read slice of log files only (refused by execution): its base instant is the
        # log files'.
        log = parse_log_file(partition, posixpath.basename(log_paths[0]))
        if log is None:
            raise CorruptTableError(
                f"{guard.source}: slice {file_id!r} names an unparsable log file {log_paths[0]!r}"
            )
        return PlannedSlice(partition, file_id, log.base_instant_time, "", None, log_paths)
    base_path = guard.file(_DATA_FILE_FIELD, info.data_file_path or "", partition)
    base = parse_base_file(partition, posixpath.basename(base_path))
    if base.file_id != file_id:
        raise guard.refuse(
            _FILE_ID_FIELD, file_id, f"it is not the file id of its dataFilePath {info.data_file_path!r}"
        )
    return PlannedSlice(partition, file_id, base.instant_time, base_path, None, log_paths)
