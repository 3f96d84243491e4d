"""Synthetic file-system view snapshots with exact file sizes, for planner tests (no files on disk)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from service.config.clustering import ClusteringConfig
from service.config.hoodie import HoodieConfig
from service.table.clustering_plan import PlannedGroup
from service.table.data_files import base_file_name
from service.table.fs_view import FileGroupId, FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.storage import FileStatus
from service.table.timeline import Timeline
from tests.support.fixtures import ts

MB = 1024 * 1024
NOW = datetime(2024, 3, 1, 5, 30, tzinfo=UTC)
COMMIT = ts(1)

# The planner's knobs in MB-sized units, so expected groups read easily.
SMALL_CONFIG: Mapping[str, object] = {
    "hoodie.clustering.plan.strategy.small.file.limit": 300 * MB,
    "hoodie.clustering.plan.strategy.max.bytes.per.group": 100 * MB,
    "hoodie.clustering.plan.strategy.target.file.max.bytes": 60 * MB,
}


def config_of(
    mapping: Mapping[str, object] | None = None, base: Mapping[str, object] = SMALL_CONFIG
) -> ClusteringConfig:
    return HoodieConfig.from_mapping({**base, **(mapping or {})}, "planner-test").clustering


def fid(name: str) -> str:
    """A readable file id: `a1` -> `a1-0`."""
    return f"{name}-0"


def base_name(file_id: str, instant: str = COMMIT) -> str:
    return base_file_name(file_id, "0-0-0", instant)


def snapshot(
    files: Mapping[str, Iterable[tuple[str, float]]],
    *,
    pending_clustering: Iterable[FileGroupId] = (),
    pending_compaction: Iterable[FileGroupId] = (),
    replaced: Iterable[FileGroupId] = (),
    log_files: Iterable[FileGroupId] = (),
    log_only: Mapping[str, Iterable[str]] = {},
) -> FileSystemView:
    """A view of one committed write: partition -> [(name, size in MB)]; file ids are `fid(name)`.

    `log_files` file groups get one 1000-byte log file; `log_only` names (per partition) are file
    groups of one such log file and no base file (what log-indexing writers create on MOR)."""
    timeline = Timeline.of([Instant(COMMIT, Action.COMMIT, State.COMPLETED)])
    with_logs = set(log_files)
    listing: dict[str, list[FileStatus]] = {}
    for partition, entries in files.items():
        statuses = listing.setdefault(partition, [])
        for name, size_mb in entries:
            file_id = fid(name)
            statuses.append(FileStatus(_join(partition, base_name(file_id)), int(size_mb * MB), False))
            if (partition, file_id) in with_logs:
                statuses.append(FileStatus(_join(partition, f".{file_id}_{COMMIT}.log.1_0-0-0"), 1000, False))
    for partition, names in log_only.items():
        for name in names:
            log_name = f".{fid(name)}_{COMMIT}.log.1_0-0-0"
            listing.setdefault(partition, []).append(FileStatus(_join(partition, log_name), 1000, False))
    facts = TimelineFacts(
        replaced={fg: ts(2) for fg in replaced},
        pending_clustering={fg: ts(3) for fg in pending_clustering},
        pending_compaction={fg: (ts(4), COMMIT) for fg in pending_compaction},
    )
    return FileSystemView.build(timeline, listing, facts)


def _join(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def grouping(groups: Sequence[PlannedGroup]) -> list[tuple[str, list[str], int]]:
    """(partition, [slice names: file ids without `-0`], numOutputFileGroups) per group, in plan order."""
    return [
        (g.partition_path, [s.file_id.removesuffix("-0") for s in g.slices], g.num_output_file_groups)
        for g in groups
    ]
