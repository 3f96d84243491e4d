"""Prometheus metrics of the daemon, and the HTTP endpoint serving them with `/healthz` and `/readyz`.

Every metric is defined once, in `ServiceMetrics`, on a registry the caller passes (tests use their
own). Names follow Prometheus conventions: prefix `hudi_table_service_`, base units in the name,
`_total` on counters (prometheus-client appends it), labels `table` and `service`
(clustering|cleaning|compaction).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from service.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

log = logging.getLogger(__name__)

PREFIX = "hudi_table_service_"
# Table-service runs range from sub-second cleans to hour-long clusterings.
RUN_BUCKETS = (0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200, float("inf"))
LOCK_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, float("inf"))


class SeriesGauge(Collector):
    """A labelled gauge kept as one dict entry per series (label values -> value), turned into a
    metric family when scraped. prometheus-client's `Gauge` keeps an object per series (with its own
    lock, value holder and label tuples: about 680 bytes); an idle table has 17 gauge series,
    so at 10,000 tables that was over 100 MB of the daemon. Same use as a labelled `Gauge`:
    `labels(*values).set(v)`, `remove(*values)`, read through the registry."""

    def __init__(self, name: str, doc: str, labelnames: Iterable[str], registry: CollectorRegistry) -> None:
        self._name, self._doc, self._labelnames = name, doc, list(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def labels(self, *values: object) -> _Series:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: labels {self._labelnames}, given {values!r}")
        return _Series(self, tuple(sys.intern(str(v)) for v in values))

    def remove(self, *values: object) -> None:
        """Drop a series; KeyError when there is none (as prometheus-client's `remove`)."""
        with self._lock:
            del self._values[tuple(str(v) for v in values)]

    def label_sets(self) -> list[tuple[str, ...]]:
        with self._lock:
            return list(self._values)

    def _set(self, key: tuple[str, ...], value: float) -> None:
        with self._lock:
            self._values[key] = float(value)

    def _add(self, key: tuple[str, ...], amount: float) -> None:
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(self._name, self._doc, labels=self._labelnames)]

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(self._name, self._doc, labels=self._labelnames)
        with self._lock:
            series = list(self._values.items())
        for key, value in series:
            family.add_metric(list(key), value)
        return [family]


class _Series:
    """One series of a `SeriesGauge`, made per use (nothing is kept per series but its value)."""

    __slots__ = ("_gauge", "_key")

    def __init__(self, gauge: SeriesGauge, key: tuple[str, ...]) -> None:
        self._gauge, self._key = gauge, key

    def set(self, value: float) -> None:
        self._gauge._set(self._key, value)

    def inc(self, amount: float = 1.0) -> None:
        self._gauge._add(self._key, amount)

    def dec(self, amount: float = 1.0) -> None:
        self._gauge._add(self._key, -amount)


class ServiceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        table = ["table"]
        per_service = ["table", "service"]

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(PREFIX + name, doc, registry=registry)

        def series(name: str, doc: str, labels: Iterable[str]) -> SeriesGauge:
            return SeriesGauge(PREFIX + name, doc, labels, registry)

        def counter(name: str, doc: str, labels: Iterable[str] = ()) -> Counter:
            return Counter(PREFIX + name, doc, list(labels), registry=registry)

        self.commits_since_last_clustering = series(
            "commits_since_last_clustering", "Completed commits after the last clustering", table
        )
        self.commits_since_last_clean = series(
            "commits_since_last_clean", "Completed commits after the last clean's latest commit", table
        )
        self.pending_clustering_plans = series(
            "pending_clustering_plans", "Clustering plans requested or inflight", table
        )
        self.oldest_pending_clustering_age_seconds = series(
            "oldest_pending_clustering_age_seconds", "Age of the oldest pending clustering plan", table
        )
        self.run_duration_seconds = Histogram(
            PREFIX + "run_duration_seconds",
            "Duration of table-service runs that did work",
            per_service,
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self.rewritten_files = counter("rewritten_files", "Files written by clustering", table)
        self.rewritten_bytes = counter("rewritten_bytes", "Bytes written by clustering", table)
        # Hudi's `replacecommit.totalRecordsWritten` (`HoodieMetrics.updateCommitMetrics`), summed.
        self.rewritten_records = counter("rewritten_records", "Records written by clustering", table)
        self.clustering_plans_purged = counter(
            "clustering_plans_purged", "Plans of ours purged after repeated failed executions", table
        )
        self.deleted_files = counter("deleted_files", "Files deleted by cleaning", table)
        self.deleted_bytes = counter("deleted_bytes", "Bytes deleted by cleaning", table)
        self.pending_clean_plans = series("pending_clean_plans", "Clean plans requested or inflight", table)
        # `strategies.blockers`: how long each kind of blocker has held each service back (its oldest).
        self.blocked_seconds = series(
            "blocked_seconds",
            "Age of the oldest blocker of each kind holding a service back (check and the page say why)",
            ["table", "service", "blocker"],
        )
        self.active_timeline_instants = series(
            "active_timeline_instants", "Instants on the active timeline (what archival bounds)", table
        )
        self.archived_instants = counter(
            "archived_instants", "Instants moved to the archived timeline", table
        )
        self.orphans_moved = counter(
            "orphans_moved", "Orphan files the repair service moved to the table's trash", table
        )
        # Compaction instants requested or inflight (`CompactionUtils.getPendingCompactionInstantTimes`).
        self.pending_compactions = series(
            "pending_compactions", "Compaction plans requested or inflight", table
        )
        # Hudi's `<action>.commitTime` (`HoodieMetrics.updateCommitTimingMetrics`): the instant time as
        # epoch time (Hudi: ms; here seconds), so `time() - ...` is the age of the last completed run.
        self.last_completed_instant_timestamp_seconds = series(
            "last_completed_instant_timestamp_seconds",
            "Instant time (epoch seconds) of the last instant this daemon completed",
            per_service,
        )
        self.failures = counter("failures", "Failed ticks by exception type", ["table", "service", "reason"])
        self.instant_owned_elsewhere = counter(
            "instant_owned_elsewhere",
            "Ticks skipped because another executor owns the pending instant (its heartbeat is alive)",
            per_service,
        )
        self.outside_window = series(
            "outside_window",
            "1 while the service's last tick waited for a maintenance window (no execution started), else 0",
            per_service,
        )
        self.lock_wait_seconds = Histogram(
            PREFIX + "lock_wait_seconds", "Time waited for the table lock", table,
            buckets=LOCK_BUCKETS, registry=registry,
        )  # fmt: skip
        self.lock_hold_seconds = Histogram(
            PREFIX + "lock_hold_seconds", "Time the table lock was held", table,
            buckets=LOCK_BUCKETS, registry=registry,
        )  # fmt: skip
        self.last_success_timestamp_seconds = series(
            "last_success_timestamp_seconds", "Unix time of the last successful tick", per_service
        )
        self.config_reload_success = gauge(
            "config_reload_success", "1 if the last config (re)load succeeded, else 0"
        )
        self.config_reload_failures = counter("config_reload_failures", "Config reloads that failed")
        self.tables_quarantined = gauge("tables_quarantined", "Tables quarantined after repeated failures")
        # One series per refused (table, service), its reason the refusal's kind
        # (`TableServicesRefusedError.reason`); none while the service is served.
        self.table_refused = series(
            "table_refused", "1 while the service refuses the table, with the refusal's kind",
            ["table", "service", "reason"],
        )  # fmt: skip
        self._refused: dict[tuple[str, str], str] = {}
        self._refused_lock = threading.Lock()
        # The live base files (latest slices) as the last tick measured them; small: below Hudi's
        # `hoodie.clustering.plan.strategy.small.file.limit`. What clustering buys shows here.
        self.small_files = series("small_files", "Live base files below the small-file limit", table)
        self.small_file_bytes = series(
            "small_file_bytes", "Bytes of live base files below the small-file limit", table
        )
        self.mean_file_size_bytes = series("mean_file_size_bytes", "Mean size of the live base files", table)
        # Replicas (`daemon.cluster`): which tables this replica holds, and how the division is going.
        self.table_held = series(
            "table_held", "1 while this replica holds the table (runs its services), else 0", table
        )
        self.cluster_members = gauge("cluster_members", "Live replicas registered in ZooKeeper")
        self.cluster_rebalances = counter(
            "cluster_rebalances", "Divisions of the tables among the replicas this replica completed"
        )
        self.cluster_seconds_since_last_rebalance = gauge(
            "cluster_seconds_since_last_rebalance", "Seconds since this replica last completed a division"
        )
        self.table_list_mismatch = gauge(
            "table_list_mismatch", "1 while a replica serves a different table list than this one, else 0"
        )
        self.scheduler_lag_seconds = gauge(
            "scheduler_lag_seconds", "Delay between a job's scheduled time and its submission"
        )

    def set_refused(self, table: str, service: str, reason: str | None) -> None:
        """`table_refused{table,service,reason}` = 1 while `service` refuses `table` for `reason` (the
        refusal's kind); no series for the pair when `reason` is None."""
        with self._refused_lock:
            previous = self._refused.pop((table, service), None)
            if previous is not None and previous != reason:
                self.table_refused.remove(table, service, previous)
            if reason is not None:
                self.table_refused.labels(table, service, reason).set(1)
                self._refused[(table, service)] = reason

    def forget_table(self, table: str) -> None:
        """Drop a removed table's series so dashboards do not show stale values."""
        for service in ("clustering", "cleaning", "compaction", "archival", "repair"):
            self.set_refused(table, service, None)
        for metric in (
            self.commits_since_last_clustering, self.commits_since_last_clean, self.pending_clustering_plans,
            self.oldest_pending_clustering_age_seconds, self.rewritten_files, self.rewritten_bytes,
            self.rewritten_records, self.clustering_plans_purged,
            self.deleted_files, self.deleted_bytes, self.pending_clean_plans, self.pending_compactions,
            self.active_timeline_instants, self.archived_instants, self.orphans_moved,
            self.lock_wait_seconds, self.lock_hold_seconds, self.table_held,
            self.small_files, self.small_file_bytes, self.mean_file_size_bytes,
        ):  # fmt: skip
            with contextlib.suppress(KeyError):
                metric.remove(table)
        for labels in self.blocked_seconds.label_sets():
            if labels[0] == table:
                self.blocked_seconds.remove(*labels)
        for service in ("clustering", "cleaning", "compaction", "archival", "repair"):
            for per_service in (
                self.run_duration_seconds, self.last_success_timestamp_seconds, self.instant_owned_elsewhere,
                self.last_completed_instant_timestamp_seconds, self.outside_window,
            ):  # fmt: skip
                with contextlib.suppress(KeyError):
                    per_service.remove(table, service)


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a hung scrape must not block shutdown


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)


# An extra route: the request path and query string → (status line, content type, body), None when it
# is not served.
Route = Callable[[str, str], tuple[str, str, bytes] | None]


class MetricsServer:
    """`/metrics`, `/healthz` (the process answers) and `/readyz` (`ready()` is true) on host:port,
    then what `routes` serves (the daemon's status page and API)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        ready: Callable[[], bool],
        routes: Route | None = None,
    ) -> None:
        self._metrics_app = make_wsgi_app(registry)
        self._ready = ready
        self._routes = routes
        try:
            self._server = make_server(
                host, port, self._app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
            )
        except OSError as exc:
            raise ConfigError(f"daemon.metrics: cannot listen on {host}:{port}: {exc}") from exc
        self._server.timeout = 0.5
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._server.server_address[0]!s}:{self.port}"

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="metrics-http", daemon=True
        )
        self._thread.start()
        log.info("metrics, health, status on %s (/metrics, /healthz, /readyz, /, /api/v1/tables)", self.url)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._thread is not None:
            self._server.shutdown()  # returns once serve_forever's poll loop has exited
            self._thread.join(timeout_s)
            self._thread = None
        self._server.server_close()

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
        if path == "/healthz":
            return _text(start_response, "200 OK", "ok\n")
        if path == "/readyz":
            if self._ready():
                return _text(start_response, "200 OK", "ready\n")
            return _text(start_response, "503 Service Unavailable", "not ready\n")
        if self._routes is not None and environ.get("REQUEST_METHOD", "GET") in ("GET", "HEAD"):
            try:
                served = self._routes(path, environ.get("QUERY_STRING", ""))
            except Exception:
                log.exception("http %s failed", path)
                return _text(start_response, "500 Internal Server Error", "internal error\n")
            if served is not None:
                status, content_type, data = served
                start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data)))])
                return [data]
        return _text(start_response, "404 Not Found", "not found\n")


def _text(start_response: StartResponse, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    )
    return [data]
