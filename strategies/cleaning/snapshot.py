"""`CleanSnapshot`: everything the planner reads, loaded once and frozen."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import tzinfo

from service.table.fs_view import FileSystemView, TimelineFacts
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

    `views`: the file-system view, as views of disjoint batches of whole partitions
    (`HudiTable.iter_views`), read once, in order: the planner holds one batch at a time, not the
    table. Together they must list every partition when the scan is full; for an incremental scan
    they may list only the partitions to scan, which `listed_partitions` then names (None: they list
    all). `facts`: the timeline's facts every view was built with.
    """

    timeline: Timeline
    views: Iterable[FileSystemView]
    facts: TimelineFacts
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
        return tuple(sorted(self.facts.savepointed_files))
