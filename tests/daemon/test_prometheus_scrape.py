"""A real Prometheus (Debian's package) scrapes the running daemon; its HTTP API returns our metrics.

The daemon serves one fast fixture table that its first cleaning tick cleans (three versions of one
file group, one commit retained: one file deleted), with its metrics endpoint on an ephemeral port.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.grafana import evaluable, expressions, load_dashboard
from tests.support.prometheus import PrometheusServer, http_get

pytestmark = pytest.mark.slow

JOB = "hudi-table-service"
TABLE = "orders"


def _config_text(base: Path) -> str:
    return f"""
daemon:
  poll_interval_seconds: 0.2
  shutdown_grace_seconds: 10
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
defaults:
  hoodie.cleaner.commits.retained: 1
tables:
  - name: {TABLE}
    base_path: {base}
    clustering: {{enabled: false}}
"""


@pytest.fixture
def table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / TABLE, name=TABLE)
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    return t


@pytest.fixture
def daemon(table: FixtureTable) -> Iterator[Daemon]:
    daemon = Daemon(parse_daemon_config(_config_text(table.base)))
    daemon.start()
    try:
        yield daemon
    finally:
        assert daemon.stop(grace_seconds=10)


@pytest.fixture
def prometheus(tmp_path: Path, daemon: Daemon) -> Iterator[PrometheusServer]:
    assert daemon.http is not None and daemon.http.port != 0
    server = PrometheusServer(tmp_path / "prometheus", JOB, [f"127.0.0.1:{daemon.http.port}"])
    try:
        server.start()
        yield server
    finally:
        server.close()


def test_prometheus_scrapes_daemon_metrics(
    daemon: Daemon, prometheus: PrometheusServer, table: FixtureTable
) -> None:
    assert daemon.http is not None
    target = f"127.0.0.1:{daemon.http.port}"
    assert http_get(daemon.http.url + "/healthz") == (200, "ok\n")
    assert http_get(daemon.http.url + "/readyz") == (200, "ready\n")

    [up] = prometheus.wait_for(f'up{{job="{JOB}"}} == 1')
    assert up.labels["instance"] == target and up.value == 1

    # The first tick cleans the table; a later scrape carries the deletion.
    [deleted] = prometheus.wait_for(f'hudi_table_service_deleted_files_total{{table="{TABLE}"}} > 0')
    assert deleted.value == 1 and deleted.labels["job"] == JOB
    assert len(list((table.base / "a").glob("*.parquet"))) == 2
    [deleted_bytes] = prometheus.wait_for(f'hudi_table_service_deleted_bytes_total{{table="{TABLE}"}} > 0')
    assert deleted_bytes.value > 0

    [reload_ok] = prometheus.wait_for(f'hudi_table_service_config_reload_success{{job="{JOB}"}} == 1')
    assert reload_ok.labels["instance"] == target
    [lag] = prometheus.wait_for(f'hudi_table_service_scheduler_lag_seconds{{job="{JOB}"}}')
    assert lag.value >= 0
    [success] = prometheus.wait_for(
        f'hudi_table_service_last_success_timestamp_seconds{{table="{TABLE}", service="cleaning"}}'
    )
    assert success.value > 0
    assert not prometheus.query(f'hudi_table_service_failures_total{{table="{TABLE}"}} > 0')


def test_prometheus_evaluates_every_dashboard_expression(
    daemon: Daemon, prometheus: PrometheusServer
) -> None:
    """Each PromQL expression of deploy/grafana's dashboard runs on a real Prometheus scraping the
    daemon (no parse or evaluation error); those over the cleaning figures return this table."""
    prometheus.wait_for(f'hudi_table_service_deleted_files_total{{table="{TABLE}"}} > 0')
    prometheus.wait_for(f'hudi_table_service_pending_clean_plans{{table="{TABLE}"}} == 0')
    # The rate() ranges need two scrapes of the counters after the clean.
    time.sleep(2.5)
    answered = {}
    for expr in expressions(load_dashboard()):
        samples = prometheus.query(evaluable(expr))  # raises naming the query when Prometheus refuses it
        answered[expr] = {s.labels.get("table") for s in samples}
    cleaning = [e for e in answered if "deleted_files" in e or "commits_since_last_clean" in e]
    assert cleaning and all(TABLE in answered[e] for e in cleaning), answered
    last_clean = [e for e in answered if "last_completed_instant_timestamp_seconds" in e]
    assert last_clean and all(TABLE in answered[e] for e in last_clean), answered
