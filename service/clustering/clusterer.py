"""One clustering pass over a table: the entry point the daemon's tick and the CLI both call.

Like `Cleaner.run()` for cleaning: Hudi's trigger (`clustering_due`) decides; a pending plan (ours or
a Java writer's) is executed before a new one is scheduled (`HoodieClusteringJob` in
scheduleAndExecute mode does the same), and a newly scheduled plan is executed in the same pass.
Our own pending plan whose execution failed `purge_after` times in a row is purged instead of
retried: a pending plan blocks writers' updates to its file groups (Hudi's default
`SparkRejectUpdateStrategy` fails them with `HoodieClusteringUpdateException`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, tzinfo

from service.clock import Clock, utc_now
from service.clustering.attempts import failed_attempts, is_our_plan
from service.clustering.orchestrator import (
    ClusteringResult,
    GroupRunner,
    ScheduleOutcome,
    decide_clustering,
    execute_clustering,
    schedule_clustering,
)
from service.clustering.preflight import check_index_kept_current
from service.clustering.purge import purge_pending_clustering
from service.config.hoodie import HoodieConfig
from service.config.schedule import ClusteringSchedule
from service.lock.base import TableLock
from service.table.heartbeat import HeartbeatSettings
from service.table.instant import Action
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.clustering.small_files import SmallFiles, small_files
from strategies.clustering.trigger import ClusteringStep, TriggerDecision, TriggerMode

log = logging.getLogger(__name__)


class ClusteringPassListener:
    """What a caller may observe during a pass (the daemon's metrics, the CLI's output); no-ops here."""

    def on_decision(self, timeline: Timeline, decision: TriggerDecision) -> None:
        """The trigger's decision, before any work (a long execution follows)."""

    def on_scheduled(self, outcome: ScheduleOutcome) -> None:
        """Scheduling ran: `outcome.instant_time` is None when nothing was written."""

    def on_purged(self, instant_time: str) -> None:
        """Our failing plan `instant_time` was purged."""


@dataclass(frozen=True)
class ClusteringPassResult:
    """What one pass did: the trigger's decision, the scheduling, the execution, a purge."""

    decision: TriggerDecision
    scheduled: ScheduleOutcome | None = None
    result: ClusteringResult | None = None
    purged: str | None = None
    held: bool = False  # execution was not allowed (outside a maintenance window)


@dataclass(frozen=True)
class ClusteringPassOptions:
    mode: TriggerMode = TriggerMode.ASYNC
    schedule: bool = True  # False: execute a pending plan only (the CLI's execute mode)
    purge_after: int | None = None  # purge our plan after this many failed attempts; None: never
    # The daemon's per-table `clustering:` section: its triggers, budget (None: Hudi's trigger only).
    policy: ClusteringSchedule | None = None
    execute: bool = True  # False: outside a maintenance window (a plan is still written if `schedule`)
    # Measure the small files before taking a slot, so the daemon's slots can rank waiting tables.
    rank_slots: bool = False


def _no_slot(_: SmallFiles | None) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


@dataclass
class Clusterer:
    """Runs clustering on one table; `run()` is one pass (what the CLI and a daemon tick call)."""

    table: HudiTable
    config: HoodieConfig
    lock: TableLock
    zone: tzinfo
    runner: GroupRunner
    options: ClusteringPassOptions = field(default_factory=ClusteringPassOptions)
    _: KW_ONLY
    now: Clock = utc_now
    # The daemon's cap on concurrent clusterings, held while the pass has work; it is given the
    # table's small files (when `options.rank_slots`) to rank the tables waiting for one.
    slot: Callable[[SmallFiles | None], AbstractContextManager[None]] = _no_slot
    listener: ClusteringPassListener = field(default_factory=ClusteringPassListener)

    def run(
        self, scheduled_at: datetime | None = None, instant_time: str | None = None
    ) -> ClusteringPassResult:
        """One pass; `scheduled_at` names a new plan's instant (default: now), `instant_time` picks
        the pending plan to execute instead of the oldest."""
        check_index_kept_current(self.table, self.config)  # before any plan, ours or Hudi's, runs
        timeline = self.table.load_timeline()
        now = scheduled_at or self.now()
        options = self.options
        decided = decide_clustering(
            self.table, timeline, self.config.clustering, options.mode, schedule=options.policy, now=now,
            zone=self.zone,
        )  # fmt: skip
        decision = decided.decision
        self.listener.on_decision(timeline, decision)
        if decision.step is ClusteringStep.WAIT:
            log.debug("table %s: %s", self.table.name, decision.reason)
            return ClusteringPassResult(decision)
        if not options.execute:
            # Held by a maintenance window: a new plan may still be written (it waits for the window).
            scheduled = None
            if decision.step is ClusteringStep.SCHEDULE and options.schedule:
                scheduled = self._schedule(now)
            return ClusteringPassResult(decision, scheduled, held=True)
        small = decided.small_files
        if options.rank_slots and small is None:
            # A pending plan's own slices count: executing it is what the slot is for.
            views = self.table.iter_views(timeline)
            local = now.astimezone(self.zone)
            small = small_files(views, self.config.clustering, local, include_pending_clustering=True)
        with self.slot(small):
            target = instant_time or decision.pending_instant
            scheduled = None
            if (
                decision.step is ClusteringStep.EXECUTE_PENDING
                and target is not None
                and self._purge_if_failing(target)
            ):
                return ClusteringPassResult(decision, purged=target)
            if decision.step is ClusteringStep.SCHEDULE and options.schedule:
                scheduled = self._schedule(scheduled_at or self.now())  # after waiting for the slot
                target = scheduled.instant_time
            if target is None:
                return ClusteringPassResult(decision, scheduled)
            result = self._execute(target)
        return ClusteringPassResult(decision, scheduled, result)

    def _schedule(self, now: datetime) -> ScheduleOutcome:
        scheduled = schedule_clustering(
            self.table, self.config, self.lock, now=now, zone=self.zone, mode=self.options.mode,
            schedule=self.options.policy,
        )  # fmt: skip
        self.listener.on_scheduled(scheduled)
        return scheduled

    def _execute(self, instant_time: str) -> ClusteringResult:
        try:
            return execute_clustering(
                self.table, instant_time, self.config, self.runner, self.lock, zone=self.zone, now=self.now
            )
        except Exception:
            # The attempt that just failed may be the last one allowed: purge now, so writers are
            # unblocked without waiting for the next pass (the failure is still raised).
            try:
                self._purge_if_failing(instant_time)
            except Exception as purge_error:
                log.warning(
                    "table %s: purging clustering %s failed: %s: %s",
                    self.table.name, instant_time, type(purge_error).__name__, purge_error,
                )  # fmt: skip
            raise

    def _purge_if_failing(self, instant_time: str) -> bool:
        """Purge our pending plan `instant_time` once its execution failed `purge_after` times in a
        row; plans scheduled by Hudi's writers are theirs and are left alone."""
        limit = self.options.purge_after
        if limit is None:
            return False
        timeline = self.table.load_timeline()
        instant = timeline.find(instant_time, Action.REPLACE_COMMIT)
        if instant is None or instant.is_completed or not is_our_plan(self.table, instant):
            return False
        failed = failed_attempts(self.table, timeline, instant_time)
        if failed < limit:
            return False
        purge_pending_clustering(
            self.table, self.lock, zone=self.zone, now=self.now(), instant_time=instant_time,
            heartbeat_settings=HeartbeatSettings.from_config(self.config),
        )  # fmt: skip
        self.listener.on_purged(instant_time)
        log.error(
            "table %s: purged clustering plan %s: its execution failed %d times in a row "
            "(daemon.failures.purge_after=%d); writers may update its file groups again",
            self.table.name, instant_time, failed, limit,
        )  # fmt: skip
        return True
