"""One tick of one table service, its outcome, and the failure bookkeeping around it.

- cleaning: `Cleaner.run()` (checks Hudi's trigger itself and finishes pending clean plans first);
- clustering: `Clusterer.run()` with Hudi's ASYNC trigger and the table's `clustering:` section
  (data triggers, budget): a pending plan (ours or a Java writer's) is executed before a new one is
  scheduled, and a newly scheduled plan is executed in the same tick;
- compaction (merge-on-read tables only): the earliest pending compaction (ours or a Java writer's)
  is executed (`execute_compaction`: an inflight attempt whose heartbeat lives is another executor's,
  `OWNED_ELSEWHERE`); with none pending, Hudi's trigger (`hoodie.compact.inline.trigger.strategy`)
  decides whether one is scheduled, and a scheduled plan is executed in the same tick. Scheduling
  plans under the table lock, as clustering does, so neither planner sees the other's plan half-written
  (each leaves out file groups in the other's pending plans). A copy-on-write table is `NOT_APPLICABLE`.
Outside the table's maintenance windows no execution starts: the tick is `OUTSIDE_WINDOW`, after
writing a new plan if `clustering.plan_outside_windows` (cleaning, with `cleaning.windows`, does
nothing). Slots (`PrioritySlots`) cap concurrent clusterings and cleans across tables, so a slow
table delays only work of its own kind; a freed clustering slot goes to the waiting table with the
highest `clustering.priority`, then the most small-file bytes, then the oldest small file.
Every exception of a tick is caught, logged once with the table, counted, and retried with capped
exponential backoff; after `quarantine_after` consecutive failures the table is
quarantined until its config entry or its timeline (the `.hoodie` listing) changes. A refused table
(`TableRuntime.open`) is not failing: no failure counted, no quarantine; each tick only stats
`hoodie.properties`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from service.archival import archival_window, archived_timeline_files
from service.archival.archiver import archive, merges_small_files
from service.archival.report import held_by_json, last_archived
from service.blockers import table_blockers
from service.cleaning import Cleaner, CleanOptions
from service.cleaning.approvals import approved_digests
from service.cleaning.guard import held_json
from service.cleaning.snapshot import read_last_clean
from service.clock import Clock
from service.clustering.clusterer import Clusterer, ClusteringPassListener, ClusteringPassOptions
from service.clustering.orchestrator import ClusteringResult, ScheduleOutcome
from service.compaction.executor import execute_compaction, pending_compactions
from service.compaction.scheduler import schedule_compaction
from service.config.daemon import DaemonSettings
from service.config.windows import describe, inside_any
from service.daemon import history
from service.daemon.file_sizes import FileSizes
from service.daemon.history import FileStats, RunHistory, RunRecord
from service.daemon.run_log import cleaning_outcome, clustering_outcome, compaction_outcome
from service.daemon.runtime import FailureRecord, Outcome, Phase, TableRuntime, TableService
from service.daemon.slots import PrioritySlots, SlotClaim
from service.daemon.tick_gate import TickGate
from service.errors import (
    DeleteFailedError,
    InstantOwnedError,
    TableServicesRefusedError,
    UnsupportedMergeError,
    VolumeBreakerError,
)
from service.executor import SparkExecutor
from service.executor.clustering_job import GroupJob
from service.lock.base import TableLock
from service.metrics import ServiceMetrics
from service.repair.orphans import safety_age
from service.repair.run import repair_table
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action
from service.table.log_format.merge import MergeConfig
from service.table.properties import TableServiceKind, TableType
from service.table.table import HudiTable
from service.table.timeline import Timeline, parse_instant_time
from strategies.archival import ArchivalWindow
from strategies.cleaning.trigger import commits_since_last_clean
from strategies.clustering.small_files import SmallFiles
from strategies.clustering.trigger import (
    ClusteringStep,
    TriggerDecision,
    TriggerMode,
    clustering_due,
    pending_clustering_instants,
)

log = logging.getLogger(__name__)

BLOCKERS_REFRESH_SECONDS = 60.0  # how often a table's blockers are looked at again

# How stale the measured file sizes (status page, small-file gauges) may get while writers commit.
FILE_SIZES_MAX_AGE_SECONDS = 300.0


@dataclass
class TableTicker:
    """Runs ticks for the daemon: reads its current settings, slots and runtimes (all shared with
    it, so a config reload takes effect on the next tick)."""

    metrics: ServiceMetrics
    executor: SparkExecutor
    clock: Clock
    settings: Callable[[], DaemonSettings]
    slots: Mapping[TableService, PrioritySlots]
    runtimes: Mapping[str, TableRuntime]
    stopping: threading.Event
    history: RunHistory
    # Caps the ticks doing their own work at once; `Daemon._job` enters it, `_slot` leaves it.
    gate: TickGate
    # Whether this replica holds the table now (`Membership.holds`); always, without `daemon.cluster`.
    holds: Callable[[str], bool] = lambda table: True

    def run_iteration(self, runtime: TableRuntime, service: TableService, now: datetime) -> Outcome:
        """One tick of one table service; never raises (failures are logged, counted and backed off)."""
        if self.stopping.is_set():
            return Outcome.STOPPING
        if not self.holds(runtime.name):
            runtime.archive_files_seen = None  # whoever holds it archives meanwhile
            runtime.archival_timeline = None
            return Outcome.NOT_HELD  # another replica serves it: not even a stat of hoodie.properties
        refusal = runtime.refusal
        if refusal is not None:
            if runtime.properties_stamp() == refusal.properties:
                self.metrics.set_refused(runtime.name, str(service), refusal.kind)
                return Outcome.REFUSED
            log.info("table %s: hoodie.properties changed; checking again whether it is served", runtime.name)
            runtime.lift_refusal(refusal)
        if runtime.quarantined:
            if runtime.timeline_signature() == runtime.quarantined_at_timeline:
                return Outcome.QUARANTINED
            log.info("table %s: timeline changed; lifting its quarantine", runtime.name)
            self._lift_quarantine(runtime)
        retry_at = runtime.retry_at.get(service)
        if retry_at is not None and now < retry_at:
            return Outcome.BACKING_OFF
        refused_before = runtime.refusal
        try:
            self._load_history(runtime)
            self._watch_blockers(runtime)
            if service is TableService.CLEANING:
                outcome = self._clean(runtime, now)
            elif service is TableService.COMPACTION:
                outcome = self._compact(runtime, now)
            elif service is TableService.ARCHIVAL:
                outcome = self._archive(runtime)
            elif service is TableService.REPAIR:
                outcome = self._repair(runtime, now)
            else:
                outcome = self._cluster(runtime, now)
        except TableServicesRefusedError as exc:
            newly = False
            if runtime.refusal is None and service not in runtime.service_refusals:  # one service only
                runtime.service_refusals[service] = exc
                log.warning("table %s: %s refused: %s", runtime.name, service, exc)
                newly = True
            elif runtime.refusal is not None and runtime.refusal is not refused_before:
                newly = True
            if newly:  # recorded once per refusal, not at every tick
                self.history.record(
                    RunRecord(runtime.name, str(service), "refused", started=now, ended=now, reason=str(exc))
                )
            self.metrics.set_refused(runtime.name, str(service), exc.reason)
            return Outcome.REFUSED
        except VolumeBreakerError as exc:
            self._hold(runtime, service, now, exc)
            return Outcome.ON_HOLD
        except _NotHeldError:
            log.info(
                "table %s: %s not started: this replica no longer holds the table", runtime.name, service
            )
            return Outcome.NOT_HELD
        except InstantOwnedError as exc:
            # Another executor runs that instant (its heartbeat is alive): not a failure of ours, so no
            # backoff and no quarantine; the next tick looks again.
            self.metrics.instant_owned_elsewhere.labels(runtime.name, service).inc()
            # Said once per instant: a long run elsewhere is skipped at every poll, as it should be.
            first = runtime.owned_elsewhere.get(service) != exc.instant
            runtime.owned_elsewhere[service] = exc.instant
            log.log(
                logging.INFO if first else logging.DEBUG,
                "table %s: %s skipped this tick: %s", runtime.name, service, exc,
            )  # fmt: skip
            return Outcome.OWNED_ELSEWHERE
        except Exception as exc:
            if self.stopping.is_set() and isinstance(exc, InterruptedError):
                return Outcome.STOPPING
            runtime.on_hold.pop(service, None)
            self._record_failure(runtime, service, now, exc)
            self.metrics.set_refused(runtime.name, str(service), None)  # failing now, not refused
            return Outcome.FAILED
        finally:
            runtime.phase.pop(service, None)
        runtime.on_hold.pop(service, None)
        if outcome is Outcome.NOT_APPLICABLE:
            return outcome  # nothing ran: no success, no series for a service the table does not have
        self.metrics.set_refused(runtime.name, str(service), None)
        runtime.consecutive_failures.pop(service, None)
        runtime.retry_at.pop(service, None)
        runtime.owned_elsewhere.pop(service, None)
        self.metrics.last_success_timestamp_seconds.labels(runtime.name, service).set(time.time())
        self.metrics.outside_window.labels(runtime.name, service).set(int(outcome is Outcome.OUTSIDE_WINDOW))
        return outcome

    def _clean(self, runtime: TableRuntime, now: datetime) -> Outcome:
        section = runtime.entry.settings.cleaning
        windows = section.effective_windows()
        if windows and not inside_any(windows, now):
            log.debug(
                "table %s: cleaning waits for a maintenance window (%s)", runtime.name, describe(windows)
            )
            return Outcome.OUTSIDE_WINDOW
        table, lock, zone = runtime.open()
        held = runtime.on_hold_error if runtime.on_hold.get(TableService.CLEANING) else None
        # Held on this timeline and these approvals: the same plan would be held again.
        if held is not None and runtime.on_hold_signature == self._hold_signature(runtime, table):
            raise held
        options = CleanOptions(
            max_delete_fraction=self.settings().deletion.max_delete_fraction,
            max_interval=section.max_interval,
            trash_retention=section.trash_retention,
        )
        self._observe_lock(runtime.name, lock)
        name = runtime.name
        try:
            with self._slot(TableService.CLEANING, SlotClaim(runtime.name)):
                # Deciding whether a clean is due is planning; deleting a clean's files is executing.
                runtime.phase[TableService.CLEANING] = Phase.PLANNING

                def executing() -> None:
                    runtime.phase[TableService.CLEANING] = Phase.EXECUTING

                cleaner = Cleaner(
                    table, runtime.entry.hoodie, lock, zone, options, now=self.clock, on_execute=executing
                )
                result = cleaner.run()
        except (InstantOwnedError, DeleteFailedError):
            # The run stopped at a clean that stays pending (another executor's, or its deletes failed).
            self._pending_cleans(name, table.load_timeline())
            raise
        if result.cleans:
            log.info("%s", cleaning_outcome(name, result))
            self.metrics.run_duration_seconds.labels(name, TableService.CLEANING).observe(
                result.duration_seconds
            )
            self.metrics.deleted_files.labels(name).inc(result.files_deleted)
            self.metrics.deleted_bytes.labels(name).inc(result.bytes_deleted)
            ours = [c.instant_time for c in result.cleans if not c.completed_by_other_writer]
            if ours:
                self._completed(name, TableService.CLEANING, max(ours), zone)
            ended = self.clock()
            for clean in result.cleans:
                self.history.record(
                    RunRecord(
                        name, history.CLEANING, "completed", clean.instant_time,
                        started=ended - timedelta(seconds=clean.duration_seconds), ended=ended,
                        reason="completed by another writer" if clean.completed_by_other_writer else "",
                        partitions=tuple(p.partition_path for p in clean.partitions),
                        files_deleted=clean.files_deleted + clean.files_already_gone,
                        bytes_deleted=clean.bytes_deleted,
                        earliest_retained=clean.earliest_commit_to_retain or None,
                    )
                )  # fmt: skip
        since = result.commits_since_last_clean
        if since is None:  # the run cleaned (or looked at a pending clean): count on a fresh timeline
            timeline = table.load_timeline()
            since = commits_since_last_clean(timeline, read_last_clean(table, timeline))
            self._pending_cleans(name, timeline)
            runtime.pending[TableService.CLEANING] = tuple(
                i.timestamp for i in timeline.by_actions([Action.CLEAN]).pending()
            )
        else:  # the run found no clean due, so none pending either (`Cleaner.run`)
            timeline = table.recent_timeline()  # what the run read: an idle tick lists `.hoodie` once
            self.metrics.pending_clean_plans.labels(name).set(0)
            runtime.pending[TableService.CLEANING] = ()
        # Due while a clean plan is left pending (the next tick finishes it); a finished clean is not.
        runtime.due[TableService.CLEANING] = bool(runtime.pending[TableService.CLEANING])
        runtime.commits_since[TableService.CLEANING] = since
        self.metrics.commits_since_last_clean.labels(name).set(since)
        self._after_tick(runtime, table, timeline, zone, worked=bool(result.cleans))
        return Outcome.DONE

    def _watch_blockers(self, runtime: TableRuntime) -> None:
        """What holds the table back, looked at again once `BLOCKERS_REFRESH_SECONDS` passed (a timeline
        load, the heartbeats of old pending instants, the last clean, the metadata table's timeline);
        `blocked_seconds` follows at every tick. A table too broken to look at is for its services'
        own ticks to report."""
        now = self.clock()
        if runtime.blockers_at is None or time.monotonic() - runtime.blockers_at >= BLOCKERS_REFRESH_SECONDS:
            runtime.blockers_at = time.monotonic()
            try:
                table, _, zone = runtime.open()
                runtime.blockers = table_blockers(table, runtime.entry.hoodie, zone, now)
            except Exception as exc:
                log.debug("table %s: blockers not looked at: %s", runtime.name, exc)
                runtime.blockers = []
        ages: dict[tuple[str, str], float] = {}
        for blocker in runtime.blockers:
            age = blocker.age_seconds(now) or 0.0
            for service in blocker.services:
                key = (service, blocker.kind.value)
                ages[key] = max(ages.get(key, 0.0), age)
        for service, kind in runtime.blocked_series - set(ages):
            self.metrics.blocked_seconds.remove(runtime.name, service, kind)
        for (service, kind), age in ages.items():
            self.metrics.blocked_seconds.labels(runtime.name, service, kind).set(age)
        runtime.blocked_series = set(ages)

    def _hold(
        self, runtime: TableRuntime, service: TableService, now: datetime, exc: VolumeBreakerError
    ) -> None:
        """The volume breaker holds `service`'s plan: a state with its counts and the command that
        approves that plan once, not a failure (no backoff, no quarantine); the table's other services
        go on. Said and recorded once per plan."""
        first = (runtime.on_hold.get(service) or {}).get("digest") != exc.digest
        runtime.on_hold[service] = held_json(exc)
        if runtime.on_hold_error is not exc:
            runtime.on_hold_error = exc
            table, _, _ = runtime.open()
            runtime.on_hold_signature = self._hold_signature(runtime, table)
        self.metrics.set_refused(runtime.name, str(service), "volume_breaker")
        if first:
            log.warning("table %s: %s on hold: %s", runtime.name, service, exc)
            self.history.record(
                RunRecord(runtime.name, str(service), "on hold", started=now, ended=now, reason=str(exc))
            )

    @staticmethod
    def _hold_signature(runtime: TableRuntime, table: HudiTable) -> tuple[object, ...]:
        return (runtime.timeline_signature(), approved_digests(table.storage))

    def _archive(self, runtime: TableRuntime) -> Outcome:
        """Archive what Hudi's archiver would archive now. The window is computed first without the
        lock (a table with nothing to archive costs one timeline load); `archive` computes it again
        under the lock before it writes anything."""
        table, lock, zone = runtime.open()
        name, config = runtime.name, runtime.entry.hoodie
        runtime.phase[TableService.ARCHIVAL] = Phase.PLANNING
        timeline = table.load_timeline()
        previous = runtime.archival_timeline  # set only by a look that ended well
        if previous == timeline.files:
            # Nothing committed, cleaned or archived since the last look: the window and the archive
            # are as they were, so an idle tick costs the one `.hoodie` listing every service's costs.
            return Outcome.DONE
        # Only an archival removes completed instant files (a rollback removes a failed attempt's
        # pending ones): the archive is looked at for another archiver's files only then.
        gone = timeline.files.names() if previous is None else previous.names() - timeline.files.names()
        if previous is None or any(table.layout.parse_file_name(n).is_completed for n in gone):
            self._check_no_other_archiver(runtime, table)
        window = archival_window(table, config, zone, timeline)
        self._archival_seen(runtime, len(timeline), window)
        if not window.instants and not merges_small_files(table, config):
            runtime.archival_timeline = timeline.files
            return Outcome.DONE
        self._observe_lock(name, lock)
        runtime.phase[TableService.ARCHIVAL] = Phase.EXECUTING
        started = self.clock()
        result = archive(table, config, lock, zone)
        ended = self.clock()
        archived = result.archived
        if archived:
            log.info(
                "table %s: archived %d instants (%s to %s) into %s", name, len(archived),
                archived[0].timestamp, archived[-1].timestamp, result.data_file or "the existing archive",
            )  # fmt: skip
            self.metrics.archived_instants.labels(name).inc(len(archived))
            self.metrics.run_duration_seconds.labels(name, TableService.ARCHIVAL).observe(
                (ended - started).total_seconds()
            )
            self.history.record(
                RunRecord(
                    name, str(TableService.ARCHIVAL), "archived", max(i.timestamp for i in archived),
                    started=started, ended=ended,
                    reason=f"{len(archived)} instants, {result.files_deleted} active timeline files",
                )
            )  # fmt: skip
        runtime.archive_files_seen = frozenset(archived_timeline_files(table))
        runtime.last_archived_ours = last_archived(table) if archived else runtime.last_archived_ours
        after = table.load_timeline()
        self._archival_seen(runtime, len(after), archival_window(table, config, zone, after))
        runtime.archival_timeline = after.files
        return Outcome.DONE

    def _repair(self, runtime: TableRuntime, now: datetime) -> Outcome:
        """The table's guarded repair (`service.repair.run`), executed once `repair.interval_hours`
        passed since this replica last ran it (a replica taking the table over runs it at once: every
        step is safe to repeat). What it rolled back and moved is in the run history and the log."""
        section = runtime.entry.settings.repair
        if not section.enabled:
            return Outcome.DONE  # opt-in: a table that did not ask is never repaired
        if runtime.repaired_at is not None and now - runtime.repaired_at < section.interval:
            return Outcome.DONE
        table, lock, zone = runtime.open()
        config = runtime.entry.hoodie
        self._observe_lock(runtime.name, lock)
        runtime.phase[TableService.REPAIR] = Phase.EXECUTING
        started = self.clock()
        report = repair_table(
            table, config, lock, zone, self.clock,
            execute=True,
            min_age=safety_age(config, section.min_age_hours),
            trash_retention=section.trash_retention,
        )  # fmt: skip
        ended = self.clock()
        runtime.repaired_at = now
        self.metrics.run_duration_seconds.labels(runtime.name, TableService.REPAIR).observe(
            (ended - started).total_seconds()
        )
        self.metrics.orphans_moved.labels(runtime.name).inc(report.moved)
        if report.moved or report.rolled_back or report.settled:
            what = (
                f"{len(report.rolled_back)} rolled back ({', '.join(report.rolled_back) or 'none'}); "
                f"{report.moved} orphan files to trash run {report.run or '-'}"
            )
            log.info("table %s: repaired: %s", runtime.name, what)
            self.history.record(
                RunRecord(runtime.name, str(TableService.REPAIR), "repaired", report.run,
                          started=started, ended=ended, reason=what)
            )  # fmt: skip
        return Outcome.DONE

    def _check_no_other_archiver(self, runtime: TableRuntime, table: HudiTable) -> None:
        """Stand down where the writers still archive: archived files appeared that no run of ours
        wrote. Hudi's archiver takes the table lock only when the writer has a lock provider
        (`HoodieTimelineArchiver.archiveIfRequired` through `TransactionManager`), so ours cannot
        rule out a run interleaved with theirs; the writers keep the job. What was there before this
        replica first looked (an archive written before the hand-over) does not count."""
        files = frozenset(archived_timeline_files(table))
        if runtime.archive_files_seen is None:
            runtime.archive_files_seen = files
            runtime.last_archived_before = last_archived(table)
        foreign = sorted(files - runtime.archive_files_seen)
        if foreign:
            raise TableServicesRefusedError(
                f"table {runtime.name!r} at {table.base_uri}: its writers archive it "
                f"({', '.join(foreign[:3])} appeared in the archived timeline, written by no run of "
                "this daemon); two archivers must not interleave, so archival is left to them",
                reason="writers_archive",
                fix="turn archival off in the writers (hoodie.table.services.enabled=false, or "
                "hoodie.archive.automatic=false), then restart the daemon or change the table's entry",
            )

    def _archival_seen(self, runtime: TableRuntime, active: int, window: ArchivalWindow) -> None:
        """The page's and the gauges' view of archival: the active timeline's length, the commits the
        trigger counts, and what holds the window back."""
        runtime.commits_since[TableService.ARCHIVAL] = window.commits
        runtime.due[TableService.ARCHIVAL] = bool(window.instants)
        runtime.archival = {
            "active_instants": active,
            "would_archive": len(window.instants),
            "held_by": held_by_json(window),
            "last_archived": _last_archived_json(runtime),
        }
        self.metrics.active_timeline_instants.labels(runtime.name).set(active)

    def _pending_cleans(self, name: str, timeline: Timeline) -> None:
        """Hudi's `clean.pendingCleanInstantCount` (after 0.15): clean instants requested or inflight."""
        self.metrics.pending_clean_plans.labels(name).set(len(timeline.by_actions([Action.CLEAN]).pending()))

    def _compact(self, runtime: TableRuntime, now: datetime) -> Outcome:
        table, lock, zone = runtime.open()
        name = runtime.name
        if table.config.table_type is not TableType.MERGE_ON_READ:
            # Only merge-on-read tables have log files to compact (`check_service_supported`).
            level = logging.DEBUG
            if runtime.entry.settings.compaction.enabled and not runtime.compaction_not_applicable_logged:
                runtime.compaction_not_applicable_logged, level = True, logging.INFO
            log.log(level, "table %s: %s; it is not compacted", name, table.config.table_type.value)
            return Outcome.NOT_APPLICABLE
        table.check_service_supported(TableServiceKind.COMPACTION)  # the table version's, among others
        try:
            # The executor merges each slice as Hudi's readers do; a merge it does not reproduce is
            # refused before a plan is written (a Java writer would execute it, we could not).
            MergeConfig.from_table_properties(table.config.raw, table.name)
        except UnsupportedMergeError as exc:
            raise TableServicesRefusedError(
                f"table {name!r} at {table.base_uri}: compaction merges file slices and refuses it ({exc})",
                reason="merge",
            ) from exc
        self._observe_lock(name, lock)
        config = runtime.entry.hoodie
        runtime.phase[TableService.COMPACTION] = Phase.PLANNING
        pending = pending_compactions(table.load_timeline())
        self._pending_compactions(runtime, [i.timestamp for i in pending])
        if pending:
            # Java's async compactor and `HoodieCompactor`'s execute mode run the earliest first.
            instant_time = pending[0].timestamp
        else:
            # A strategy whose plans are not reproduced: a refusal, not a failure (a failure would
            # quarantine the table, and its cleaning and clustering with it); pending plans still run.
            refused = config.compaction.strategy_not_planned(
                "hoodie.compaction.strategy (the table entry's hoodie or defaults)"
            )
            if refused is not None:
                raise refused
            scheduled = schedule_compaction(table, config, lock, now=now, zone=zone)
            if scheduled.instant_time is None:
                log.debug("table %s: no compaction scheduled: %s", name, scheduled.reason)
                return Outcome.DONE
            instant_time = scheduled.instant_time
            self._pending_compactions(runtime, [instant_time])
        with self._slot(TableService.COMPACTION, SlotClaim(name)):
            runtime.phase[TableService.COMPACTION] = Phase.EXECUTING
            result = execute_compaction(
                table, config, lock, instant_time, self.executor.run_compaction, zone=zone
            )
        log.info("%s", compaction_outcome(name, result))
        self.metrics.run_duration_seconds.labels(name, TableService.COMPACTION).observe(
            result.duration_seconds
        )
        self._completed(name, TableService.COMPACTION, result.instant_time, zone)
        ended = self.clock()
        self.history.record(
            RunRecord(
                name, str(TableService.COMPACTION), "committed", result.instant_time,
                started=ended - timedelta(seconds=result.duration_seconds), ended=ended,
                partitions=tuple(sorted({s.partition_path or "" for s in result.stats})),
                after=FileStats(result.output_files, result.output_bytes),
            )
        )  # fmt: skip
        timeline = table.load_timeline()
        self._pending_compactions(runtime, [i.timestamp for i in pending_compactions(timeline)])
        self._after_tick(runtime, table, timeline, zone, worked=True)
        return Outcome.DONE

    def _pending_compactions(self, runtime: TableRuntime, instant_times: list[str]) -> None:
        """Compaction instants requested or inflight: the gauge, and due while one is left pending."""
        runtime.pending[TableService.COMPACTION] = tuple(instant_times)
        runtime.due[TableService.COMPACTION] = bool(instant_times)
        self.metrics.pending_compactions.labels(runtime.name).set(len(instant_times))

    def _cluster(self, runtime: TableRuntime, now: datetime) -> Outcome:
        table, lock, zone = runtime.open()
        table.check_service_supported(TableServiceKind.CLUSTERING)  # MOR merge rules
        name = runtime.name
        settings = self.settings()
        section = runtime.entry.settings.clustering
        windows = section.effective_windows(settings.maintenance_windows)
        inside = not windows or inside_any(windows, now)
        options = ClusteringPassOptions(
            TriggerMode.ASYNC,
            schedule=inside or section.plan_outside_windows,
            purge_after=settings.failures.purge_after,
            policy=section,
            execute=inside,
            rank_slots=True,
        )
        gauges = _ClusteringGauges(self, runtime, table, now, zone)
        runner = _PhaseRunner(runtime, self.executor.run_group)
        self._observe_lock(name, lock, runner.on_lock)

        def slot(small: SmallFiles | None) -> contextlib.AbstractContextManager[None]:
            claim = SlotClaim.of(name, section.priority, small, now.astimezone(zone))
            return self._slot(TableService.CLUSTERING, claim)

        passed = Clusterer(
            table, runtime.entry.hoodie, lock, zone, runner, options, now=self.clock,
            slot=slot, listener=gauges,
        ).run(scheduled_at=now)  # fmt: skip
        if passed.held:
            planned = passed.scheduled.instant_time if passed.scheduled is not None else None
            pending = planned or passed.decision.pending_instant
            level = logging.INFO if planned else logging.DEBUG
            log.log(
                level, "table %s: clustering %s waits for a maintenance window (%s)",
                name, pending or "(not planned outside windows)", describe(windows),
            )  # fmt: skip
            return Outcome.OUTSIDE_WINDOW
        result = passed.result
        if result is None:
            self._after_tick(runtime, table, table.recent_timeline(), zone, worked=False)
            return Outcome.DONE
        log.info("%s", clustering_outcome(name, result))
        self._record_clustering(runtime, table, result, zone)
        self.metrics.run_duration_seconds.labels(name, TableService.CLUSTERING).observe(
            result.duration_seconds
        )
        if result.committed:
            self.metrics.rewritten_files.labels(name).inc(result.output_files)
            self.metrics.rewritten_bytes.labels(name).inc(result.output_bytes)
            self.metrics.rewritten_records.labels(name).inc(result.output_records)
            self._completed(name, TableService.CLUSTERING, result.instant_time, zone)
        timeline = table.load_timeline()
        decision = clustering_due(
            timeline, runtime.entry.hoodie.clustering, TriggerMode.ASYNC, table.facts_reader
        )
        self.clustering_gauges(runtime, table, timeline, decision.commits_since_last_clustering, now, zone)
        runtime.due[TableService.CLUSTERING] = decision.due
        self._after_tick(runtime, table, timeline, zone, worked=True)
        return Outcome.DONE

    def _record_clustering(
        self, runtime: TableRuntime, table: HudiTable, result: ClusteringResult, zone: tzinfo
    ) -> None:
        """The run's record: a committed one measured from its plan and write stats."""
        ended = self.clock()
        started = ended - timedelta(seconds=result.duration_seconds)
        limit = runtime.entry.hoodie.clustering.small_file_limit_bytes
        record: RunRecord | None = None
        if result.committed:
            instant = table.load_timeline().find(result.instant_time, Action.REPLACE_COMMIT)
            try:
                if instant is not None and instant.is_completed:
                    record = history.clustering_record(table, runtime.name, instant, limit, zone)
            except Exception as exc:  # the history must not fail a committed run
                log.warning("table %s: clustering %s not measured: %s", runtime.name, instant, exc)
            if record is not None:
                record = dataclasses.replace(record, started=started, ended=ended, from_timeline=False)
                record = self._partition_totals(table, record, limit)
        if record is None:
            outcome = "committed" if result.committed else "rolled_back" if result.rolled_back else "failed"
            record = RunRecord(
                runtime.name, history.CLUSTERING, outcome, result.instant_time, started=started, ended=ended,
                reason=result.reason,
                before=history.FileStats(result.input_files, result.input_bytes),
                after=history.FileStats.of((w.file_size_bytes for w in result.written), limit),
            )  # fmt: skip
        self.history.record(record)

    @staticmethod
    def _partition_totals(table: HudiTable, record: RunRecord, limit: int) -> RunRecord:
        """`record` with the touched partitions' live base files after the commit (one listing of
        those partitions), and before it: the same less the files written, plus the inputs replaced."""
        if record.before is None or record.after is None:
            return record
        try:
            view = table.load_view(table.load_timeline(), record.partitions)
        except Exception as exc:  # the history must not fail a committed run
            log.warning("table %s: partitions of %s not measured: %s", table.name, record.instant, exc)
            return record
        slices = [s for p in record.partitions for s in view.latest_file_slices(p)]
        after = FileStats.of((s.base_size_bytes for s in slices if s.base_file is not None), limit)
        before = after.minus(record.after).plus(record.before)
        return dataclasses.replace(record, partitions_before=before, partitions_after=after)

    def _load_history(self, runtime: TableRuntime) -> None:
        """Rebuild the table's recent runs from its timeline, once (the first tick that opens it)."""
        if runtime.history_loaded:
            return
        table, _, zone = runtime.open()
        runtime.history_loaded = True
        limit = runtime.entry.hoodie.clustering.small_file_limit_bytes
        size = self.settings().run_history_size
        try:
            runs = history.rebuild(table, runtime.name, limit, zone, size)
        except Exception as exc:  # a history is worth less than the table's services
            log.warning("table %s: run history not rebuilt: %s: %s", runtime.name, type(exc).__name__, exc)
            return
        self.history.seed(runtime.name, runs)
        runtime.rollbacks_seen = max(
            (r.instant or "" for r in runs if r.service == history.ROLLBACK), default=""
        )

    def _after_tick(
        self, runtime: TableRuntime, table: HudiTable, timeline: Timeline, zone: tzinfo, *, worked: bool
    ) -> None:
        """Rollbacks completed since the last look go to the history; the file sizes are measured
        again when a new instant completed and either this tick did work or the last measurement is
        `FILE_SIZES_MAX_AGE_SECONDS` old (a listing of every partition, through the metadata table
        when it has one: writers committing every few seconds must not cost one per tick)."""
        name = runtime.name
        for instant in timeline.by_actions([Action.ROLLBACK]).completed():
            if instant.timestamp > runtime.rollbacks_seen:
                with contextlib.suppress(Exception):
                    self.history.record(history.rollback_record(table, name, instant, zone))
                runtime.rollbacks_seen = instant.timestamp
        last = timeline.completed().last
        as_of = last.timestamp if last is not None else None
        sizes = runtime.file_sizes
        if sizes is not None:
            age = time.monotonic() - runtime.file_sizes_measured_at
            if sizes.as_of == as_of or (not worked and age < FILE_SIZES_MAX_AGE_SECONDS):
                return
        clustering = runtime.entry.hoodie.clustering
        limit, target = clustering.small_file_limit_bytes, clustering.target_file_max_bytes
        sizes = FileSizes.of(table.iter_views(timeline), limit, as_of, target)
        runtime.file_sizes, runtime.file_sizes_measured_at = sizes, time.monotonic()
        self.metrics.small_files.labels(name).set(sizes.stats.small_files)
        self.metrics.small_file_bytes.labels(name).set(sizes.stats.small_bytes)
        self.metrics.mean_file_size_bytes.labels(name).set(sizes.stats.mean_file_bytes or 0.0)

    def clustering_gauges(
        self,
        runtime: TableRuntime,
        table: HudiTable,
        timeline: Timeline,
        commits: int,
        now: datetime,
        zone: tzinfo,
    ) -> None:
        name = runtime.name
        pending = pending_clustering_instants(timeline, table.facts_reader)
        runtime.commits_since[TableService.CLUSTERING] = commits
        runtime.pending[TableService.CLUSTERING] = tuple(i.timestamp for i in pending)
        self.metrics.commits_since_last_clustering.labels(name).set(commits)
        self.metrics.pending_clustering_plans.labels(name).set(len(pending))
        age = (now - parse_instant_time(pending[0].timestamp, zone)).total_seconds() if pending else 0.0
        self.metrics.oldest_pending_clustering_age_seconds.labels(name).set(max(age, 0.0))

    def _completed(self, name: str, service: TableService, instant_time: str, zone: tzinfo) -> None:
        """Hudi's `<action>.commitTime`: the completed instant's time, read in the timeline's zone."""
        at = parse_instant_time(instant_time, zone).timestamp()
        self.metrics.last_completed_instant_timestamp_seconds.labels(name, service).set(at)

    @contextlib.contextmanager
    def _slot(self, service: TableService, claim: SlotClaim) -> Iterator[None]:
        """A global concurrency slot for `service`, given to the best claim waiting; gives up when the
        daemon stops (InterruptedError), or when the table went to another replica meanwhile (a slot
        may be waited for long: no work starts on a table we no longer hold). The tick leaves the
        tick gate first: the slots cap what runs in them, and a waiting tick must not hold up others."""
        self.gate.leave()
        with self.slots[service].hold(claim, self.stopping):
            if not self.holds(claim.table):
                raise _NotHeldError(claim.table)
            yield

    def _observe_lock(self, name: str, lock: TableLock, acquired: Callable[[], None] | None = None) -> None:
        # Every acquisition is observed: a tick may lock several times (rollback, schedule, commit).
        # A table's histograms are made at its first lock, not at its first tick: an idle table
        # never locks, and two histograms of a dozen buckets each were a fifth of what the daemon
        # kept per idle table (and most of its lines on /metrics).
        metrics = self.metrics

        def on_wait(seconds: float) -> None:
            metrics.lock_wait_seconds.labels(name).observe(seconds)
            if acquired is not None:
                acquired()

        lock.on_wait = on_wait
        lock.on_hold = lambda seconds: metrics.lock_hold_seconds.labels(name).observe(seconds)

    # ------------------------------------------------------------------ failure bookkeeping
    def _record_failure(
        self, runtime: TableRuntime, service: TableService, now: datetime, exc: Exception
    ) -> None:
        failures = self.settings().failures
        count = runtime.consecutive_failures.get(service, 0) + 1
        runtime.consecutive_failures[service] = count
        runtime.errors.append(FailureRecord(now, service, f"{type(exc).__name__}: {exc}"))
        self.history.record(
            RunRecord(
                runtime.name, str(service), "failed", getattr(exc, "instant", None), started=now,
                ended=self.clock(), reason=f"{type(exc).__name__}: {exc}",
            )
        )  # fmt: skip
        self.metrics.failures.labels(runtime.name, service, type(exc).__name__).inc()
        delay = min(failures.backoff_initial_seconds * 2 ** (count - 1), failures.backoff_max_seconds)
        runtime.retry_at[service] = now + timedelta(seconds=delay)
        runtime.forget_table()
        log.error(
            "table %s: %s failed (%d in a row; next try in %gs): %s: %s",
            runtime.name, service, count, delay, type(exc).__name__, exc,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )  # fmt: skip
        if count >= failures.quarantine_after and not runtime.quarantined:
            runtime.quarantined_at_timeline = runtime.timeline_signature()
            self.update_quarantine_gauge()
            log.error(
                "table %s: quarantined after %d consecutive %s failures; it is retried when its config "
                "entry or its timeline changes",
                runtime.name, count, service,
            )  # fmt: skip

    def _lift_quarantine(self, runtime: TableRuntime) -> None:
        runtime.quarantined_at_timeline = None
        runtime.consecutive_failures.clear()
        runtime.retry_at.clear()
        self.update_quarantine_gauge()

    def update_quarantine_gauge(self) -> None:
        self.metrics.tables_quarantined.set(sum(r.quarantined for r in self.runtimes.values()))


class _NotHeldError(Exception):
    """The table went to another replica before this tick's work started."""


class _ClusteringGauges(ClusteringPassListener):
    """Sets the clustering gauges and the runtime's phase from the trigger's decision before a
    (long) execution starts."""

    def __init__(
        self, ticker: TableTicker, runtime: TableRuntime, table: HudiTable, now: datetime, zone: tzinfo
    ) -> None:
        self._ticker, self._runtime, self._table, self._now, self._zone = ticker, runtime, table, now, zone

    def on_decision(self, timeline: Timeline, decision: TriggerDecision) -> None:
        commits = decision.commits_since_last_clustering
        self._ticker.clustering_gauges(self._runtime, self._table, timeline, commits, self._now, self._zone)
        self._runtime.due[TableService.CLUSTERING] = decision.step is not ClusteringStep.WAIT
        if decision.step is ClusteringStep.SCHEDULE:
            self._runtime.phase[TableService.CLUSTERING] = Phase.PLANNING
        elif decision.step is ClusteringStep.EXECUTE_PENDING:
            self._runtime.phase[TableService.CLUSTERING] = Phase.EXECUTING

    def on_scheduled(self, outcome: ScheduleOutcome) -> None:
        if outcome.instant_time is not None:
            self._runtime.phase[TableService.CLUSTERING] = Phase.EXECUTING

    def on_purged(self, instant_time: str) -> None:
        self._ticker.metrics.clustering_plans_purged.labels(self._runtime.name).inc()


class _PhaseRunner:
    """The group runner, counting groups done: a lock taken after one is the commit's
    (`execute_clustering` locks to claim the plan before any group runs, and again to commit)."""

    def __init__(
        self, runtime: TableRuntime, run_group: Callable[[GroupJob], list[BaseFileWriteResult]]
    ) -> None:
        self._runtime, self._run_group = runtime, run_group
        self._done = 0
        self._guard = threading.Lock()

    def __call__(self, job: GroupJob) -> list[BaseFileWriteResult]:
        written = self._run_group(job)
        with self._guard:
            self._done += 1
        return written

    def on_lock(self) -> None:
        phase = self._runtime.phase
        if self._done and phase.get(TableService.CLUSTERING) is Phase.EXECUTING:
            phase[TableService.CLUSTERING] = Phase.COMMITTING


def _last_archived_json(runtime: TableRuntime) -> dict[str, Any] | None:
    """When the archived timeline was last written, and by whom as far as this replica knows: its
    own run, or whoever archived before it served the table (another archiver since then is refused,
    `writers_archive`)."""
    last = runtime.last_archived_ours or runtime.last_archived_before
    if last is None:
        return None
    ours = last == runtime.last_archived_ours
    by = "this daemon" if ours else "an archiver before this daemon served the table"
    return {"at": last.at.isoformat(timespec="seconds"), "file": last.file, "by": by}
