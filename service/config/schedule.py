"""A served table's `clustering:`, `cleaning:` and `compaction:` sections: when the daemon runs each service.

These are the product's own settings, beside Hudi's `hoodie.*` triggers (which stay in force):
- clustering is also due when a partition's small files reach a count or a byte total
  (`small_file_count_trigger`, `small_file_bytes_trigger`), or when `max_interval_hours` passed since
  the last clustering and anything is eligible; `min_interval_minutes` spaces plans of one table;
- `max_bytes_per_run` caps the bytes one plan rewrites (whole groups, in plan order);
- `priority` orders tables waiting for a clustering slot (higher first, then expected benefit);
- `windows` hold execution outside maintenance windows (`service.config.windows`); clustering
  inherits `daemon.maintenance_windows` unless the table sets its own (`[]`: no window, any time);
- compaction serves merge-on-read tables only: `compaction.enabled` defaults to on for them and a
  copy-on-write table is never compacted (Java refuses too, `ScheduleCompactionActionExecutor`);
- `cleaning.trash_retention_hours` keeps a clean's files in the table's trash that long (opt-in);
- `repair` (opt-in) runs the guarded repair every `interval_hours` (`service.repair`);
- archival runs when Hudi's archiver would (`hoodie.keep.max.commits` and the rest of its bounds),
  on by default: writers that hand their services over (`hoodie.table.services.enabled=false`) no
  longer archive, and a writer that still does takes the same table lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from service.config.windows import MaintenanceWindow


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    # None: inherit (clustering: `daemon.maintenance_windows`; cleaning: any time); []: any time.
    windows: tuple[MaintenanceWindow, ...] | None = None
    # At least this often while anything is eligible, whatever the commit-count trigger says.
    max_interval_hours: float | None = Field(default=None, gt=0)

    @property
    def max_interval(self) -> timedelta | None:
        return None if self.max_interval_hours is None else timedelta(hours=self.max_interval_hours)


class ClusteringSchedule(_Section):
    # False: outside its windows a table is not even planned (a pending plan blocks writers' updates
    # to its file groups until it runs, so an operator may want plans only when they run at once).
    plan_outside_windows: bool = True
    max_bytes_per_run: int | None = Field(default=None, gt=0)
    small_file_count_trigger: int | None = Field(default=None, ge=1)
    small_file_bytes_trigger: int | None = Field(default=None, ge=1)
    min_interval_minutes: float = Field(default=0.0, ge=0)
    priority: int = 0

    def effective_windows(self, daemon_windows: Sequence[MaintenanceWindow]) -> tuple[MaintenanceWindow, ...]:
        return tuple(daemon_windows) if self.windows is None else self.windows

    @property
    def min_interval(self) -> timedelta:
        return timedelta(minutes=self.min_interval_minutes)

    @property
    def needs_small_files(self) -> bool:
        """Whether the trigger reads the file-system view (small-file counts), not only the timeline."""
        return (
            self.small_file_count_trigger is not None
            or self.small_file_bytes_trigger is not None
            or self.max_interval_hours is not None
        )


class CleaningSchedule(_Section):
    # Opt-in: a clean moves its files to the table's trash (`service.trash`) and they are deleted this
    # long after; `hudi-table-service clean --undo INSTANT` puts a clean's files back meanwhile.
    trash_retention_hours: float | None = Field(default=None, gt=0)

    def effective_windows(self) -> tuple[MaintenanceWindow, ...]:
        return self.windows or ()

    @property
    def trash_retention(self) -> timedelta | None:
        return None if self.trash_retention_hours is None else timedelta(hours=self.trash_retention_hours)


class ArchivalSchedule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True


class RepairSchedule(BaseModel):
    """`repair:` (opt-in): the daemon runs `hudi-table-service repair --execute` on the table every
    `interval_hours`: failed writes and expired clusterings rolled back, orphan files to the trash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    interval_hours: float = Field(default=24.0, gt=0)
    # None: the larger of 24 h and the heartbeat expiry (`service.repair.orphans.safety_age`).
    min_age_hours: float | None = Field(default=None, gt=0)
    trash_retention_hours: float = Field(default=7 * 24.0, gt=0)

    @property
    def interval(self) -> timedelta:
        return timedelta(hours=self.interval_hours)

    @property
    def trash_retention(self) -> timedelta:
        return timedelta(hours=self.trash_retention_hours)


class CompactionSchedule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # None: on for a MERGE_ON_READ table (Hudi's trigger, `hoodie.compact.inline.*`, decides when),
    # off for COPY_ON_WRITE. True on a copy-on-write table compacts nothing (said once, at INFO).
    enabled: bool | None = None

    @property
    def disabled(self) -> bool:
        """Explicitly turned off: the daemon adds no compaction job for the table."""
        return self.enabled is False
