"""ZooKeeper stopped and restarted in the middle of a clustering run (issue 5).

Between the plan and the commit a clustering writes its files for minutes; ZooKeeper may go away
meanwhile. Whether it is down when the commit asks for the lock, or goes down while the commit holds
it, no replacecommit may complete: a Java writer may hold the lock by then. The attempt stays
inflight, readers see the table as before, and once ZooKeeper is back the attempt is rolled back and
the plan executed again; Hudi and hudi-rs then read every record exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.clustering import execute_clustering, orchestrator, schedule_clustering
from service.config.daemon import parse_daemon_config
from service.config.hoodie import HoodieConfig
from service.daemon import Daemon
from service.errors import LockError
from service.executor import SparkExecutor
from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import ZookeeperTableLock
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.lock.zk_helpers import zk_settings
from tests.support import hudi_tables as ht
from tests.support.clustering_checks import (
    GatedExecutor,
    assert_readers_see,
    clustering_state,
    live_outputs,
    rollbacks_of,
)
from tests.support.histories import HudiHistory
from tests.support.waiting import wait_until
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.zk, pytest.mark.slow]


def test_zookeeper_lost_while_the_commit_holds_the_lock_aborts_it_then_the_retry_commits(
    history_many_commits: HudiHistory,
    spark: Any,
    private_zookeeper: ZookeeperServer,
    new_pool: Callable[[], KazooClientPool],
    lock_base_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = history_many_commits.base_path
    table = HudiTable.open(str(base))
    # A 1 s heartbeat expiry window: the aborted attempt is abandoned (taken over) 1 s after it ends.
    config = HoodieConfig.from_mapping({"hoodie.client.heartbeat.interval_in_ms": 500}, table.name)
    settings = zk_settings(private_zookeeper, lock_base_path, lock_key=table.name)
    lock = ZookeeperTableLock(settings, table.name, pool=new_pool())
    run_group = SparkExecutor(session=spark).run_group
    instant = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC).instant_time
    assert instant is not None
    re_check = orchestrator.check_no_conflict

    def re_check_then_lose_zookeeper(*args: Any) -> None:
        re_check(*args)  # under the lock, the last step before the completed instant is written
        assert lock.is_held
        private_zookeeper.stop()
        wait_until(lambda: not lock.is_held, 30, "the lock client noticing ZooKeeper is gone")

    monkeypatch.setattr(orchestrator, "check_no_conflict", re_check_then_lose_zookeeper)
    with pytest.raises(LockError, match="suspended or lost while held"):
        execute_clustering(table, instant, config, run_group, lock, zone=UTC)
    monkeypatch.undo()

    # No commit without the lock: the attempt stays inflight with its files, which readers ignore.
    assert clustering_state(table, instant) is State.INFLIGHT
    assert not (base / ".hoodie" / f"{instant}.replacecommit").exists()
    attempt = sorted(base.glob(f"*/*_{instant}.parquet"))
    assert attempt
    assert_readers_see(history_many_commits, spark)

    private_zookeeper.start()
    time.sleep(1.1)  # past the expiry window of the aborted attempt's inflight file
    result = execute_clustering(table, instant, config, run_group, lock, zone=UTC)
    assert result.committed
    assert clustering_state(table, instant) is State.COMPLETED
    assert rollbacks_of(table, instant)  # the aborted attempt was rolled back first...
    assert not any(p.exists() for p in attempt)  # ...deleting its files
    on_disk, live = live_outputs(base, instant)
    assert on_disk == live and on_disk
    assert_readers_see(history_many_commits, spark)


def test_daemon_zookeeper_down_while_groups_execute_commits_nothing_then_recovers(
    history_many_commits: HudiHistory, spark: Any, private_zookeeper: ZookeeperServer, lock_base_path: str
) -> None:
    history = history_many_commits
    base = history.base_path
    config = parse_daemon_config(
        f"""
daemon:
  poll_interval_seconds: 0.5
  shutdown_grace_seconds: 120
  config_watch_seconds: 0
  metrics: {{port: 0}}
  failures: {{backoff_initial_seconds: 0.5, backoff_max_seconds: 2, quarantine_after: 1000}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{private_zookeeper.connect_string}"
      hoodie.write.lock.zookeeper.base_path: "{lock_base_path}"
      hoodie.write.lock.zookeeper.lock_key: {history.table_name}
      hoodie.write.lock.zookeeper.connection_timeout_ms: 2000
      hoodie.write.lock.wait_time_ms: 3000
defaults:
  hoodie.clustering.async.max.commits: 1
  hoodie.client.heartbeat.interval_in_ms: 500  # the aborted attempt is taken over 1 s after it ends
tables:
  - name: {history.table_name}
    base_path: {base}
    timezone: UTC  # Hudi wrote a LOCAL timeline in the JVM's zone, UTC on this machine
    cleaning: {{enabled: false}}
"""
    )
    registry = CollectorRegistry()
    executor = GatedExecutor(spark)
    daemon = Daemon(config, registry=registry, executor=executor, serve_http=False)
    runtime = daemon.runtimes[history.table_name]
    table = HudiTable.open(str(base))
    daemon.start()
    try:
        assert executor.entered.wait(120), "the daemon never started executing a clustering"
        [instant] = [i.timestamp for i in table.load_timeline() if i.action is Action.REPLACE_COMMIT]
        assert clustering_state(table, instant) is State.INFLIGHT
        private_zookeeper.stop()
        executor.gate.set()  # the groups finish while ZooKeeper is down; then the commit needs the lock

        def lock_failures() -> float:
            labels = {"table": history.table_name, "service": "clustering", "reason": "LockError"}
            return registry.get_sample_value("hudi_table_service_failures_total", labels) or 0.0

        wait_until(lambda: lock_failures() >= 2, 120, "clustering ticks failing for want of the lock")
        time.sleep(2)
        # No commit without the lock, and readers see the table as before.
        assert clustering_state(table, instant) is State.INFLIGHT
        assert not ht.instants_with_action(base, "replacecommit")
        assert "LockError" in runtime.errors[-1].error
        assert_readers_see(history, spark)

        restarted_at = time.time()
        private_zookeeper.start()

        def committed() -> bool:
            return clustering_state(table, instant) is State.COMPLETED

        wait_until(committed, 180, "the clustering after the restart")
    finally:
        assert daemon.stop(grace_seconds=120)

    assert (base / ".hoodie" / f"{instant}.replacecommit").stat().st_mtime >= restarted_at
    assert rollbacks_of(table, instant)  # the attempt cut off from the lock was rolled back
    on_disk, live = live_outputs(base, instant)
    assert on_disk == live and on_disk  # and none of its files outlived it
    assert_readers_see(history, spark)
