"""Our `CleanPlan` as a HoodieCleanerPlan, a stored plan's files back as paths, and HoodieCleanMetadata."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from service.errors import CorruptTableError, HudiTableServiceError
from service.table import codecs
from service.table.codecs import clean as avro
from service.table.instant import Action, Instant, State
from service.table.paths import PathGuard
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.cleaning import CleanPlan

log = logging.getLogger(__name__)


def to_cleaner_plan(plan: CleanPlan, storage: Storage) -> avro.CleanerPlan:
    """HoodieCleanerPlan v2 as Java writes it: qualified paths, `{}` for the v1 map, `[]` when no
    partition is deleted. (Hudi 0.15's optional extraMetadata is not written: our schemas are 0.14.1's.)"""
    ectr = plan.earliest_commit_to_retain
    return avro.CleanerPlan(
        earliest_instant_to_retain=(
            avro.ActionInstant(timestamp=ectr.timestamp, action=ectr.action.value, state=State.COMPLETED.name)
            if ectr is not None
            else None
        ),
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
        policy=plan.policy.value,
        files_to_be_deleted_per_partition={},
        version=avro.LATEST_CLEAN_PLAN_VERSION,
        file_paths_to_be_deleted_per_partition={
            partition: tuple(
                avro.CleanFileInfo(file_path=storage.qualify(t.path), is_bootstrap_base_file=False)
                for t in targets
            )
            for partition, targets in plan.targets.items()
        },
        partitions_to_be_deleted=tuple(plan.partitions_to_be_deleted),
    )


@dataclass(frozen=True)
class StoredPlan:
    """A plan read back from `T.clean.requested`: file paths (base-relative) per partition."""

    instant_time: str
    policy: str
    earliest_commit_to_retain: str  # "" when none
    last_completed_commit_timestamp: str
    files: Mapping[str, tuple[str, ...]]  # partition -> base-relative paths, as stored (validated later)
    raw_paths: Mapping[str, tuple[str, ...]]  # partition -> the paths exactly as written in the plan
    partitions_to_be_deleted: tuple[str, ...]

    @property
    def file_count(self) -> int:
        return sum(len(p) for p in self.files.values())


def read_stored_plan(
    instant_time: str, plan: avro.CleanerPlan, storage: Storage, guard: PathGuard
) -> StoredPlan:
    """Paths of a stored plan, confined to the table (`service.table.paths`): one path breaking the
    rule refuses the whole plan (`PathOutsideTableError`) before anything is listed or deleted.

    Version-1 plans (only `filesToBeDeletedPerPartition`, file names) are migrated as Java's
    CleanPlanV2MigrationHandler does: partition path joined with the name under the base path.
    """
    source = guard.source
    raw: dict[str, tuple[str, ...]] = {}
    files: dict[str, tuple[str, ...]] = {}
    if plan.file_paths_to_be_deleted_per_partition is not None and (
        plan.version != 1 or plan.file_paths_to_be_deleted_per_partition
    ):
        field = "filePathsToBeDeletedPerPartition"
        for partition, infos in plan.file_paths_to_be_deleted_per_partition.items():
            guard.partition(field, partition)
            if any(info.is_bootstrap_base_file for info in infos):
                raise CorruptTableError(f"{source}: bootstrap base files are not supported by this cleaner")
            raw[partition] = tuple(info.file_path or "" for info in infos)
            files[partition] = tuple(guard.file(field, path, partition) for path in raw[partition])
    else:
        field = "filesToBeDeletedPerPartition"
        for partition, names in (plan.files_to_be_deleted_per_partition or {}).items():
            guard.partition(field, partition)
            rels = tuple(posixpath.join(partition, name) if partition else name for name in names)
            files[partition] = tuple(guard.relative_file(field, rel, partition) for rel in rels)
            raw[partition] = tuple(storage.qualify(rel) for rel in files[partition])
    deleted_partitions = tuple(plan.partitions_to_be_deleted or ())
    for partition in deleted_partitions:
        guard.partition("partitionsToBeDeleted", partition)
    ectr = plan.earliest_instant_to_retain
    return StoredPlan(
        instant_time=instant_time,
        policy=plan.policy,
        earliest_commit_to_retain=ectr.timestamp if ectr is not None else "",
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
        files=files,
        raw_paths=raw,
        partitions_to_be_deleted=deleted_partitions,
    )


def files_of_pending_cleans(table: HudiTable, timeline: Timeline) -> frozenset[str]:
    """Base-relative paths every pending clean on `timeline` (ours or a writer's) is deleting.

    Hudi's cleaner (`CleanActionExecutor.runClean`) deletes its files before it writes the clean's
    metadata-table deltacommit, so while it runs the MDT still lists files storage no longer has; the
    listing check (`service.table.listing_check`) must not take that for a disagreement. Any cleaner
    deletes only file versions retention no longer needs, never a latest slice. A plan that cannot be
    read exempts nothing (the check stays strict; its own clean refuses it when it runs).
    """
    if not table.lists_through_mdt:
        return frozenset()  # no listing check runs, so nothing to read
    storage = table.storage
    out: set[str] = set()
    for instant in timeline.by_actions([Action.CLEAN]).pending():
        rel = table.layout.instant_path(Instant(instant.timestamp, Action.CLEAN, State.REQUESTED))
        source = storage.qualify(rel)
        try:
            plan = codecs.decode(codecs.CleanerPlan, storage.read_bytes(rel), source)
            stored = read_stored_plan(instant.timestamp, plan, storage, table.path_guard(source))
        except (FileNotFoundError, HudiTableServiceError) as exc:
            log.debug(
                "table %s: pending clean %s exempts no file from the listing check: %s",
                table.name,
                instant.timestamp,
                exc,
            )
            continue
        out.update(path for paths in stored.files.values() for path in paths)
    return frozenset(out)


@dataclass(frozen=True)
class PartitionOutcome:
    """File names deleted now, and names that were already gone when the delete ran."""

    deleted: tuple[str, ...]
    already_gone: tuple[str, ...]


def to_clean_metadata(
    plan: StoredPlan, outcomes: Mapping[str, PartitionOutcome], time_taken_ms: int
) -> avro.CleanMetadata:
    """HoodieCleanMetadata v2, one entry per partition of the plan, lists of file names.

    Files already gone go into `failedDeleteFiles`, as Java 0.15 records them (its delete returns
    false for a missing file); they still count as deleted for this service (the clean completes).
    """
    partition_metadata = {}
    for partition, paths in plan.files.items():
        outcome = outcomes.get(partition, PartitionOutcome((), ()))
        partition_metadata[partition] = avro.CleanPartitionMetadata(
            partition_path=partition,
            policy=plan.policy,
            delete_path_patterns=tuple(posixpath.basename(p) for p in paths),
            success_delete_files=outcome.deleted,
            failed_delete_files=outcome.already_gone,
            is_partition_deleted=partition in plan.partitions_to_be_deleted,
        )
    return avro.CleanMetadata(
        start_clean_time=plan.instant_time,
        time_taken_in_millis=time_taken_ms,
        total_files_deleted=sum(len(o.deleted) for o in outcomes.values()),
        earliest_commit_to_retain=plan.earliest_commit_to_retain,
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
        partition_metadata=partition_metadata,
        version=avro.LATEST_CLEAN_METADATA_VERSION,
        bootstrap_partition_metadata={},
    )
