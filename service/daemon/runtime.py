"""A served table's runtime state: its config entry, the opened table and lock, refusal and failures.

A table a service must not touch (`TableConfig.check_service_supported`: clustering of a
merge-on-read table whose payload class or record merger the merged read does not reproduce) is
*refused* for it, not failing: `open` records a whole-table refusal with the
`hoodie.properties` stamp it was read from, and the table is re-evaluated when that file or its
config entry changes; `refused_services` names the services refused one by one.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from enum import StrEnum
from typing import Any

from service.archival.report import LastArchived
from service.config.daemon import ZONE_SETTINGS, TableEntry
from service.config.hoodie import TimelineTimezone
from service.daemon.file_sizes import FileSizes
from service.errors import NeedsConfigurationError, TableServicesRefusedError, VolumeBreakerError
from service.lock import create_lock
from service.lock.base import TableLock
from service.lock.kazoo_pool import KazooClientPool
from service.table.layout import DEFAULT_TIMELINE_PATH, METAFOLDER
from service.table.properties import PROPERTIES_FILE, TableServiceKind
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import InstantFiles
from strategies.blockers import Blocker

log = logging.getLogger(__name__)


class TableService(StrEnum):
    CLUSTERING = "clustering"
    CLEANING = "cleaning"
    COMPACTION = "compaction"
    ARCHIVAL = "archival"
    REPAIR = "repair"  # opt-in (`repair:`): `service.repair`


class Outcome(StrEnum):
    DONE = "done"  # the tick ran (whether or not there was work)
    FAILED = "failed"
    BACKING_OFF = "backing_off"
    QUARANTINED = "quarantined"
    REFUSED = "refused"  # the services must not touch this table (yet); not a failure
    # The volume breaker holds the service's plan until a person approves it; not a failure.
    ON_HOLD = "on_hold"
    STOPPING = "stopping"
    OWNED_ELSEWHERE = "owned_elsewhere"  # another executor owns the pending instant; skipped
    # No execution starts until a maintenance window opens (a new plan may have been written).
    OUTSIDE_WINDOW = "outside_window"
    # The service does not apply to the table's type (compaction of a copy-on-write table).
    NOT_APPLICABLE = "not_applicable"
    # Another replica holds the table (`daemon.cluster`): the table is not touched.
    NOT_HELD = "not_held"


class Phase(StrEnum):
    """What a running tick is doing."""

    PLANNING = "planning"
    EXECUTING = "executing"
    COMMITTING = "committing"


@dataclass(frozen=True)
class FailureRecord:
    at: datetime
    service: TableService
    error: str


PropertiesStamp = tuple[str, int, int | None]


@dataclass(frozen=True)
class Refusal:
    """Why the services refuse a table, and the `hoodie.properties` (size, mtime) it was read from."""

    reason: str
    properties: PropertiesStamp
    # The setting of ours that would lift it (`NeedsConfigurationError.setting`); None: the table
    # itself (its hoodie.properties) must change.
    setting: str | None = None
    kind: str = "table_feature"  # `TableServicesRefusedError.reason`: the metric's reason label


@dataclass
class TableRuntime:
    """A served table: its config entry, the opened table and lock (lazily), and its failure state."""

    entry: TableEntry
    lock_provider: str
    history_size: int = 10
    table: HudiTable | None = None
    lock: TableLock | None = None
    zone: tzinfo | None = None
    consecutive_failures: dict[TableService, int] = field(default_factory=dict)
    retry_at: dict[TableService, datetime] = field(default_factory=dict)
    errors: deque[FailureRecord] = field(init=False)
    quarantined_at_timeline: tuple[tuple[str, int], ...] | None = None
    refusal: Refusal | None = None
    # The services refused one by one, and why (a `NeedsConfigurationError` names its setting).
    service_refusals: dict[TableService, TableServicesRefusedError] = field(default_factory=dict)
    # The instant another executor owns, per service, once logged: later ticks skipping it log at DEBUG.
    owned_elsewhere: dict[TableService, str] = field(default_factory=dict)
    # A copy-on-write table with `compaction.enabled: true` is said once, not at every tick.
    compaction_not_applicable_logged: bool = False
    zone_logged: bool = False  # the zone in force is said once, when the table is first opened
    # The daemon's own ZooKeeper clients: closed by its stop, so no lock opens one after it.
    kazoo_pool: KazooClientPool | None = field(default=None, repr=False)
    guard: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # What the status page shows, as the last tick of each service left it (`service.daemon.status`).
    phase: dict[TableService, Phase] = field(default_factory=dict)  # absent: no tick running
    due: dict[TableService, bool] = field(default_factory=dict)
    commits_since: dict[TableService, int] = field(default_factory=dict)
    pending: dict[TableService, tuple[str, ...]] = field(default_factory=dict)  # instant times
    # A service the volume breaker holds (cleaning): the held plan as `clean --json` shows it, the
    # error to raise again, and what it was held on (the timeline's files, the approvals): a tick that
    # finds both unchanged holds without planning again.
    on_hold: dict[TableService, dict[str, Any]] = field(default_factory=dict)
    on_hold_error: VolumeBreakerError | None = None
    on_hold_signature: tuple[object, ...] | None = None
    # What holds the table's services back (`strategies.blockers`), when last looked at (monotonic
    # seconds), and the `blocked_seconds` series set for it.
    blockers: list[Blocker] = field(default_factory=list)
    blockers_at: float | None = None
    blocked_series: set[tuple[str, str]] = field(default_factory=set)
    # What the last archival tick saw: the active timeline's length and what holds the window back.
    archival: dict[str, Any] | None = None
    # The archived timeline's files as this replica last left them (None: not looked at since it
    # holds the table): files beyond these were written by another archiver.
    archive_files_seen: frozenset[str] | None = None
    # The archived timeline's newest file when this replica first looked, and after its latest run
    # that archived (the page's "last archived ... by").
    last_archived_before: LastArchived | None = None
    last_archived_ours: LastArchived | None = None
    # The active timeline's files when archival last found nothing to do (None: look again).
    archival_timeline: InstantFiles | None = None
    repaired_at: datetime | None = None  # when this replica last ran the table's repair
    file_sizes: FileSizes | None = None
    file_sizes_measured_at: float = 0.0  # time.monotonic() of the measurement
    history_loaded: bool = False  # the run history was rebuilt from the timeline
    rollbacks_seen: str = ""  # the newest completed rollback instant recorded in the run history

    def __post_init__(self) -> None:
        self.errors = deque(maxlen=self.history_size)

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def quarantined(self) -> bool:
        return self.quarantined_at_timeline is not None

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @property
    def refused_services(self) -> set[TableService]:
        return set(self.service_refusals.copy())  # a tick may add one while a status request reads

    def service_fix(self, service: TableService) -> str | None:
        """The setting of ours that lifts `service`'s own refusal; None if the table must change."""
        refusal = self.service_refusals.get(service)
        return refusal.setting if isinstance(refusal, NeedsConfigurationError) else None

    def fixes(self) -> list[str]:
        """The settings of ours that lift the refusals, table-wide first."""
        table = [self.refusal.setting] if self.refusal is not None and self.refusal.setting else []
        return table + [f for s in sorted(self.refused_services) if (f := self.service_fix(s)) is not None]

    @property
    def needs_configuration(self) -> bool:
        """Refused, and every refusal is lifted by a setting of ours (none by the table changing)."""
        if self.refusal is None and not self.refused_services:
            return False
        table_ok = self.refusal is None or self.refusal.setting is not None
        return table_ok and all(self.service_fix(s) is not None for s in self.refused_services)

    def open(self) -> tuple[HudiTable, TableLock, tzinfo]:
        """The table, its lock and zone; TableServicesRefusedError (logged once) for a refused table."""
        with self.guard:
            if self.refusal is not None:
                raise TableServicesRefusedError(self.refusal.reason, reason=self.refusal.kind)
            if self.table is None or self.lock is None or self.zone is None:
                settings = self.entry.settings
                stamp = self.properties_stamp()  # before reading: a later change is seen as one
                table = HudiTable.open(settings.base_path, settings.storage_options)
                try:
                    table.check_service_supported(TableServiceKind.CLEANING)
                    zone = table.timeline_zone(self.entry.zone, ZONE_SETTINGS)
                except TableServicesRefusedError as exc:
                    setting = exc.setting if isinstance(exc, NeedsConfigurationError) else None
                    self.refusal = Refusal(str(exc), stamp, setting, exc.reason)
                    log.warning(
                        "table %s: refused until hoodie.properties or its config entry changes: %s",
                        self.name, exc,
                    )  # fmt: skip
                    raise
                if not self.zone_logged:
                    self.zone_logged = True
                    log.info("table %s: instant times in %s", self.name, self._zone_in_force(table))
                props = {**self.entry.hoodie.effective(), "hoodie.base.path": table.base_uri}
                self.table, self.lock, self.zone = (
                    table,
                    create_lock(self.lock_provider, table.name, props, pool=self.kazoo_pool),
                    zone,
                )
            return self.table, self.lock, self.zone

    def _zone_in_force(self, table: HudiTable) -> str:
        if table.config.timeline_timezone is TimelineTimezone.UTC:
            return "UTC (hoodie.table.timeline.timezone=UTC)"
        choice = self.entry.zone_choice
        assert choice is not None  # `timeline_zone` refused the table otherwise
        return f"{choice.zone.key} (hoodie.table.timeline.timezone=LOCAL; from {choice.source})"

    def properties_stamp(self) -> PropertiesStamp:
        """`hoodie.properties`'s (size, mtime): one stat, cheaper than a `.hoodie` listing. Hudi
        rewrites the file (`HoodieTableConfig.modify`: backup, delete, write), so its mtime moves."""
        settings = self.entry.settings
        try:
            storage = Storage.for_base_uri(settings.base_path, settings.storage_options)
            status = storage.status(PROPERTIES_FILE)
        except Exception as exc:  # unreachable: stays as it is until it answers
            return (f"<unreadable {type(exc).__name__}>", 0, None)
        return ("<absent>", 0, None) if status is None else ("", status.size, status.mtime_ns)

    def lift_refusal(self, refusal: Refusal) -> None:
        """Check the table again on the next open; a no-op if the other service's tick already did
        (and perhaps refused it anew, which must stand)."""
        with self.guard:
            if self.refusal is refusal:
                self.refusal = None

    def forget_table(self) -> None:
        """Reopen on the next tick: hoodie.properties may have been what failed.

        The lock is not released here: the other service's tick may hold it (every use is a `with`).
        """
        with self.guard:
            self.table = self.lock = self.zone = None

    def timeline_signature(self) -> tuple[tuple[str, int], ...]:
        """The timeline folder's files (path, size): any new, completed or removed instant changes it."""
        settings = self.entry.settings
        try:
            storage = Storage.for_base_uri(settings.base_path, settings.storage_options)
            entries = storage.list_dir(METAFOLDER)
            # Layout 2 keeps the instants in `.hoodie/timeline/` (`hoodie.timeline.path`'s default).
            for entry in [e for e in entries if e.is_dir and e.name == DEFAULT_TIMELINE_PATH]:
                entries += storage.list_dir(entry.path)
            return tuple(sorted((s.path, s.size) for s in entries if not s.is_dir))
        except Exception as exc:  # an unreachable table stays quarantined
            return (("<unlistable>", 0), (type(exc).__name__, 0))
