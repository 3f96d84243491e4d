"""`CleanPlan`: what one clean deletes, as the planner decided it (base-relative paths, sizes)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from service.config.cleaning import CleaningPolicy
from service.table.instant import Instant


@dataclass(frozen=True, slots=True)
class CleanTarget:
    """One data file to delete: a base file or a log file of a cleaned file slice."""

    partition_path: str
    path: str  # relative to the table's base path
    file_id: str
    base_instant_time: str  # the slice's base instant
    size_bytes: int = 0

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True)
class CleanPlan:
    """A clean plan before it is written as `T.clean.requested` (HoodieCleanerPlan)."""

    policy: CleaningPolicy
    earliest_commit_to_retain: Instant | None  # None for KEEP_LATEST_FILE_VERSIONS
    last_completed_commit_timestamp: str  # "" when the table has no completed commit
    # partition -> files to delete; only partitions with at least one file (as Java writes the plan).
    targets: Mapping[str, tuple[CleanTarget, ...]]
    partitions_to_be_deleted: tuple[str, ...] = ()
    incremental: bool = False  # partitions were chosen from the commits since the last clean
    partitions_scanned: int = 0
    savepointed_timestamps: tuple[str, ...] = ()  # completed savepoints when planned (Hudi 0.15 records them)

    @cached_property
    def all_targets(self) -> tuple[CleanTarget, ...]:
        return tuple(t for partition in sorted(self.targets) for t in self.targets[partition])

    @property
    def file_count(self) -> int:
        return len(self.all_targets)

    @property
    def total_bytes(self) -> int:
        return sum(t.size_bytes for t in self.all_targets)

    @property
    def earliest_commit_to_retain_time(self) -> str:
        """The ECTR timestamp as HoodieCleanMetadata records it ("" when there is none)."""
        return self.earliest_commit_to_retain.timestamp if self.earliest_commit_to_retain else ""
