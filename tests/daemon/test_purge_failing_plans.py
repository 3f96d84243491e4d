"""A plan of ours whose execution keeps failing is purged, so writers are not blocked forever."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.clustering.attempts import SCHEDULER_KEY, failed_attempts
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.errors import ConfigError
from service.executor import SparkExecutor
from service.executor.clustering_job import GroupJob
from service.status import render_text, table_status
from service.table import codecs
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from strategies.clustering.trigger import pending_clustering_instants
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)


class _FailingExecutor(SparkExecutor):
    """Every clustering group fails, as the issue's groups did; no Spark session is ever started."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run_group(self, job: GroupJob) -> list[BaseFileWriteResult]:
        self.calls += 1
        raise RuntimeError(f"group {job.group_index} of {job.instant_time} failed")


def _daemon(base: Path, registry: CollectorRegistry, purge_after: int | None = None) -> Daemon:
    purge = f", purge_after: {purge_after}" if purge_after is not None else ""
    text = f"""
daemon:
  poll_interval_seconds: 0.05
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
  failures: {{backoff_initial_seconds: 0, backoff_max_seconds: 0, quarantine_after: 100{purge}}}
defaults:
  hoodie.clustering.async.max.commits: 1
tables:
  - name: t
    base_path: {base}
    clustering: {{enabled: true}}
    cleaning: {{enabled: false}}
"""
    return Daemon(
        parse_daemon_config(text), registry=registry, clock=lambda: NOW, executor=_FailingExecutor(),
        serve_http=False,
    )  # fmt: skip


def _small_files(t: FixtureTable) -> None:
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(i))])


def _pending(base: Path) -> list[str]:
    table = HudiTable.open(str(base))
    return [i.timestamp for i in pending_clustering_instants(table.load_timeline(), table.facts_reader)]


def _tick(daemon: Daemon, n: int) -> Outcome:
    return daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW + timedelta(seconds=n))


def test_our_plan_is_purged_after_purge_after_failed_executions(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _small_files(t)
    registry = CollectorRegistry()
    daemon = _daemon(t.base, registry)
    assert daemon.config.daemon.failures.purge_after == 3  # the default

    assert _tick(daemon, 1) is Outcome.FAILED  # scheduled our plan, its execution failed
    [plan] = _pending(t.base)
    assert (t.base / ".hoodie" / f"{plan}.replacecommit.requested").exists()  # kept for a retry
    assert _tick(daemon, 2) is Outcome.FAILED
    table = HudiTable.open(str(t.base))
    assert failed_attempts(table, table.load_timeline(), plan) == 2
    status = table_status(table)
    assert [(p["timestamp"], p["failed_attempts"]) for p in status["pending_clustering"]] == [(plan, 2)]
    assert f"{plan} REQUESTED: 3 file groups, 2 failed attempts" in render_text(status)
    purged = "hudi_table_service_clustering_plans_purged_total"
    assert (registry.get_sample_value(purged, {"table": "t"}) or 0) == 0

    assert _tick(daemon, 3) is Outcome.FAILED  # the third failure purges the plan at once
    assert _pending(t.base) == []
    assert not (t.base / ".hoodie" / f"{plan}.replacecommit.requested").exists()
    assert registry.get_sample_value(purged, {"table": "t"}) == 1
    # Writers may update the file groups again: none is in a pending clustering any more.
    view = HudiTable.open(str(t.base)).load_view()
    assert not view.facts.pending_clustering
    assert daemon.executor.calls == 3  # type: ignore[attr-defined]


def test_a_plan_of_hudi_writers_is_never_purged(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _small_files(t)
    t.pending_clustering(ts(10), [("a", fid(1)), ("a", fid(2))])  # scheduled by "Java": no mark
    registry = CollectorRegistry()
    daemon = _daemon(t.base, registry, purge_after=1)
    for n in range(1, 4):
        assert _tick(daemon, n) is Outcome.FAILED
    assert _pending(t.base) == [ts(10)]
    table = HudiTable.open(str(t.base))
    assert table_status(table)["pending_clustering"][0]["failed_attempts"] == 3
    assert (
        registry.get_sample_value("hudi_table_service_clustering_plans_purged_total", {"table": "t"}) is None
    )


def test_our_plans_carry_the_mark(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _small_files(t)
    _tick(_daemon(t.base, CollectorRegistry(), purge_after=5), 1)
    [plan] = _pending(t.base)
    table = HudiTable.open(str(t.base))
    requested = table.facts_reader.requested_plan(
        Instant(plan, Action.REPLACE_COMMIT, State.REQUESTED), codecs.RequestedReplaceMetadata
    )
    assert requested is not None and requested.extra_metadata == {SCHEDULER_KEY: "hudi-table-service"}


@pytest.mark.parametrize("value", [0, -1])
def test_purge_after_must_be_at_least_one(tmp_path: Path, value: int) -> None:
    with pytest.raises(ConfigError, match="purge_after"):
        _daemon(tmp_path, CollectorRegistry(), purge_after=value)
