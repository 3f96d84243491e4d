"""The daemon's scheduler loop: one APScheduler interval job per table and service, metrics, shutdown.

APScheduler's `max_instances=1` + `coalesce=True` keep runs of one table and service from
overlapping; each job runs one tick (`service.daemon.tick`). Hot reload (`service.daemon.reload`)
adds, removes and re-tunes tables without a restart.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import zlib
from datetime import UTC, datetime, timedelta
from functools import partial

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_SUBMITTED, JobEvent, JobSubmissionEvent
from apscheduler.executors.pool import BasePoolExecutor, ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import CollectorRegistry

from service.clock import Clock, utc_now
from service.config.daemon import DaemonConfig, TableEntry, load_daemon_config
from service.daemon.discovery_state import Discovery
from service.daemon.history import RunHistory
from service.daemon.membership import ClusterZookeeper, HeldListener, Membership
from service.daemon.reload import RESTART_ONLY, ConfigWatch, table_changes
from service.daemon.run_log import quiet_scheduler_logs
from service.daemon.runtime import Outcome, TableRuntime, TableService
from service.daemon.slots import PrioritySlots
from service.daemon.status_api import StatusSource
from service.daemon.status_page import serve
from service.daemon.tick import TableTicker
from service.daemon.tick_gate import TickGate, default_capacity
from service.discovery import settings_of
from service.errors import ConfigError
from service.executor import SparkExecutor
from service.lock.kazoo_pool import KazooClientPool
from service.metrics import MetricsServer, ServiceMetrics

log = logging.getLogger(__name__)


class Daemon:
    def __init__(
        self,
        config: DaemonConfig,
        *,
        registry: CollectorRegistry | None = None,
        clock: Clock = utc_now,
        executor: SparkExecutor | None = None,
        serve_http: bool = True,
        on_held: HeldListener | None = None,
    ) -> None:
        self.config = config
        settings = config.daemon
        self.metrics = ServiceMetrics(registry or CollectorRegistry())
        self.clock = clock
        self.executor = executor or SparkExecutor(settings.spark.master, settings.spark.conf)
        self._stopping = threading.Event()
        self._slots = {
            TableService.CLUSTERING: PrioritySlots(settings.max_concurrent_clusterings),
            TableService.CLEANING: PrioritySlots(settings.max_concurrent_cleans),
            TableService.COMPACTION: PrioritySlots(settings.max_concurrent_compactions),
        }
        self._kazoo_pool = KazooClientPool()
        self.runtimes: dict[str, TableRuntime] = {
            entry.name: self._new_runtime(entry, config) for entry in config.tables
        }
        # Every job runs through the tick gate: a few threads plan, a tick waiting for a slot (or
        # running in one) has its own, so a long clustering never holds up another table's tick.
        gate = TickGate(settings.max_concurrent_ticks or default_capacity())
        quiet_scheduler_logs()  # its "skipped: maximum number of running instances" is by design
        self._scheduler = BackgroundScheduler(
            timezone=UTC,
            # The config watch has a thread of its own: a reload must not queue behind a backlog of ticks.
            executors={"default": _GateExecutor(gate), "control": ThreadPoolExecutor(1)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
        )
        self._scheduler.add_listener(self._on_submitted, EVENT_JOB_SUBMITTED)
        self._scheduler.add_listener(self._on_skipped, EVENT_JOB_MAX_INSTANCES)
        self._active = 0
        self._idle = threading.Condition()
        self.history = RunHistory(settings.run_history_size)
        self.status = StatusSource(
            lambda: self.runtimes, self.history, self._next_tick, clock,
            holds=lambda name: self.membership is None or self.membership.holds(name),
            discovery=lambda: self.discovery.to_json() if self.config.discover else None,
        )  # fmt: skip
        metrics = settings.metrics
        self.http = (
            MetricsServer(
                self.metrics.registry, metrics.host, metrics.port, self.is_ready, partial(serve, self.status)
            )
            if serve_http
            else None
        )
        # With `daemon.cluster`, the replicas divide the tables: this one serves only those it holds.
        self._held_before: frozenset[str] = frozenset()
        self.membership = (
            Membership(
                settings.cluster,
                ClusterZookeeper.of(config),
                self.runtimes,
                self.metrics,
                on_held=partial(self._held_changed, on_held),
            )
            if settings.cluster.enabled
            else None
        )
        membership = self.membership
        self.ticker = TableTicker(
            self.metrics, self.executor, clock, lambda: self.config.daemon, self._slots, self.runtimes,
            self._stopping, self.history, gate,
            holds=membership.holds if membership is not None else lambda table: True,
        )  # fmt: skip
        self.metrics.config_reload_success.set(1)
        self._watch = ConfigWatch(config.path)
        self._reload_guard = threading.Lock()
        self.discovery = Discovery()
        if settings.lock.provider == "in-process":
            log.warning(
                "lock provider in-process: the table services exclude only this process's threads; "
                "this is safe ONLY if no other writer commits to these tables concurrently"
            )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.http is not None:
            self.http.start()
        for runtime in self.runtimes.values():
            self._add_jobs(runtime)
        watch = self.config.daemon.config_watch_seconds
        if watch > 0 and self._watch.loaded_digest is not None:
            self._scheduler.add_job(
                self._watch_config,
                "interval",
                seconds=watch,
                id="config-watch",
                name="config watch",
                executor="control",
            )
        if self.config.discover:
            self._scheduler.add_job(
                self.discover_now,
                "interval",
                seconds=self.config.daemon.discovery_interval_seconds,
                id="discovery",
                name="table discovery",
                executor="control",
                next_run_time=datetime.now(UTC),
            )
        if self.membership is not None:
            self.membership.start()
        self._scheduler.start()
        log.info("daemon started: %d tables, poll every %gs", len(self.runtimes), self._poll_seconds)

    def is_ready(self) -> bool:
        """Scheduling, and (with `daemon.cluster`) the division of the tables settled (ACQUIRED)."""
        settled = self.membership is None or self.membership.ready
        return bool(self._scheduler.running) and not self._stopping.is_set() and settled

    def stop(self, grace_seconds: float | None = None) -> bool:
        """Stop scheduling, wait for running ticks (up to the grace period), release resources.

        Returns whether every tick finished. A clustering cut short by the Spark session stopping is
        rolled back to its requested plan by `execute_clustering`, so the next start executes it.
        """
        grace = self.config.daemon.shutdown_grace_seconds if grace_seconds is None else grace_seconds
        self._stopping.set()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        with self._idle:
            finished = self._idle.wait_for(lambda: self._active == 0, timeout=grace)
        if not finished:
            log.warning("%d table-service runs still active after %gs; stopping anyway", self._active, grace)
        if self.membership is not None:
            # After our runs ended (or the grace period): the tables go to the other replicas.
            self.membership.stop()
        for runtime in self.runtimes.values():
            if runtime.lock is not None:
                runtime.lock.release()
        # A tick still running after the grace period finds the pool closed (LockError) instead of
        # opening a ZooKeeper client nobody would close.
        self._kazoo_pool.close()
        if self.http is not None:
            self.http.stop()
        self.executor.stop()
        log.info("daemon stopped")
        return finished

    # ------------------------------------------------------------------ hot reload
    def reload_from_file(self) -> bool:
        """Re-read the config file and apply it; an invalid file keeps the running config (log + metric)."""
        with self._reload_guard:
            self._watch.loading()
            try:
                new = load_daemon_config(self.config.path)
            except ConfigError as exc:
                self.metrics.config_reload_success.set(0)
                self.metrics.config_reload_failures.inc()
                log.error("config reload failed; the running config is kept: %s", exc)
                return False
            self.apply_config(new.with_discovered(self.discovery.settings) if new.discover else new)
            self.metrics.config_reload_success.set(1)
            return True

    def discover_now(self) -> None:
        """One pass over the `discover:` roots (`service.discovery`): tables that appeared are served,
        those that disappeared are dropped, live; a root that cannot be listed keeps what it found."""
        # The listings (slow on an object store) outside the guard: a reload need not wait for them.
        found = self.discovery.scan(self.config.discover, self.clock())
        with self._reload_guard:
            config = self.config
            listed = {e.name for e in config.tables if e not in config.discovered}
            new = config.with_discovered(settings_of(found, listed))
            before = {e.settings.base_path: e.name for e in config.discovered}
            after = {e.settings.base_path: e.name for e in new.discovered}
            self.discovery.settings = [e.settings for e in new.discovered]
            if {e.name: e.fingerprint for e in new.tables} == {e.name: e.fingerprint for e in config.tables}:
                return
            self.discovery.record(self.clock(), before, after)
            self.apply_config(new)

    def apply_config(self, new: DaemonConfig) -> None:
        """Add, remove and re-tune tables without a restart; a changed entry starts with a clean slate."""
        old = self.config
        old_daemon = old.daemon
        self.config = new
        for key in RESTART_ONLY:
            if getattr(new.daemon, key) != getattr(old_daemon, key):
                log.warning("config reload: daemon.%s changes take effect on restart", key)
        # Holders release into the same pool, so a smaller cap takes effect as runs finish.
        self._slots[TableService.CLUSTERING].resize(new.daemon.max_concurrent_clusterings)
        self._slots[TableService.CLEANING].resize(new.daemon.max_concurrent_cleans)
        self._slots[TableService.COMPACTION].resize(new.daemon.max_concurrent_compactions)
        changes = table_changes({n: r.entry for n, r in self.runtimes.items()}, old_daemon, new)
        for name in changes.removed:
            self._remove_jobs(name)
            del self.runtimes[name]  # a tick still running finishes with its own runtime and lock
            self.metrics.forget_table(name)
            self.history.forget(name)
            log.info("config reload: table %s removed", name)
        for entry in changes.fresh:
            name = entry.name
            added = name not in self.runtimes
            if not added:
                self._remove_jobs(name)
            self.runtimes[name] = self._new_runtime(entry, new)
            if not self._stopping.is_set():
                self._add_jobs(self.runtimes[name])
            log.info("config reload: table %s %s", name, "added" if added else "updated")
        self.ticker.update_quarantine_gauge()
        if self.membership is not None:
            self.membership.set_tables(self.runtimes)  # a changed list is divided anew

    def _new_runtime(self, entry: TableEntry, config: DaemonConfig) -> TableRuntime:
        daemon = config.daemon
        return TableRuntime(
            entry, daemon.lock.provider, daemon.failures.history_size, kazoo_pool=self._kazoo_pool
        )

    def _remove_jobs(self, table_name: str) -> None:
        for service in TableService:
            with contextlib.suppress(JobLookupError):
                self._scheduler.remove_job(_job_id(table_name, service))

    def _watch_config(self) -> None:
        if self._stopping.is_set():
            return
        if self._watch.changed():
            log.info("config file %s changed; reloading", self.config.path)
            self.reload_from_file()

    @property
    def _poll_seconds(self) -> float:
        return self.config.daemon.poll_interval_seconds

    def _add_jobs(self, runtime: TableRuntime) -> None:
        toggles = {
            TableService.CLUSTERING: runtime.entry.settings.clustering.enabled,
            TableService.CLEANING: runtime.entry.settings.cleaning.enabled,
            # Unless turned off: a copy-on-write table's first tick finds it not applicable.
            TableService.COMPACTION: not runtime.entry.settings.compaction.disabled,
            TableService.ARCHIVAL: runtime.entry.settings.archival.enabled,
            TableService.REPAIR: runtime.entry.settings.repair.enabled,
        }
        for service, enabled in toggles.items():
            if enabled:
                self._scheduler.add_job(
                    self._job,
                    "interval",
                    seconds=self._poll_seconds,
                    args=[runtime.name, service],
                    id=_job_id(runtime.name, service),
                    name=f"{service} {runtime.name}",
                    next_run_time=datetime.now(UTC) + self._phase(_job_id(runtime.name, service)),
                )

    def _phase(self, job_id: str) -> timedelta:
        """When a job first runs: spread over up to one poll interval (50 ms per job), at a fixed
        point per job, so a thousand tables do not all tick at once and a few start at once."""
        spread = min(self._poll_seconds, 0.05 * 2 * len(self.runtimes))
        return timedelta(seconds=spread * zlib.crc32(job_id.encode()) / 2**32)

    def _job(self, table_name: str, service: TableService) -> None:
        runtime = self.runtimes.get(table_name)
        if runtime is None or self._stopping.is_set():
            return
        with self._idle:
            self._active += 1
        try:
            self.run_iteration(runtime, service, self.clock())  # read `now` here: the job may have queued
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _held_changed(self, listener: HeldListener | None, replica: str, share: frozenset[str]) -> None:
        """The membership's share changed: tables just taken over tick now, not at their next poll
        (a killed replica's tables would otherwise wait up to a poll interval more); they queue in
        the tick gate like any due tick."""
        gained, self._held_before = share - self._held_before, share
        if gained and self._scheduler.running and not self._stopping.is_set():
            now = datetime.now(UTC)
            for table in sorted(gained):
                for service in TableService:
                    with contextlib.suppress(JobLookupError):  # not enabled, or removed by a reload
                        self._scheduler.modify_job(_job_id(table, service), next_run_time=now)
        if listener is not None:
            listener(replica, share)

    def _next_tick(self, table_name: str, service: TableService) -> datetime | None:
        """When the scheduler runs the table's service next (None: not scheduled)."""
        job = self._scheduler.get_job(_job_id(table_name, service))
        return None if job is None else getattr(job, "next_run_time", None)

    def _on_submitted(self, event: JobSubmissionEvent) -> None:
        if event.scheduled_run_times:
            lag = (datetime.now(UTC) - event.scheduled_run_times[-1]).total_seconds()
            self.metrics.scheduler_lag_seconds.set(max(lag, 0.0))

    def _on_skipped(self, event: JobEvent) -> None:
        log.debug("job %s still running; this tick is skipped", event.job_id)

    # ------------------------------------------------------------------ one tick
    def run_iteration(self, runtime: TableRuntime, service: TableService, now: datetime) -> Outcome:
        """One tick of one table service; never raises (`TableTicker.run_iteration`)."""
        return self.ticker.run_iteration(runtime, service, now)


def _job_id(table_name: str, service: TableService) -> str:
    """The scheduler's job of one table's service."""
    return f"{table_name}:{service}"


class _GateExecutor(BasePoolExecutor):
    """APScheduler's pool executor over the tick gate: a job due waits in the gate's queue."""

    def __init__(self, gate: TickGate) -> None:
        super().__init__(gate)
