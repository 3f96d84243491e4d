"""Where a table's timeline lives and how its files are named: Hudi's `TimelineLayout`, chosen once per table.

Layout 1 (table version 6): instants directly in `.hoodie/`, completed files `<requested>.<action>`,
clustering planned as a `replacecommit`. Layout 2 (table versions 8 and 9): instants in
`.hoodie/<hoodie.timeline.path>/` (`TimelinePathProviderV2`), completed files
`<requested>_<completion>.<action>` (`InstantFileNameGeneratorV2`), clustering planned under its own
`clustering` action and completed as a `replacecommit`; the archived (LSM) timeline in
`.hoodie/<timeline.path>/<hoodie.timeline.history.path>/` is Hudi's writers' to keep (the service only
reads it: `service.table.lsm_history`).
The metadata table, a Hudi table of its own under `.hoodie/metadata/`, has the layout of its data table.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from service.errors import CorruptTableError
from service.table.instant import Action, Instant, is_timeline_file_name, parse_instant_file_name

METAFOLDER = ".hoodie"
DEFAULT_TIMELINE_PATH = "timeline"  # HoodieTableConfig.TIMELINE_PATH's default
DEFAULT_HISTORY_PATH = "history"  # HoodieTableConfig.TIMELINE_HISTORY_PATH's default


@dataclass(frozen=True)
class TimelineLayout:
    """One table's timeline layout; every path is relative to the table's base path."""

    version: int
    timeline_dir: str
    history_dir: str | None = None

    @classmethod
    def v1(cls, meta_folder: str = METAFOLDER) -> TimelineLayout:
        return cls(1, meta_folder)

    @classmethod
    def v2(
        cls,
        meta_folder: str = METAFOLDER,
        timeline_path: str = DEFAULT_TIMELINE_PATH,
        history_path: str = DEFAULT_HISTORY_PATH,
    ) -> TimelineLayout:
        timeline_dir = posixpath.join(meta_folder, timeline_path)
        return cls(2, timeline_dir, posixpath.join(timeline_dir, history_path))

    @property
    def clustering_action(self) -> Action:
        """The action a pending clustering is written under (`replacecommit` on layout 1)."""
        return Action.CLUSTERING if self.version >= 2 else Action.REPLACE_COMMIT

    @property
    def keeps_timeline_apart(self) -> bool:
        """Whether the timeline has a folder of its own in the metafolder (layout 2,
        `hoodie.timeline.path`) rather than being the metafolder itself (layout 1)."""
        return self.version >= 2

    @property
    def names_completion_time(self) -> bool:
        """Whether a completed instant's file name carries its completion time (layout 2)."""
        return self.version >= 2

    @property
    def slices_logs_by_completion_time(self) -> bool:
        """Whether a log file's name holds its deltacommit, placed by completion time (layout 2), or
        the base instant of its slice (layout 1): `service.table.slicing`."""
        return self.version >= 2

    @property
    def archives_to_lsm(self) -> bool:
        """Whether archived instants go to the LSM history (layout 2, `TimelineArchiverV2`) or to the
        `archived/` log files of `HoodieArchivedMetaEntry` records (layout 1)."""
        return self.version >= 2

    @property
    def writes_avro_commit_metadata(self) -> bool:
        """Whether the service writes commit metadata as an Avro container (layout 2:
        `CommitMetadataSerDeV2`) or as JSON (layout 1)."""
        return self.version >= 2

    @property
    def plans_clustering_apart(self) -> bool:
        """Whether a pending clustering has its own `clustering` action (layout 2), so that a completed
        replacecommit's plan may be `<T>.clustering.requested`."""
        return self.clustering_action is Action.CLUSTERING

    def same_version_at(
        self,
        meta_folder: str,
        timeline_path: str = DEFAULT_TIMELINE_PATH,
        history_path: str = DEFAULT_HISTORY_PATH,
    ) -> TimelineLayout:
        """This layout version for another Hudi table whose metafolder is `meta_folder` (the metadata
        table, upgraded with its data table)."""
        if self.version >= 2:
            return TimelineLayout.v2(meta_folder, timeline_path, history_path)
        return TimelineLayout.v1(meta_folder)

    def is_instant_file_name(self, name: str) -> bool:
        return is_timeline_file_name(name)

    def parse_file_name(self, name: str) -> Instant:
        """The instant a timeline file names; CorruptTableError (naming the path) when it is not one."""
        try:
            return parse_instant_file_name(name, names_completion_time=self.names_completion_time)
        except CorruptTableError as exc:
            raise CorruptTableError(f"{posixpath.join(self.timeline_dir, name)}: {exc}") from None

    def commit_metadata_is_avro(self, instant: Instant) -> bool:
        """Whether the instant's commit metadata file is an Avro container (layout 2's requested,
        inflight and completed files) rather than JSON (layout 1, and layout 2's legacy completed
        names: `CommitMetadataSerDeV2` falls back to `CommitMetadataSerDeV1` for those only)."""
        legacy = instant.is_completed and instant.completion_time is None
        return self.writes_avro_commit_metadata and not legacy

    def instant_path(self, instant: Instant) -> str:
        """The file of `instant` in its state. A completed instant's name carries its completion time
        on layout 2 when known; without one it is a legacy name, which is read but never written."""
        return posixpath.join(self.timeline_dir, instant.file_name)


# Table version 6's layout (`.hoodie/`), for code that serves only such tables.
LAYOUT_1 = TimelineLayout.v1()
