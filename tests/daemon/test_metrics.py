"""Metrics definitions and the HTTP endpoint (/metrics, /healthz, /readyz) over real HTTP."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from service.errors import ConfigError
from service.metrics import MetricsServer, SeriesGauge, ServiceMetrics


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def served(registry: CollectorRegistry) -> Iterator[tuple[MetricsServer, threading.Event]]:
    ready = threading.Event()
    server = MetricsServer(registry, "127.0.0.1", 0, ready.is_set).start()
    try:
        yield server, ready
    finally:
        server.stop()


def test_metrics_names_and_values(registry: CollectorRegistry) -> None:
    metrics = ServiceMetrics(registry)
    metrics.deleted_files.labels("t1").inc(4)
    metrics.deleted_bytes.labels("t1").inc(4096)
    metrics.failures.labels("t1", "cleaning", "CorruptTableError").inc()
    metrics.run_duration_seconds.labels("t1", "cleaning").observe(0.3)
    metrics.commits_since_last_clean.labels("t1").set(3)
    metrics.config_reload_success.set(1)
    metrics.config_reload_failures.inc()
    metrics.rewritten_records.labels("t1").inc(1000)
    metrics.pending_clean_plans.labels("t1").set(2)
    metrics.last_completed_instant_timestamp_seconds.labels("t1", "clustering").set(1.7e9)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, labels)

    assert value("deleted_files_total", table="t1") == 4
    assert value("deleted_bytes_total", table="t1") == 4096
    assert value("failures_total", table="t1", service="cleaning", reason="CorruptTableError") == 1
    assert value("run_duration_seconds_count", table="t1", service="cleaning") == 1
    assert value("run_duration_seconds_bucket", table="t1", service="cleaning", le="0.5") == 1
    assert value("run_duration_seconds_bucket", table="t1", service="cleaning", le="0.1") == 0
    assert value("commits_since_last_clean", table="t1") == 3
    assert value("config_reload_success") == 1 and value("config_reload_failures_total") == 1
    assert value("rewritten_records_total", table="t1") == 1000
    assert value("pending_clean_plans", table="t1") == 2
    assert value("last_completed_instant_timestamp_seconds", table="t1", service="clustering") == 1.7e9

    metrics.forget_table("t1")
    assert value("deleted_files_total", table="t1") is None
    assert value("rewritten_records_total", table="t1") is None
    assert value("pending_clean_plans", table="t1") is None
    assert value("last_completed_instant_timestamp_seconds", table="t1", service="clustering") is None
    assert value("run_duration_seconds_count", table="t1", service="cleaning") is None


def test_table_refused_keeps_one_series_per_refused_service_and_none_once_served(
    registry: CollectorRegistry,
) -> None:
    metrics = ServiceMetrics(registry)

    def series() -> list[tuple[dict[str, str], float]]:
        [family] = [m for m in registry.collect() if m.name == "hudi_table_service_table_refused"]
        return sorted(
            ((s.labels, s.value) for s in family.samples), key=lambda x: (x[0]["table"], x[0]["service"])
        )

    metrics.set_refused("t1", "cleaning", "timezone")
    metrics.set_refused("t1", "clustering", "timezone")
    metrics.set_refused("t1", "clustering", "merge")  # the same service refused for another reason
    metrics.set_refused("t2", "compaction", "compaction_strategy")
    assert series() == [
        ({"table": "t1", "service": "cleaning", "reason": "timezone"}, 1.0),
        ({"table": "t1", "service": "clustering", "reason": "merge"}, 1.0),
        ({"table": "t2", "service": "compaction", "reason": "compaction_strategy"}, 1.0),
    ]
    metrics.set_refused("t1", "cleaning", None)  # served again
    metrics.forget_table("t2")
    assert series() == [({"table": "t1", "service": "clustering", "reason": "merge"}, 1.0)]


def test_metrics_defined_once_per_registry(registry: CollectorRegistry) -> None:
    ServiceMetrics(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        ServiceMetrics(registry)
    ServiceMetrics(CollectorRegistry())  # another registry is independent


def test_metrics_http_routes(
    registry: CollectorRegistry, served: tuple[MetricsServer, threading.Event]
) -> None:
    server, ready = served
    metrics = ServiceMetrics(registry)
    metrics.tables_quarantined.set(2)
    metrics.rewritten_files.labels("orders").inc(3)

    status, body = _get(server.url + "/metrics")
    assert status == 200
    assert "hudi_table_service_tables_quarantined 2.0" in body
    assert 'hudi_table_service_rewritten_files_total{table="orders"} 3.0' in body
    assert "# TYPE hudi_table_service_lock_wait_seconds histogram" in body
    assert _get(server.url + "/healthz") == (200, "ok\n")
    assert _get(server.url + "/readyz")[0] == 503
    ready.set()
    assert _get(server.url + "/readyz") == (200, "ready\n")
    assert _get(server.url + "/nope")[0] == 404


def test_metrics_server_stops_in_bounded_time(registry: CollectorRegistry) -> None:
    server = MetricsServer(registry, "127.0.0.1", 0, lambda: True).start()
    url = server.url
    assert _get(url + "/healthz")[0] == 200
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)


def test_metrics_server_port_in_use_is_a_config_error(
    registry: CollectorRegistry, served: tuple[MetricsServer, threading.Event]
) -> None:
    server, _ = served
    with pytest.raises(ConfigError, match=rf"daemon.metrics: cannot listen on 127.0.0.1:{server.port}"):
        MetricsServer(registry, "127.0.0.1", server.port, lambda: True)


def test_a_series_gauge_reads_as_prometheus_clients_labelled_gauge() -> None:
    """`SeriesGauge` keeps a dict entry per series instead of a `Gauge` object: what a scrape reads
    (names, help, labels, values, removals) is the same as from prometheus-client's own."""
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    mine = SeriesGauge("x_seconds", "Help with \\ and\nnewline", ["table", "service"], ours)
    reference = Gauge("x_seconds", "Help with \\ and\nnewline", ["table", "service"], registry=theirs)
    for gauge in (mine, reference):
        gauge.labels("t1", "cleaning").set(3)
        gauge.labels("t1", "clustering").inc(2.5)
        gauge.labels("t2", "cleaning").dec()
        gauge.labels('t"3', "cleaning").set(float("inf"))
        gauge.labels("t4", "cleaning").set(1)
        gauge.remove("t4", "cleaning")
    assert generate_latest(ours) == generate_latest(theirs)
    with pytest.raises(KeyError):
        mine.remove("t4", "cleaning")
    with pytest.raises(ValueError, match="x_seconds"):
        mine.labels("t1")
    assert set(mine.label_sets()) == {
        ("t1", "cleaning"),
        ("t1", "clustering"),
        ("t2", "cleaning"),
        ('t"3', "cleaning"),
    }
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        SeriesGauge("x_seconds", "again", ["table"], ours)
