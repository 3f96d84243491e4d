"""The long-running daemon: one APScheduler interval job per table and service, metrics, shutdown.

Each tick is `Daemon.run_iteration(runtime, service, now)`:
- cleaning: `Cleaner.run()` (checks Hudi's trigger itself and finishes pending clean plans first);
- clustering: Hudi's ASYNC trigger; a pending plan (ours or a Java writer's) is executed before a new
  one is scheduled, and a newly scheduled plan is executed in the same tick.
APScheduler's `max_instances=1` + `coalesce=True` keep runs of one table and service from overlapping;
semaphores cap concurrent clusterings and cleans across tables, so a slow table delays only work
of its own kind. Every exception of a tick is caught, logged once with the table, counted, and
retried with capped exponential backoff; after `quarantine_after` consecutive failures the table is
quarantined until its config entry or its timeline (the `.hoodie` listing) changes.

A table a service must not touch yet (`TableConfig.check_service_supported`: clustering of
merge-on-read) is *refused* for it, not failing: logged once (WARNING, with the reason),
`hudi_table_service_table_refused` = 1, no failure counted, no quarantine; each tick only stats
`hoodie.properties`, and the table is re-evaluated when that file or its config entry changes.

Hot reload (the file changed, or SIGHUP): tables are added, removed or re-tuned without a restart; a
changed table entry gets a fresh runtime (lifting its quarantine). An invalid file keeps the running
config, logged and reported by `hudi_table_service_config_reload_success` = 0.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum
from pathlib import Path
from types import FrameType

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_SUBMITTED, JobEvent, JobSubmissionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import CollectorRegistry

from service.cleaning import Cleaner, CleanOptions
from service.cleaning.snapshot import read_last_clean
from service.clustering import execute_clustering, purge_pending_clustering, schedule_clustering
from service.clustering.attempts import failed_attempts, is_our_plan
from service.config.daemon import DaemonConfig, TableEntry, load_daemon_config
from service.errors import ConfigError, InstantOwnedError, TableServicesRefusedError
from service.executor import SparkExecutor
from service.lock import create_lock
from service.lock.base import TableLock
from service.lock.kazoo_pool import KazooClientPool
from service.metrics import MetricsServer, ServiceMetrics
from service.table.heartbeat import HeartbeatSettings
from service.table.instant import Action
from service.table.properties import PROPERTIES_FILE, TableServiceKind
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import METAFOLDER, Timeline, parse_instant_time
from strategies.cleaning.trigger import commits_since_last_clean
from strategies.clustering.trigger import (
    ClusteringStep,
    TriggerMode,
    clustering_due,
    pending_clustering_instants,
)

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TableService(StrEnum):
    CLUSTERING = "clustering"
    CLEANING = "cleaning"


class Outcome(StrEnum):
    DONE = "done"  # the tick ran (whether or not there was work)
    FAILED = "failed"
    BACKING_OFF = "backing_off"
    QUARANTINED = "quarantined"
    REFUSED = "refused"  # the services must not touch this table (yet); not a failure
    STOPPING = "stopping"
    OWNED_ELSEWHERE = "owned_elsewhere"  # another executor owns the pending instant; skipped


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
    refused_services: set[TableService] = field(default_factory=set)  # by TableConfig.check_service_supported
    # The daemon's own ZooKeeper clients: closed by its stop, so no lock opens one after it.
    kazoo_pool: KazooClientPool | None = field(default=None, repr=False)
    guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

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

    def open(self) -> tuple[HudiTable, TableLock, tzinfo]:
        """The table, its lock and zone; TableServicesRefusedError (logged once) for a refused table."""
        with self.guard:
            if self.refusal is not None:
                raise TableServicesRefusedError(self.refusal.reason)
            if self.table is None or self.lock is None or self.zone is None:
                settings = self.entry.settings
                stamp = self.properties_stamp()  # before reading: a later change is seen as one
                table = HudiTable.open(settings.base_path, settings.storage_options)
                try:
                    table.config.check_service_supported(TableServiceKind.CLEANING, table.base_uri)
                except TableServicesRefusedError as exc:
                    self.refusal = Refusal(str(exc), stamp)
                    log.warning(
                        "table %s: refused until hoodie.properties or its config entry changes: %s",
                        self.name, exc,
                    )  # fmt: skip
                    raise
                zone = table.timeline_zone(self.entry.zone)
                props = {**self.entry.hoodie.effective(), "hoodie.base.path": table.base_uri}
                self.table, self.lock, self.zone = (
                    table,
                    create_lock(self.lock_provider, table.name, props, pool=self.kazoo_pool),
                    zone,
                )
            return self.table, self.lock, self.zone

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
        """`.hoodie`'s files (name, size): any new, completed or removed instant changes it."""
        settings = self.entry.settings
        try:
            storage = Storage.for_base_uri(settings.base_path, settings.storage_options)
            return tuple(sorted((s.name, s.size) for s in storage.list_dir(METAFOLDER) if not s.is_dir))
        except Exception as exc:  # an unreachable table stays quarantined
            return (("<unlistable>", 0), (type(exc).__name__, 0))


class Daemon:
    def __init__(
        self,
        config: DaemonConfig,
        *,
        registry: CollectorRegistry | None = None,
        clock: Clock = _utc_now,
        executor: SparkExecutor | None = None,
        serve_http: bool = True,
    ) -> None:
        self.config = config
        settings = config.daemon
        self.metrics = ServiceMetrics(registry or CollectorRegistry())
        self.clock = clock
        self.executor = executor or SparkExecutor(settings.spark.master, settings.spark.conf)
        self._slots = {
            TableService.CLUSTERING: threading.BoundedSemaphore(settings.max_concurrent_clusterings),
            TableService.CLEANING: threading.BoundedSemaphore(settings.max_concurrent_cleans),
        }
        self._kazoo_pool = KazooClientPool()
        self.runtimes: dict[str, TableRuntime] = {
            entry.name: self._new_runtime(entry, config) for entry in config.tables
        }
        # Threads start lazily; room for every table's two services plus tables added by reloads, so
        # a long clustering never holds up another table's tick.
        workers = max(16, 2 * len(self.runtimes) + 4)
        self._scheduler = BackgroundScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(workers)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
        )
        self._scheduler.add_listener(self._on_submitted, EVENT_JOB_SUBMITTED)
        self._scheduler.add_listener(self._on_skipped, EVENT_JOB_MAX_INSTANCES)
        self._stopping = threading.Event()
        self._active = 0
        self._idle = threading.Condition()
        self.http = (
            MetricsServer(self.metrics.registry, settings.metrics.host, settings.metrics.port, self.is_ready)
            if serve_http
            else None
        )
        self.metrics.config_reload_success.set(1)
        self._config_digest = _file_digest(config.path)
        self._watched_digest = self._config_digest
        self._reload_guard = threading.Lock()
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
        if watch > 0 and self._config_digest is not None:
            self._scheduler.add_job(
                self._watch_config, "interval", seconds=watch, id="config-watch", name="config watch"
            )
        self._scheduler.start()
        log.info("daemon started: %d tables, poll every %gs", len(self.runtimes), self._poll_seconds)

    def is_ready(self) -> bool:
        return bool(self._scheduler.running) and not self._stopping.is_set()

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
            self._config_digest = _file_digest(self.config.path)
            try:
                new = load_daemon_config(self.config.path)
            except ConfigError as exc:
                self.metrics.config_reload_success.set(0)
                self.metrics.config_reload_failures.inc()
                log.error("config reload failed; the running config is kept: %s", exc)
                return False
            self.apply_config(new)
            self.metrics.config_reload_success.set(1)
            return True

    def apply_config(self, new: DaemonConfig) -> None:
        """Add, remove and re-tune tables without a restart; a changed entry starts with a clean slate."""
        old = self.config
        old_daemon = old.daemon
        self.config = new
        for key in ("spark", "metrics"):
            if getattr(new.daemon, key) != getattr(old_daemon, key):
                log.warning("config reload: daemon.%s changes take effect on restart", key)
        if new.daemon.max_concurrent_clusterings != old_daemon.max_concurrent_clusterings:
            self._slots[TableService.CLUSTERING] = threading.BoundedSemaphore(
                new.daemon.max_concurrent_clusterings
            )
        if new.daemon.max_concurrent_cleans != old_daemon.max_concurrent_cleans:
            self._slots[TableService.CLEANING] = threading.BoundedSemaphore(new.daemon.max_concurrent_cleans)
        reschedule_all = new.daemon.poll_interval_seconds != old_daemon.poll_interval_seconds
        wanted = {entry.name: entry for entry in new.tables}
        for name in [n for n in self.runtimes if n not in wanted]:
            self._remove_jobs(name)
            del self.runtimes[name]  # a tick still running finishes with its own runtime and lock
            self.metrics.forget_table(name)
            log.info("config reload: table %s removed", name)
        for name, entry in wanted.items():
            current = self.runtimes.get(name)
            if current is not None and current.entry.fingerprint == entry.fingerprint and not reschedule_all:
                continue
            if current is not None:
                self._remove_jobs(name)
            self.runtimes[name] = self._new_runtime(entry, new)
            if not self._stopping.is_set():
                self._add_jobs(self.runtimes[name])
            log.info("config reload: table %s %s", name, "added" if current is None else "updated")
        self._update_quarantine_gauge()

    def _new_runtime(self, entry: TableEntry, config: DaemonConfig) -> TableRuntime:
        daemon = config.daemon
        return TableRuntime(
            entry, daemon.lock.provider, daemon.failures.history_size, kazoo_pool=self._kazoo_pool
        )

    def _remove_jobs(self, table_name: str) -> None:
        for service in TableService:
            with contextlib.suppress(JobLookupError):
                self._scheduler.remove_job(f"{table_name}:{service}")

    def _watch_config(self) -> None:
        if self._stopping.is_set():
            return
        digest = _file_digest(self.config.path)
        # An editor or `cp` may be midway through writing it (a cut-off file can parse, with tables
        # missing): reload once the file has stayed the same for one watch interval.
        settled = digest == self._watched_digest
        self._watched_digest = digest
        if settled and digest != self._config_digest:
            log.info("config file %s changed; reloading", self.config.path)
            self.reload_from_file()

    @property
    def _poll_seconds(self) -> float:
        return self.config.daemon.poll_interval_seconds

    def _add_jobs(self, runtime: TableRuntime) -> None:
        toggles = {
            TableService.CLUSTERING: runtime.entry.settings.clustering.enabled,
            TableService.CLEANING: runtime.entry.settings.cleaning.enabled,
        }
        for service, enabled in toggles.items():
            if enabled:
                self._scheduler.add_job(
                    self._job,
                    "interval",
                    seconds=self._poll_seconds,
                    args=[runtime.name, service],
                    id=f"{runtime.name}:{service}",
                    name=f"{service} {runtime.name}",
                    next_run_time=datetime.now(UTC) + self._phase(f"{runtime.name}:{service}"),
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
            self.run_iteration(runtime, service, self.clock())
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _on_submitted(self, event: JobSubmissionEvent) -> None:
        if event.scheduled_run_times:
            lag = (datetime.now(UTC) - event.scheduled_run_times[-1]).total_seconds()
            self.metrics.scheduler_lag_seconds.set(max(lag, 0.0))

    def _on_skipped(self, event: JobEvent) -> None:
        log.debug("job %s still running; this tick is skipped", event.job_id)

    # ------------------------------------------------------------------ one tick
    def run_iteration(self, runtime: TableRuntime, service: TableService, now: datetime) -> Outcome:
        """One tick of one table service; never raises (failures are logged, counted and backed off)."""
        if self._stopping.is_set():
            return Outcome.STOPPING
        refusal = runtime.refusal
        if refusal is not None:
            if runtime.properties_stamp() == refusal.properties:
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
        try:
            if service is TableService.CLEANING:
                self._clean(runtime)
            else:
                self._cluster(runtime, now)
        except TableServicesRefusedError as exc:
            if runtime.refusal is None and service not in runtime.refused_services:  # one service only
                runtime.refused_services.add(service)
                log.warning("table %s: %s refused: %s", runtime.name, service, exc)
            self.metrics.table_refused.labels(runtime.name).set(1)
            return Outcome.REFUSED
        except InstantOwnedError as exc:
            # Another executor runs that instant (its heartbeat is alive): not a failure of ours, so no
            # backoff and no quarantine; the next tick looks again.
            self.metrics.instant_owned_elsewhere.labels(runtime.name, service).inc()
            log.info("table %s: %s skipped this tick: %s", runtime.name, service, exc)
            return Outcome.OWNED_ELSEWHERE
        except Exception as exc:
            if self._stopping.is_set() and isinstance(exc, InterruptedError):
                return Outcome.STOPPING
            self._record_failure(runtime, service, now, exc)
            return Outcome.FAILED
        if not runtime.refused_services:  # the gauge stays 1 while any service refuses the table
            self.metrics.table_refused.labels(runtime.name).set(0)
        runtime.consecutive_failures.pop(service, None)
        runtime.retry_at.pop(service, None)
        self.metrics.last_success_timestamp_seconds.labels(runtime.name, service).set(time.time())
        return Outcome.DONE

    def _clean(self, runtime: TableRuntime) -> None:
        table, lock, zone = runtime.open()
        options = CleanOptions(max_delete_fraction=self.config.daemon.deletion.max_delete_fraction)
        self._observe_lock(runtime.name, lock)
        with self._slot(TableService.CLEANING):
            result = Cleaner(table, runtime.entry.hoodie, lock, zone, options, now=self.clock).run()
        name = runtime.name
        if result.cleans:
            self.metrics.run_duration_seconds.labels(name, TableService.CLEANING).observe(
                result.duration_seconds
            )
            self.metrics.deleted_files.labels(name).inc(result.files_deleted)
            self.metrics.deleted_bytes.labels(name).inc(result.bytes_deleted)
        since = result.commits_since_last_clean
        if since is None:  # the run cleaned (or looked at a pending clean): count on a fresh timeline
            timeline = table.load_timeline()
            since = commits_since_last_clean(timeline, read_last_clean(table, timeline))
        self.metrics.commits_since_last_clean.labels(name).set(since)

    def _cluster(self, runtime: TableRuntime, now: datetime) -> None:
        table, lock, zone = runtime.open()
        table.config.check_service_supported(TableServiceKind.CLUSTERING, table.base_uri)  # MOR: refused
        self._observe_lock(runtime.name, lock)
        hoodie = runtime.entry.hoodie
        timeline = table.load_timeline()
        decision = clustering_due(timeline, hoodie.clustering, TriggerMode.ASYNC, table.facts_reader)
        self._clustering_gauges(
            runtime.name, table, timeline, decision.commits_since_last_clustering, now, zone
        )
        if decision.step is ClusteringStep.WAIT:
            log.debug("table %s: %s", runtime.name, decision.reason)
            return
        with self._slot(TableService.CLUSTERING):
            instant_time = decision.pending_instant
            if instant_time is not None and self._purge_if_failing(runtime, table, lock, zone, instant_time):
                return
            if instant_time is None:
                outcome = schedule_clustering(table, hoodie, lock, now=now, zone=zone, mode=TriggerMode.ASYNC)
                if outcome.instant_time is None:
                    return
                instant_time = outcome.instant_time
            try:
                result = execute_clustering(
                    table, instant_time, hoodie, self.executor.run_group, lock, zone=zone, now=self.clock
                )
            except Exception:
                # The attempt that just failed may be the last one allowed: purge now, so writers
                # are unblocked without waiting for the next tick (the failure is still recorded).
                try:
                    self._purge_if_failing(runtime, table, lock, zone, instant_time)
                except Exception as purge_error:
                    log.warning(
                        "table %s: purging clustering %s failed: %s: %s",
                        runtime.name, instant_time, type(purge_error).__name__, purge_error,
                    )  # fmt: skip
                raise
        name = runtime.name
        self.metrics.run_duration_seconds.labels(name, TableService.CLUSTERING).observe(
            result.duration_seconds
        )
        if result.committed:
            self.metrics.rewritten_files.labels(name).inc(result.output_files)
            self.metrics.rewritten_bytes.labels(name).inc(result.output_bytes)
        timeline = table.load_timeline()
        decision = clustering_due(timeline, hoodie.clustering, TriggerMode.ASYNC, table.facts_reader)
        self._clustering_gauges(name, table, timeline, decision.commits_since_last_clustering, now, zone)

    def _purge_if_failing(
        self, runtime: TableRuntime, table: HudiTable, lock: TableLock, zone: tzinfo, instant_time: str
    ) -> bool:
        """Purge our pending plan `instant_time` once its execution failed `purge_after` times in a row.

        A pending plan blocks writers' updates to its file groups (Hudi's default
        `SparkRejectUpdateStrategy` fails them with `HoodieClusteringUpdateException`), so a plan that
        keeps failing must not stay. Plans scheduled by Hudi's writers are theirs and are left alone.
        """
        timeline = table.load_timeline()
        instant = timeline.find(instant_time, Action.REPLACE_COMMIT)
        if instant is None or instant.is_completed or not is_our_plan(table, instant):
            return False
        failed = failed_attempts(table, timeline, instant_time)
        limit = self.config.daemon.failures.purge_after
        if failed < limit:
            return False
        purge_pending_clustering(
            table, lock, zone=zone, now=self.clock(), instant_time=instant_time,
            heartbeat_settings=HeartbeatSettings.from_config(runtime.entry.hoodie),
        )  # fmt: skip
        self.metrics.clustering_plans_purged.labels(runtime.name).inc()
        log.error(
            "table %s: purged clustering plan %s: its execution failed %d times in a row "
            "(daemon.failures.purge_after=%d); writers may update its file groups again",
            runtime.name, instant_time, failed, limit,
        )  # fmt: skip
        return True

    def _clustering_gauges(
        self, name: str, table: HudiTable, timeline: Timeline, commits: int, now: datetime, zone: tzinfo
    ) -> None:
        pending = pending_clustering_instants(timeline, table.facts_reader)
        self.metrics.commits_since_last_clustering.labels(name).set(commits)
        self.metrics.pending_clustering_plans.labels(name).set(len(pending))
        age = (now - parse_instant_time(pending[0].timestamp, zone)).total_seconds() if pending else 0.0
        self.metrics.oldest_pending_clustering_age_seconds.labels(name).set(max(age, 0.0))

    @contextlib.contextmanager
    def _slot(self, service: TableService) -> Iterator[None]:
        """A global concurrency slot for `service`; gives up when the daemon stops."""
        slots = self._slots[service]
        while not slots.acquire(timeout=0.5):
            if self._stopping.is_set():
                raise InterruptedError("daemon is stopping")
        try:
            yield
        finally:
            slots.release()

    def _observe_lock(self, name: str, lock: TableLock) -> None:
        # Every acquisition is observed: a tick may lock several times (rollback, schedule, commit).
        lock.on_wait = self.metrics.lock_wait_seconds.labels(name).observe
        lock.on_hold = self.metrics.lock_hold_seconds.labels(name).observe

    # ------------------------------------------------------------------ failures
    def _record_failure(
        self, runtime: TableRuntime, service: TableService, now: datetime, exc: Exception
    ) -> None:
        failures = self.config.daemon.failures
        count = runtime.consecutive_failures.get(service, 0) + 1
        runtime.consecutive_failures[service] = count
        runtime.errors.append(FailureRecord(now, service, f"{type(exc).__name__}: {exc}"))
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
            self._update_quarantine_gauge()
            log.error(
                "table %s: quarantined after %d consecutive %s failures; it is retried when its config "
                "entry or its timeline changes",
                runtime.name, count, service,
            )  # fmt: skip

    def _lift_quarantine(self, runtime: TableRuntime) -> None:
        runtime.quarantined_at_timeline = None
        runtime.consecutive_failures.clear()
        runtime.retry_at.clear()
        self._update_quarantine_gauge()

    def _update_quarantine_gauge(self) -> None:
        self.metrics.tables_quarantined.set(sum(r.quarantined for r in self.runtimes.values()))


def _file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


# ---------------------------------------------------------------------- the `run` command
def run_daemon(config_path: str | Path, stop: threading.Event | None = None, hard_exit: bool = True) -> int:
    """Load the config, run until SIGTERM/SIGINT (or `stop` is set), shut down in bounded time.

    With `hard_exit`, runs still active after the grace period do not keep the process alive: their
    worker threads are not daemonic, so the process ends with os._exit (a clustering cut short leaves
    its plan pending for the next start).
    """
    config = load_daemon_config(config_path)
    logging.getLogger().setLevel(config.daemon.logging.level)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    stop = stop or threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        stop.set()

    reload_requested = threading.Event()

    def request_reload(signum: int, frame: FrameType | None) -> None:
        reload_requested.set()  # applied by the main loop, not inside the signal handler

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, request_stop)
        signal.signal(signal.SIGHUP, request_reload)
    daemon = Daemon(config)
    daemon.start()
    try:
        while not stop.wait(0.2):
            if reload_requested.is_set():
                reload_requested.clear()
                log.info("SIGHUP: reloading %s", config.path)
                daemon.reload_from_file()
    finally:
        finished = daemon.stop()
    if not finished and hard_exit:
        logging.shutdown()
        os._exit(2)
    return 0 if finished else 2
