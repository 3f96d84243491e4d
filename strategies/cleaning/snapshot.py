"""`CleanSnapshot`: everything the planner reads, loaded once and frozen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo

from service.table.fs_view import FileSystemView
from service.table.timeline import Timeline


@dataclass(frozen=True)
class LastClean:
    """What the latest completed clean (`T.clean`, HoodieCleanMetadata) recorded."""

    timestamp: str
    earliest_commit_to_retain: str = ""  # "" when that clean had none
    last_completed_commit_timestamp: str = ""
    # Hudi 0.15's extraMetadata `savepointed_timestamps`; None when the file does not carry it.
    savepointed_timestamps: tuple[str, ...] | None = None
    # A 0-byte completed clean: Java ignores it for the trigger and the incremental scan.
    empty: bool = False


@dataclass(frozen=True)
class CleanSnapshot:
    """The table as the planner sees it.

    `view` must list every partition when the scan is full; for an incremental scan it may list
    only the partitions to scan, which `listed_partitions` then names (None: the view lists all).
    """

    timeline: Timeline
    view: FileSystemView
    timeline_zone: tzinfo
    # Completed commit/deltacommit/replacecommit timestamp -> partitions it wrote or replaced in.
    commit_partitions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    last_clean: LastClean | None = None
    partitioned: bool = True
    listed_partitions: frozenset[str] | None = None
    # File names of the slices pending clustering plans will read (never deleted, whatever the policy).
    pending_clustering_file_names: frozenset[str] = frozenset()

    @property
    def savepoint_timestamps(self) -> tuple[str, ...]:
        """Completed savepoints, oldest first."""
        return tuple(sorted(self.view.facts.savepointed_files))
