"""Replicas dividing the tables through a real ZooKeeper (issue 16): three in-process daemons, each
with its own ZooKeeper sessions, over 30 fixture tables.

Every change of a replica's share is recorded (`on_held`, called before the partition locks are
released and after they are acquired); the recorder fails the test the moment a table has two
holders.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from prometheus_client import CollectorRegistry

from service.config.daemon import DaemonConfig, parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.zookeeper import ZookeeperServer

pytestmark = pytest.mark.zk

TABLES = [f"t{i:02d}" for i in range(30)]
SESSION_TIMEOUT_S = 4.0
SETTLE_S = 1.0
MEMBER_POLL_S = 2.0  # `membership._MEMBER_POLL_S`: the loop's own poll
SLACK_S = 6.0  # a loaded 2-core machine


class HoldRecorder:
    """Who holds which table, from every replica's `on_held`; any overlap is a violation."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.holders: dict[str, set[str]] = {}
        self.acquisitions: list[tuple[float, str, frozenset[str]]] = []
        self.violations: list[str] = []

    def __call__(self, replica: str, share: frozenset[str]) -> None:
        with self._guard:
            self.acquisitions.append((time.monotonic(), replica, share))
            for table, holders in self.holders.items():
                if table not in share:
                    holders.discard(replica)
            for table in share:
                holders = self.holders.setdefault(table, set())
                if holders - {replica}:
                    self.violations.append(f"{table} acquired by {replica} while held by {sorted(holders)}")
                holders.add(replica)

    def shares(self) -> dict[str, set[str]]:
        with self._guard:
            return {table: set(holders) for table, holders in self.holders.items() if holders}


# Ticks are run by hand, unless a test turns cleaning on (`cluster(cleaning=True)`).
SERVICES_OFF = "clustering: {enabled: false}, cleaning: {enabled: false}"
CLEANING_ONLY = "clustering: {enabled: false}, cleaning: {enabled: true}"
POLL_S = 3600.0  # so a tick seen is one the scheduler ran for a reason other than its interval


def _config(
    base: Path, zk: ZookeeperServer, path: str, replica: str, tables: list[str], services: str = SERVICES_OFF
) -> DaemonConfig:
    entries = "\n".join(f"  - {{name: {t}, base_path: '{base / t}', {services}}}" for t in tables)
    return parse_daemon_config(
        f"""
daemon:
  poll_interval_seconds: {POLL_S}
  config_watch_seconds: 0
  shutdown_grace_seconds: 5
  cluster:
    enabled: true
    path: {path}
    replica_id: {replica}
    settle_seconds: {SETTLE_S}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk.connect_string}"
      hoodie.write.lock.zookeeper.base_path: /hudi/locks/{uuid.uuid4().hex[:8]}
      hoodie.write.lock.zookeeper.session_timeout_ms: {int(SESSION_TIMEOUT_S * 1000)}
      hoodie.write.lock.wait_time_ms: 2000
tables:
{entries}
"""
    )


Cluster = tuple[Callable[[str], Daemon], HoldRecorder, Callable[[str, list[str]], DaemonConfig]]


def _cluster(base: Path, zk: ZookeeperServer, services: str = SERVICES_OFF) -> Iterator[Cluster]:
    """Starts replicas (`start(replica_id)`) sharing one recorder; stops them all at teardown."""
    for name in TABLES:
        FixtureTable(base / name, name=name).commit(ts(1), [FileSpec("a", fid(1))])
    path = f"/hudi-table-service/{uuid.uuid4().hex[:12]}/members"
    recorder = HoldRecorder()
    daemons: list[Daemon] = []

    def config(replica: str, tables: list[str]) -> DaemonConfig:
        return _config(base, zk, path, replica, tables, services)

    def start(replica: str) -> Daemon:
        daemon = Daemon(
            config(replica, TABLES), registry=CollectorRegistry(), serve_http=False, on_held=recorder
        )
        daemons.append(daemon)
        daemon.start()
        return daemon

    try:
        yield start, recorder, config
    finally:
        for daemon in daemons:
            daemon.stop(grace_seconds=5)
    assert recorder.violations == []


@pytest.fixture
def cluster(tmp_path: Path, zookeeper_server: ZookeeperServer) -> Iterator[Cluster]:
    yield from _cluster(tmp_path, zookeeper_server)


@pytest.fixture
def cleaning_cluster(tmp_path: Path, zookeeper_server: ZookeeperServer) -> Iterator[Cluster]:
    yield from _cluster(tmp_path, zookeeper_server, CLEANING_ONLY)


@pytest.fixture
def cluster_on_private_zookeeper(tmp_path: Path, private_zookeeper: ZookeeperServer) -> Iterator[Cluster]:
    yield from _cluster(tmp_path, private_zookeeper)


def _wait(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not within {timeout_s:g} s: {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def _divided(replicas: list[Daemon], tables: list[str]) -> bool:
    """Every table held by exactly one of `replicas`, each of them settled (ready)."""
    shares = [d.membership.held for d in replicas if d.membership is not None]
    held = [t for share in shares for t in share]
    return sorted(held) == sorted(tables) and all(d.is_ready() for d in replicas)


def _sample(daemon: Daemon, name: str, labels: dict[str, str] | None = None) -> float:
    value = daemon.metrics.registry.get_sample_value(f"hudi_table_service_{name}", labels or {})
    assert value is not None, name
    return value


def test_three_replicas_divide_30_tables_survive_a_death_and_rebalance_on_restart(
    cluster: Cluster,
) -> None:
    start, recorder, _ = cluster
    replicas = [start(f"r{i}") for i in range(3)]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided among 3 replicas")
    assert sorted(len(d.membership.held) for d in replicas if d.membership) == [10, 10, 10]
    for table in TABLES:  # the gauge is 1 on exactly the holder
        assert sorted(_sample(d, "table_held", {"table": table}) for d in replicas) == [0.0, 0.0, 1.0], table
    for daemon in replicas:
        assert _sample(daemon, "cluster_members") == 3
        assert _sample(daemon, "cluster_rebalances_total") >= 1
        assert _sample(daemon, "table_list_mismatch") == 0

    # Only the holder touches a table: the others' ticks are NOT_HELD, without a failure or an open.
    table = "t00"
    outcomes = []
    for daemon in replicas:
        runtime = daemon.runtimes[table]
        outcome = daemon.run_iteration(runtime, TableService.CLEANING, daemon.clock())
        outcomes.append(outcome)
        if outcome is Outcome.NOT_HELD:
            assert runtime.table is None and not runtime.errors
    assert sorted(outcomes) == sorted([Outcome.DONE, Outcome.NOT_HELD, Outcome.NOT_HELD])

    # r2 dies: its ZooKeeper session ends without it releasing anything.
    dead = replicas[2]
    assert dead.membership is not None
    dead_share = dead.membership.held
    kept = {d.membership.replica_id: d.membership.held for d in replicas[:2] if d.membership}
    died_at = time.monotonic()
    dead.membership._client.stop()
    survivors = replicas[:2]
    took = _wait(
        lambda: _divided(survivors, TABLES),
        SESSION_TIMEOUT_S + SETTLE_S + MEMBER_POLL_S + SLACK_S,
        "r2's tables taken over by r0 and r1",
    )
    # r2's tables moved, and hardly any of the survivors' own (`assignment.divide`: one, here, of 20):
    # kazoo's partitioner let go of all 20 and took them again.
    let_go = {
        table
        for at, replica, share in recorder.acquisitions
        if at >= died_at and replica in kept
        for table in kept[replica] - share
    }
    assert len(let_go) <= 2, sorted(let_go)
    assert not dead.is_ready() and not any(dead.membership.holds(t) for t in dead_share)
    assert sorted(len(d.membership.held) for d in survivors if d.membership) == [15, 15], took
    for daemon in survivors:
        assert _sample(daemon, "cluster_members") == 2

    # r2 comes back (a new process, same replica id): the tables are divided in three again.
    dead.stop(grace_seconds=5)
    replicas = [*survivors, start("r2")]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided among 3 replicas again")
    assert sorted(len(d.membership.held) for d in replicas if d.membership) == [10, 10, 10]

    assert recorder.violations == []
    assert {t for t, holders in recorder.shares().items() if len(holders) == 1} == set(TABLES)
    # Every table changed hands at least once (r2's share twice), all recorded.
    assert len(recorder.acquisitions) >= 3 + 2 + 3


def _ticked(daemon: Daemon, table: str) -> bool:
    labels = {"table": table, "service": str(TableService.CLEANING)}
    return (
        daemon.metrics.registry.get_sample_value("hudi_table_service_last_success_timestamp_seconds", labels)
        is not None
    )


def test_tables_taken_over_tick_at_once_not_at_their_next_poll(cleaning_cluster: Cluster) -> None:
    """The poll interval is an hour: each table's first tick ran before its replica held it (not
    held), so only the takeover itself can have ticked the dead replica's tables on the survivor."""
    start, recorder, _ = cleaning_cluster
    replicas = [start(f"r{i}") for i in range(2)]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided between 2 replicas")
    _wait(
        lambda: all(_ticked(d, t) for d in replicas if d.membership for t in d.membership.held),
        SLACK_S,
        "each replica's share ticked once held",
    )
    survivor, dead = replicas
    assert dead.membership is not None
    dead_share = dead.membership.held
    assert dead_share and not any(_ticked(survivor, t) for t in dead_share)
    dead.membership._client.stop()
    _wait(
        lambda: all(_ticked(survivor, t) for t in dead_share),
        SESSION_TIMEOUT_S + SETTLE_S + MEMBER_POLL_S + SLACK_S,
        "the dead replica's tables ticked by the survivor",
    )
    assert recorder.violations == []


def test_a_reload_changing_the_table_list_rebalances_and_a_mismatch_is_reported(
    cluster: Cluster,
) -> None:
    start, recorder, config = cluster
    replicas = [start(f"r{i}") for i in range(3)]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided among 3 replicas")

    def mismatch(daemon: Daemon) -> float:
        return _sample(daemon, "table_list_mismatch")

    fewer = TABLES[:24]
    replicas[0].apply_config(config("r0", fewer))  # only r0 reloaded so far
    _wait(lambda: all(mismatch(d) == 1 for d in replicas), 30, "the mismatch seen by every replica")
    for daemon, replica in zip(replicas[1:], ("r1", "r2"), strict=True):
        daemon.apply_config(config(replica, fewer))
    _wait(lambda: all(mismatch(d) == 0 for d in replicas), 30, "the mismatch cleared")
    _wait(lambda: _divided(replicas, fewer), 60, "24 tables divided among 3 replicas")
    assert sorted(len(d.membership.held) for d in replicas if d.membership) == [8, 8, 8]
    assert recorder.violations == []


def test_zookeeper_restarted_under_three_replicas_stops_new_work_then_divides_again(
    cluster_on_private_zookeeper: Cluster, private_zookeeper: ZookeeperServer
) -> None:
    start, recorder, _ = cluster_on_private_zookeeper
    replicas = [start(f"r{i}") for i in range(3)]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided among 3 replicas")

    private_zookeeper.stop()  # shorter than the session timeout: the sessions survive
    _wait(
        lambda: not any(d.membership and d.membership.holds(t) for d in replicas for t in TABLES),
        SESSION_TIMEOUT_S,
        "no replica starting work while ZooKeeper is away",
    )
    assert not any(d.is_ready() for d in replicas)
    time.sleep(1)
    private_zookeeper.start()
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided again after ZooKeeper came back")
    assert sorted(len(d.membership.held) for d in replicas if d.membership) == [10, 10, 10]
    assert recorder.violations == []


def test_a_second_replica_with_a_live_replicas_id_waits_for_it_to_end(cluster: Cluster) -> None:
    start, recorder, _ = cluster
    first = start("same")
    _wait(lambda: _divided([first], TABLES), 60, "the first replica holding every table")
    second = start("same")  # e.g. a fixed replica_id given to two pods by mistake
    time.sleep(SETTLE_S + MEMBER_POLL_S + 1)
    assert second.membership is not None and second.membership.held == frozenset()
    assert not second.is_ready() and _divided([first], TABLES)

    first.stop(grace_seconds=5)  # its session ends: the id is free
    _wait(lambda: _divided([second], TABLES), 30, "the second replica holding every table")
    assert recorder.violations == []


def test_a_replica_of_an_older_release_keeps_the_tables_until_it_is_gone(
    cluster: Cluster, zookeeper_server: ZookeeperServer
) -> None:
    """Older releases divided the tables with kazoo's `SetPartitioner` (`<path>/party`): a new replica
    beside one must not divide them again, or both would serve the same tables."""
    start, recorder, config = cluster
    path = config("old", TABLES).daemon.cluster.path
    old = KazooClient(hosts=zookeeper_server.connect_string)
    old.start()
    try:
        old.create(f"{path}/party/0a1b__party__old", ephemeral=True, makepath=True)
        new = start("new")
        time.sleep(SETTLE_S + MEMBER_POLL_S + 1)
        assert new.membership is not None and new.membership.held == frozenset()
        assert not new.is_ready()
    finally:
        old.stop()
        old.close()
    _wait(lambda: _divided([new], TABLES), SETTLE_S + MEMBER_POLL_S + SLACK_S, "every table, once it is gone")
    assert recorder.violations == []


def test_a_member_node_deleted_under_a_live_session_is_registered_again(
    cluster: Cluster, zookeeper_server: ZookeeperServer
) -> None:
    """An operator (or a cleanup script) deleting `<path>/replicas/<id>`: the others count the replica
    out and divide without it; it must not stay out, holding nothing, for the rest of its session."""
    start, recorder, config = cluster
    replicas = [start(f"r{i}") for i in range(2)]
    _wait(lambda: _divided(replicas, TABLES), 60, "30 tables divided between 2 replicas")
    path = config("r0", TABLES).daemon.cluster.path
    node = f"{path}/replicas/r1"
    admin = KazooClient(hosts=zookeeper_server.connect_string)
    admin.start()
    try:
        admin.delete(node)
        _wait(lambda: admin.exists(node) is not None, MEMBER_POLL_S + SLACK_S, "r1 registered again")
    finally:
        admin.stop()
        admin.close()

    def halves() -> bool:
        shares = sorted(len(d.membership.held) for d in replicas if d.membership)
        return _divided(replicas, TABLES) and shares == [15, 15]

    _wait(halves, SETTLE_S + MEMBER_POLL_S + SLACK_S, "divided in two halves again")
    assert recorder.violations == []
