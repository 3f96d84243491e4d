"""ZooKeeper restarted under three replicas serving two tables Hudi's Spark writer wrote (issue 16).

Three in-process daemons (each its own ZooKeeper sessions, one shared SparkSession) divide two
tables; their clusterings write their groups while ZooKeeper is stopped, so each commit finds no
lock. `LockWitness` asks ZooKeeper, at every instant any replica completes, whether the committing
thread held the table's lock then: none may complete without it. Once ZooKeeper is back the tables
are held again and each clustering completes (its cut-off attempt rolled back and re-run); Hudi's
Spark reader and hudi-rs read every record exactly once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support.clustering_checks import GatedExecutor, assert_readers_see, clustering_state, live_outputs
from tests.support.histories import HistoryCache, HudiHistory
from tests.support.lock_witness import LockWitness
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.zk, pytest.mark.slow]

SESSION_TIMEOUT_S = 6.0


def _wait(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(0.1)


@pytest.fixture
def two_tables(hudi_histories: HistoryCache, tmp_path: Path) -> list[HudiHistory]:
    source = hudi_histories.get("many_commits")
    return [source.copy_to(tmp_path / name) for name in ("orders_a", "orders_b")]


@pytest.fixture
def replicas(
    two_tables: list[HudiHistory], spark: Any, private_zookeeper: ZookeeperServer
) -> Iterator[tuple[list[Daemon], GatedExecutor]]:
    members = f"/hudi-table-service/{uuid.uuid4().hex[:12]}/members"
    off = "cleaning: {enabled: false}"
    tables = "\n".join(
        f"  - {{name: {h.base_path.name}, base_path: '{h.base_path}', timezone: UTC, {off}}}"
        for h in two_tables
    )
    executor = GatedExecutor(spark)
    daemons = []
    for replica in ("r0", "r1", "r2"):
        config = parse_daemon_config(
            f"""
daemon:
  poll_interval_seconds: 0.5
  shutdown_grace_seconds: 120
  config_watch_seconds: 0
  metrics: {{port: 0}}
  cluster: {{enabled: true, path: {members}, replica_id: {replica}, settle_seconds: 1}}
  failures: {{backoff_initial_seconds: 0.5, backoff_max_seconds: 2, quarantine_after: 1000}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{private_zookeeper.connect_string}"
      hoodie.write.lock.zookeeper.base_path: /hudi/locks
      hoodie.write.lock.zookeeper.session_timeout_ms: {int(SESSION_TIMEOUT_S * 1000)}
      hoodie.write.lock.zookeeper.connection_timeout_ms: 2000
      hoodie.write.lock.wait_time_ms: 3000
defaults:
  hoodie.clustering.async.max.commits: 1
  hoodie.client.heartbeat.interval_in_ms: 500  # a cut-off attempt is taken over 1 s after it ends
tables:
{tables}
"""
        )
        daemons.append(Daemon(config, registry=CollectorRegistry(), executor=executor, serve_http=False))
    try:
        yield daemons, executor
    finally:
        executor.gate.set()
        for daemon in daemons:
            daemon.stop(grace_seconds=120)


def test_zookeeper_restarted_under_three_replicas_no_commit_without_the_lock_then_service_resumes(
    replicas: tuple[list[Daemon], GatedExecutor],
    two_tables: list[HudiHistory],
    private_zookeeper: ZookeeperServer,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemons, executor = replicas
    witness = LockWitness(private_zookeeper.connect_string)
    witness.install(monkeypatch, [str(h.base_path) for h in two_tables])
    names = sorted(h.base_path.name for h in two_tables)

    def divided() -> bool:
        held = sorted(t for d in daemons if d.membership is not None for t in d.membership.held)
        return held == names and all(d.is_ready() for d in daemons)

    for daemon in daemons:
        daemon.start()
    _wait(divided, 60, "two tables divided among three replicas")
    tables = [HudiTable.open(str(h.base_path)) for h in two_tables]

    def executing() -> list[str]:
        """The clustering of each table, once all of them are inflight (their groups at the gate)."""
        found = [
            i for t in tables for i in t.load_timeline() if i.action is Action.REPLACE_COMMIT and i.is_pending
        ]
        inflight = [i.timestamp for i in found if i.state is State.INFLIGHT]
        return inflight if len(inflight) == len(tables) else []

    _wait(lambda: bool(executing()), 240, "a clustering executing on each table")
    instants = executing()
    private_zookeeper.stop()
    executor.gate.set()  # the groups finish while ZooKeeper is down; then each commit needs the lock
    _wait(lambda: not any(d.is_ready() for d in daemons), SESSION_TIMEOUT_S, "replicas not ready")
    time.sleep(SESSION_TIMEOUT_S / 2)  # a restart, not an outage: the sessions survive it
    assert all(clustering_state(t, i) is State.INFLIGHT for t, i in zip(tables, instants, strict=True))
    restarted_at = time.time()
    private_zookeeper.start()

    _wait(divided, 60, "two tables divided again after the restart")
    for table, instant in zip(tables, instants, strict=True):
        _wait(lambda: clustering_state(table, instant) is State.COMPLETED, 240, f"{instant} completed")  # noqa: B023
    for daemon in daemons:
        assert daemon.stop(grace_seconds=120)

    # Every instant any replica completed was completed under its ZooKeeper lock, proven by ZooKeeper.
    assert witness.commits and witness.unheld() == []
    completed = {(Path(c.base).name, c.instant) for c in witness.commits}
    for history, instant in zip(two_tables, instants, strict=True):
        assert (history.base_path.name, f"{instant}.replacecommit") in completed
    assert all(c.at >= restarted_at for c in witness.commits if c.instant.endswith(".replacecommit"))
    for history, table, instant in zip(two_tables, tables, instants, strict=True):
        replaces = [i for i in table.load_timeline() if i.action is Action.REPLACE_COMMIT]
        assert [(i.timestamp, i.state) for i in replaces] == [(instant, State.COMPLETED)]
        on_disk, live = live_outputs(history.base_path, instant)
        assert on_disk == live and on_disk
        assert_readers_see(history, spark)
