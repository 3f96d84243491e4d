"""A replica SIGKILLed in the middle of a clustering on a table Hudi's Spark writer wrote (issue 16).

Two replicas as processes on a real ZooKeeper, one table: the division gives it to `r0` (of two
members sharing one table, the first in sorted order has the room: `assignment.divide`), `r1` holds
nothing. `r0` plans a clustering
and writes a group's files, then hangs before its commit (`tests.support.hang_after_groups`) and is
SIGKILLed. Once its session expired `r1` holds the table; once the dead attempt's heartbeat expired it
rolls the attempt back and executes the plan again. The plan completes exactly once, the dead
attempt's files are gone, and Hudi's Spark reader and hudi-rs read every record exactly once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support.clustering_checks import assert_readers_see, clustering_state, live_outputs, rollbacks_of
from tests.support.histories import HudiHistory
from tests.support.ports import free_port
from tests.support.replicas import ReplicaProcess
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.zk, pytest.mark.slow]

SESSION_TIMEOUT_S = 4.0


def _replica(
    root: Path, replica_id: str, base: Path, zk: ZookeeperServer, members: str, locks: str,
    wrapper: list[str] | None,
) -> ReplicaProcess:  # fmt: skip
    config, port = root / f"{replica_id}.yaml", free_port()
    config.write_text(
        f"""
daemon:
  poll_interval_seconds: 0.5
  shutdown_grace_seconds: 5
  config_watch_seconds: 0
  spark: {{master: "local[1]"}}
  metrics: {{host: 127.0.0.1, port: {port}}}
  cluster: {{enabled: true, path: {members}, replica_id: {replica_id}, settle_seconds: 1}}
  failures: {{backoff_initial_seconds: 0.5, backoff_max_seconds: 2, quarantine_after: 1000}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk.connect_string}"
      hoodie.write.lock.zookeeper.base_path: {locks}
      hoodie.write.lock.zookeeper.session_timeout_ms: {int(SESSION_TIMEOUT_S * 1000)}
defaults:
  hoodie.clustering.async.max.commits: 1
  hoodie.clustering.plan.strategy.sort.columns: qty,price
  hoodie.client.heartbeat.interval_in_ms: 1000  # the killed attempt is abandoned 2 s after its last beat
tables:
  - {{name: {base.name}, base_path: '{base}', timezone: UTC, cleaning: {{enabled: false}}}}
"""
    )
    return ReplicaProcess(replica_id, config, port, wrapper)


@pytest.fixture
def two_replicas(
    tmp_path: Path, history_many_commits: HudiHistory, zookeeper_server: ZookeeperServer
) -> Iterator[tuple[ReplicaProcess, ReplicaProcess, Path]]:
    base = history_many_commits.base_path
    members = f"/hudi-table-service/{uuid.uuid4().hex[:12]}/members"
    locks = f"/hudi/locks/{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "r0-group-written"
    hang = ["tests.support.hang_after_groups", str(marker)]
    doomed = _replica(tmp_path, "r0", base, zookeeper_server, members, locks, hang)
    survivor = _replica(tmp_path, "r1", base, zookeeper_server, members, locks, None)
    try:
        yield doomed, survivor, marker
    finally:
        doomed.kill()
        survivor.terminate()


def _wait(condition: Callable[[], bool], timeout_s: float, what: str, *replicas: ReplicaProcess) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        for replica in replicas:
            assert replica.alive, f"{replica.replica_id} ended; its log:\n{replica.log_tail()}"
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {r.replica_id}:\n{r.log_tail()}" for r in replicas)
            raise AssertionError(f"{what}: not within {timeout_s} s\n{logs}")
        time.sleep(0.1)


def test_a_replica_killed_mid_clustering_is_taken_over_and_the_plan_completes_once(
    two_replicas: tuple[ReplicaProcess, ReplicaProcess, Path], history_many_commits: HudiHistory, spark: Any
) -> None:
    doomed, survivor, marker = two_replicas
    history = history_many_commits
    base = history.base_path
    table = HudiTable.open(str(base))
    doomed.start()
    survivor.start()
    _wait(lambda: doomed.held() == {base.name} and survivor.held() == set(), 120, "r0 holding the table")
    _wait(marker.exists, 240, "r0 writing a clustering group's files", doomed, survivor)

    [instant] = [i.timestamp for i in table.load_timeline() if i.action is Action.REPLACE_COMMIT]
    assert clustering_state(table, instant) is State.INFLIGHT
    attempt = sorted(base.glob(f"*/*_{instant}.parquet"))
    assert attempt, "the group wrote no file"
    doomed.kill()
    killed_at = time.monotonic()
    assert_readers_see(history, spark)  # an uncommitted attempt changes nothing readers see

    taken_over = "r1 holding the table after r0's session expired"
    _wait(lambda: survivor.held() == {base.name}, 60, taken_over, survivor)
    assert time.monotonic() - killed_at >= SESSION_TIMEOUT_S / 2  # r0's partition lock lived on until then
    done = lambda: clustering_state(table, instant) is State.COMPLETED  # noqa: E731
    _wait(done, 300, "r1 completing the plan", survivor)
    survivor.terminate()

    timeline = table.load_timeline()
    replaces = [i for i in timeline if i.action is Action.REPLACE_COMMIT]
    assert [(i.timestamp, i.state) for i in replaces] == [(instant, State.COMPLETED)]  # one plan, done once
    assert len(rollbacks_of(table, instant)) == 1  # the killed attempt, rolled back before the re-run
    assert not any(p.exists() for p in attempt)  # its files deleted by that rollback...
    on_disk, live = live_outputs(base, instant)
    assert on_disk == live and on_disk  # ...so every file of the instant on storage is a committed one
    assert [i.file_name for i in timeline.pending()] == []  # nothing left half done
    assert_readers_see(history, spark)
